// The MLA cache (000 §4.3–4.4, DeepSeek-V2): per token and layer only the latent c_KV [d_c] and the
// decoupled RoPE key k_R [d_r], shared by all heads; no per-head K or V.
//
// Layout, per layer, preallocated like PreallocCache: c_KV [max_len, d_c] and k_R [max_len, d_r],
// row t = position t. Counters as the other caches (CacheStats), plus the elements actually written.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/kv_cache.hpp"
#include "core/tensor.hpp"

namespace kvlab {

template <class T>
class LatentCache {
 public:
  /// n_layer × ([max_len, latent_dim] + [max_len, rope_dim]). Throws std::invalid_argument when a
  /// size is not positive (rope_dim may be 0: no decoupled RoPE key).
  LatentCache(int n_layer, int latent_dim, int rope_dim, int max_len);

  /// Appends T_new positions to `layer`: c_kv [T_new, latent_dim], k_rope [T_new, rope_dim].
  /// Throws std::invalid_argument on a wrong shape or layer, std::length_error past capacity.
  void append(int layer, const Mat<T>& c_kv, const Mat<T>& k_rope);
  /// Cached latents of `layer`: a view [length(layer), latent_dim].
  ConstMatView<T> latents(int layer) const;
  /// Cached RoPE keys of `layer`: a view [length(layer), rope_dim].
  ConstMatView<T> rope_keys(int layer) const;
  int length(int layer) const;
  /// Keeps the first `len` positions of every layer.
  void truncate(int len);

  int n_layer() const { return n_layer_; }
  int latent_dim() const { return latent_dim_; }
  int rope_dim() const { return rope_dim_; }
  int capacity() const { return max_len_; }
  const CacheStats& stats() const { return stats_; }
  /// Elements written by append, counted from the matrices it received (c_kv.size() + k_rope.size()).
  std::uint64_t elements_written() const { return elements_written_; }
  /// Elements held now: Σ over layers of length · (latent_dim + rope_dim).
  std::uint64_t elements_held() const;

 private:
  void check_layer(int layer) const;

  int n_layer_, latent_dim_, rope_dim_, max_len_;
  std::vector<Mat<T>> c_, r_;  // per layer [max_len, d_c], [max_len, d_r]
  std::vector<int> len_;
  CacheStats stats_;
  std::uint64_t elements_written_ = 0;
};

}  // namespace kvlab
