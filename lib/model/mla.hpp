// Multi-head latent attention (MLA; DeepSeek-V2, 000 §4.3–4.4) and a mini-GPT built on it.
//
// One layer, H heads, content width d_h per head, latent d_c, query latent d_q (optional), decoupled
// RoPE width d_r. Row-major, one token per row; weights are [in, out] (y = x W, as linear()):
//
//   c_Q  = h W_DQ                    [T, d_q]   (d_q = q_lora_rank; without it c_Q = h, d_q = D)
//   q_C  = c_Q W_UQ                  [T, H·d_h] content queries, head i in columns i·d_h ..
//   q_R  = RoPE_t(c_Q W_QR)          [T, H·d_r] per-head RoPE queries
//   c_KV = h W_DKV                   [T, d_c]   cached
//   k_R  = RoPE_t(h W_KR)            [T, d_r]   cached, shared by all heads
//   score_i(t, s) = (q_C,i(t)·(c_KV(s) W_UK,i) + q_R,i(t)·k_R(s)) / sqrt(d_h + d_r)
//   out  = concat_i(Σ_s p_i(t, s) c_KV(s) W_UV,i) W_O        [T, D]
//
// Two forward paths over the same weights and the same cache:
//   naive     up-project the whole cache to K_C = C W_UK and V = C W_UV [S, H·d_h] every call;
//   absorbed  W̃_QK,i = W_UQ,i W_UK,iᵀ [d_q, d_c] and W̃_OV,i = W_UV,i W_O,i [d_c, D], precomputed
//             once (000 §4.3.3); scores are (c_Q W̃_QK,i)·c_KV(s) and the output is
//             Σ_i (Σ_s p_i c_KV(s)) W̃_OV,i: K and V are never formed.
// (000 writes W^UK ∈ R^{d_h×d_c} as output × input; kvlab's W_UK [d_c, H·d_h] is its transpose,
// stacked over heads.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/latent_cache.hpp"
#include "core/tensor.hpp"

namespace kvlab {

/// Sizes of an MLA mini-GPT. Defaults: d_c = 4·d_h (DeepSeek-V2's ratio, 000 §4.3.2).
struct MlaConfig {
  int n_layer = 2;
  int d_model = 64;
  int n_head = 8;
  int head_dim = 8;        ///< d_h: content query/key and value width per head
  int kv_lora_rank = 32;   ///< d_c: the cached latent
  int q_lora_rank = 24;    ///< d_q: query latent; 0 = no query compression (c_Q = h)
  int rope_head_dim = 4;   ///< d_r: decoupled RoPE key (shared) and query (per head); even
  int vocab_size = 96;
  double rope_theta = 10000.0;

  /// Throws InputError naming the first invalid field: sizes in [1, 65536] (q_lora_rank may be 0),
  /// rope_head_dim even and in [2, 65536], rope_theta finite and > 1.
  void validate() const;
  int query_dim() const { return q_lora_rank > 0 ? q_lora_rank : d_model; }
  /// Elements cached per token per layer: d_c + d_r (000 §4.4.3).
  int cache_width() const { return kv_lora_rank + rope_head_dim; }
};

/// One layer's MLA weights (shapes: D = d_model, H = n_head).
template <class T>
struct MlaWeights {
  Mat<T> w_dq;   // [D, d_q]        query down-projection (empty without a query latent)
  Mat<T> w_uq;   // [d_q, H·d_h]    content-query up-projection
  Mat<T> w_qr;   // [d_q, H·d_r]    RoPE-query projection
  Mat<T> w_dkv;  // [D, d_c]        KV down-projection (the cached latent)
  Mat<T> w_kr;   // [D, d_r]        RoPE-key projection (cached, shared by heads)
  Mat<T> w_uk;   // [d_c, H·d_h]    key up-projection
  Mat<T> w_uv;   // [d_c, H·d_h]    value up-projection
  Mat<T> w_o;    // [H·d_h, D]      output projection
};

/// The absorbed weights of one layer (000 §4.3.3), per head i.
template <class T>
struct MlaAbsorbed {
  std::vector<Mat<T>> w_qk;  // H × [d_q, d_c]  W_UQ,i W_UK,iᵀ
  std::vector<Mat<T>> w_ov;  // H × [d_c, D]    W_UV,i W_O,i
};

/// W̃_QK,i = W_UQ,i W_UK,iᵀ and W̃_OV,i = W_UV,i W_O,i for every head i.
template <class T>
MlaAbsorbed<T> absorb(const MlaWeights<T>& w, const MlaConfig& c);

enum class MlaPath { naive, absorbed };

/// Multiply-adds (×2 = FLOPs) and elements read by one mla_attention call, counted where the
/// products are made. Softmax, RoPE and scaling are not counted (O(S·H), the same in both paths).
struct MlaCounts {
  std::uint64_t flops = 0;           ///< 2 × multiply-adds
  std::uint64_t weight_elements = 0; ///< weight-matrix elements read
  std::uint64_t cache_elements = 0;  ///< cached elements read (c_KV and k_R rows)
};

/// One MLA layer on h [T, D] at positions start_pos ..: appends c_KV and k_R to `cache` (layer
/// `layer`), attends causally over all cached positions and returns [T, D] (after W_O). `absorbed`
/// is used by MlaPath::absorbed. `counts`, when given, is incremented.
template <class T>
Mat<T> mla_attention(const Mat<T>& h, const MlaWeights<T>& w, const MlaAbsorbed<T>& absorbed, const MlaConfig& c,
                     MlaPath path, int start_pos, LatentCache<T>& cache, int layer, MlaCounts* counts = nullptr);

/// A mini-GPT whose attention is MLA: token embedding (positions only through RoPE), pre-LN blocks
/// of MLA and a GELU MLP of width 4·D, final LayerNorm, LM head. Seeded weights as MiniGPT:
/// N(0, 0.02²), residual projections (W_O, W_proj) N(0, (0.02/sqrt(2L))²), no attention biases.
template <class T>
class MlaGPT {
 public:
  struct Block {
    Vec<T> ln1_gain, ln1_bias, ln2_gain, ln2_bias;  // [D]
    MlaWeights<T> mla;
    Mat<T> w_fc;    // [D, 4D]
    Vec<T> b_fc;    // [4D]
    Mat<T> w_proj;  // [4D, D]
    Vec<T> b_proj;  // [D]
  };

  /// Validates `config` (InputError names the field), draws the weights from Rng(seed) in float64
  /// (rounded to T) and precomputes the absorbed weights of every layer.
  MlaGPT(const MlaConfig& config, std::uint64_t seed);

  /// Logits [T, vocab] of tokens at positions start_pos ..; c_KV and k_R appended to `cache`.
  /// Throws InputError on a token id outside [0, vocab); std::invalid_argument when the cache's
  /// length is not start_pos or its shape does not match.
  Mat<T> forward(std::span<const int> tokens, int start_pos, LatentCache<T>& cache, MlaPath path,
                 MlaCounts* counts = nullptr) const;

  /// An empty cache for this model: n_layer × (d_c + d_r) per position.
  LatentCache<T> make_cache(int max_len) const {
    return LatentCache<T>(config_.n_layer, config_.kv_lora_rank, config_.rope_head_dim, max_len);
  }

  const MlaConfig& config() const { return config_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  /// The absorbed weights per layer; mutable so that tests can substitute broken ones.
  std::vector<MlaAbsorbed<T>>& absorbed() { return absorbed_; }

 private:
  MlaConfig config_;
  Mat<T> wte_;    // [vocab, D]
  std::vector<Block> blocks_;
  Vec<T> lnf_gain_, lnf_bias_;
  Mat<T> w_lm_;   // [D, vocab]
  std::vector<MlaAbsorbed<T>> absorbed_;
};

}  // namespace kvlab
