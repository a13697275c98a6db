// KV caches behind one interface (004 §1.2–1.3, §3.1).
//
// Layout, per layer: K and V are [length, n_kv_head * head_dim] row-major (row t = position t,
// head-major within the row). A "position" below is one token's K and V in one layer.
//
//   ConcatCache    every append allocates [length + T_new, width] and copies the old rows into it,
//                  as `torch.cat([cache, k_new])` does (000 §6.1): O(T^2) positions moved.
//   PreallocCache  one allocation of [max_len, width] per layer; appends write in place and
//                  reads return views of the first `length` rows (004 §3.1 KVCache): O(T).
//
// Both count what they move, so the 004 §3.1 claim (8,390,656 vs 4,096 positions over 4096 tokens)
// is measured on the real data structures.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace kvlab {

/// What a cache has moved since it was made. Units: positions (one token's K and V in one layer).
struct CacheStats {
  std::uint64_t positions_written = 0;  ///< new positions stored by append
  std::uint64_t positions_copied = 0;   ///< old positions re-copied into a new buffer (concat)
  std::uint64_t allocations = 0;        ///< buffer allocations (one per layer per K/V pair)
  /// Everything moved: written + copied (what 004 §3.1 calls "搬运").
  std::uint64_t positions_moved() const { return positions_written + positions_copied; }
};

/// Interface of every KV cache. T is the element type (double or float).
template <class T>
class KVCache {
 public:
  virtual ~KVCache() = default;

  /// Appends T_new positions to `layer`: k_new and v_new are [T_new, width]. Throws
  /// std::invalid_argument on a wrong width or layer, std::length_error past capacity.
  virtual void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) = 0;
  /// Cached keys of `layer`: a view [length(layer), width], valid until the next append/truncate.
  virtual ConstMatView<T> keys(int layer) const = 0;
  /// Cached values of `layer`, as keys().
  virtual ConstMatView<T> values(int layer) const = 0;
  /// Positions held by `layer`.
  virtual int length(int layer) const = 0;
  /// Absolute position of row 0 of keys(layer)/values(layer): 0 for a cache that keeps every
  /// position; a rolling sliding-window cache (cache/rolling_cache.hpp) that has dropped the
  /// oldest positions holds first_position .. first_position + length - 1.
  virtual int first_position(int /*layer*/) const { return 0; }
  /// Keeps the first `len` positions of every layer (speculative-decoding rollback, 000 §7.6).
  /// Throws std::invalid_argument when len is negative or above the current length.
  virtual void truncate(int len) = 0;

  int n_layer() const { return n_layer_; }
  int width() const { return width_; }
  const CacheStats& stats() const { return stats_; }

 protected:
  KVCache(int n_layer, int width);
  void check_append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) const;
  void check_layer(int layer) const;

  int n_layer_;
  int width_;
  CacheStats stats_;
};

/// Grows by concatenation: each append allocates a new buffer and copies the old one.
template <class T>
class ConcatCache final : public KVCache<T> {
 public:
  /// n_layer layers of width = n_kv_head * head_dim elements per position.
  ConcatCache(int n_layer, int width);
  void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) override;
  ConstMatView<T> keys(int layer) const override;
  ConstMatView<T> values(int layer) const override;
  int length(int layer) const override;
  void truncate(int len) override;

 private:
  std::vector<Mat<T>> k_, v_;  // per layer [length, width]
};

/// One allocation up to max_len positions per layer; appends write in place.
template <class T>
class PreallocCache final : public KVCache<T> {
 public:
  /// Allocates n_layer x [max_len, width] for K and for V. Throws std::invalid_argument when a
  /// size is not positive.
  PreallocCache(int n_layer, int width, int max_len);
  void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) override;
  ConstMatView<T> keys(int layer) const override;
  ConstMatView<T> values(int layer) const override;
  int length(int layer) const override;
  void truncate(int len) override;
  int capacity() const { return max_len_; }

 private:
  int max_len_;
  std::vector<Mat<T>> k_, v_;  // per layer [max_len, width]
  std::vector<int> len_;       // per layer
};

/// Which cache a model check uses.
enum class CacheKind { concat, prealloc };

/// A new empty cache of the given kind (prealloc sized to max_len).
template <class T>
std::unique_ptr<KVCache<T>> make_cache(CacheKind kind, int n_layer, int width, int max_len);

}  // namespace kvlab
