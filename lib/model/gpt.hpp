// The course's mini-GPT (004 §3; nanoGPT layout): token + learned position embedding (or RoPE),
// pre-LayerNorm blocks of causal grouped-query self-attention and a GELU MLP of width 4*d_model,
// a final LayerNorm and an LM head. Seeded random weights.
//
//   forward(tokens, start_pos, cache)
//     x      = wte[tokens] + wpe[start_pos ..]                  [T, d_model]
//     block: h = LN1(x); q = h Wq + bq [T, n_head*head_dim];  k, v = h Wk + bk, h Wv + bv
//            [T, n_kv_head*head_dim] -> appended to the cache; x += GQA(q, cache) Wo + bo
//            x += GELU(LN2(x) Wfc + bfc) Wproj + bproj
//     logits = LNf(x) Wlm                                        [T, vocab_size]
//
// prefill is forward(prompt, 0, cache); decode is forward({token}, cache_length, cache).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cache/kv_cache.hpp"
#include "core/tensor.hpp"
#include "model/config.hpp"

namespace kvlab {

/// One transformer block's parameters. d = d_model, q_w = n_head*head_dim, kv_w = n_kv_head*head_dim.
template <class T>
struct BlockWeights {
  Vec<T> ln1_gain, ln1_bias;    // [d]
  Mat<T> w_q;                   // [d, q_w]
  Vec<T> b_q;                   // [q_w]
  Mat<T> w_k, w_v;              // [d, kv_w]  (CLA: empty in a layer that reads its group's K/V)
  Vec<T> b_k, b_v;              // [kv_w]
  Mat<T> w_o;                   // [q_w, d]
  Vec<T> b_o;                   // [d]
  Vec<T> ln2_gain, ln2_bias;    // [d]
  Mat<T> w_fc;                  // [d, 4d]
  Vec<T> b_fc;                  // [4d]
  Mat<T> w_proj;                // [4d, d]
  Vec<T> b_proj;                // [d]
};

/// The MLP sublayer of block `b`: x + GELU(LN2(x) W_fc + b_fc) W_proj + b_proj, row by row (every
/// forward of the reference block: MiniGPT::forward, forward_masked, the ragged batch).
/// x: [n, d_model] -> [n, d_model].
template <class T>
Mat<T> mlp_sublayer(const BlockWeights<T>& b, const Mat<T>& x);

/// All parameters of a mini-GPT.
template <class T>
struct GptWeights {
  Mat<T> wte;                   // [vocab_size, d]    token embedding
  Mat<T> wpe;                   // [block_size, d]    learned positions (empty under RoPE)
  std::vector<BlockWeights<T>> blocks;  // n_layer
  Vec<T> lnf_gain, lnf_bias;    // [d]
  Mat<T> w_lm;                  // [d, vocab_size]    LM head (untied)
};

template <class T>
class MiniGPT {
 public:
  /// Validates `config` (InputError names the field) and draws the weights from Rng(seed):
  /// matrices N(0, 0.02^2) (the residual projections Wo, Wproj N(0, (0.02/sqrt(2 n_layer))^2), as
  /// nanoGPT), biases N(0, 0.02^2), LayerNorm gain 1 and bias 0. The draws are made in float64 and
  /// rounded to T, so the f32 and f64 models of one seed are the same model.
  MiniGPT(const ModelConfig& config, std::uint64_t seed);

  /// A model with the given weights (trained, loaded from a file, converted). Validates `config`
  /// and every weight's shape against it (the shapes in BlockWeights/GptWeights above; K/V only
  /// in layers l % cla_share == 0, wpe empty under RoPE); InputError naming the weight, e.g.
  /// "weights: blocks[1].w_q: shape [64, 32], config needs [64, 64]".
  MiniGPT(const ModelConfig& config, GptWeights<T> weights);

  /// Logits [tokens.size(), vocab_size] of tokens at positions start_pos, start_pos + 1, ...;
  /// their K and V are appended to `cache` in every layer.
  /// Throws InputError when a token id is outside [0, vocab_size) or, with learned positions,
  /// start_pos + T exceeds block_size; std::invalid_argument when the cache does not hold
  /// exactly the positions before start_pos (cache.first_position(0) + cache.length(0) !=
  /// start_pos), has dropped positions the attention still needs (any, without a sliding window;
  /// those from start_pos - W + 1 on, with one), or its shape does not match the model
  /// (config.n_kv_layer() layers of width kv_width()).
  /// Sliding window (config.sliding_window = W): query p attends to p - W + 1 .. p, so a
  /// RollingCache of W positions is enough; a cache that keeps everything gives the same logits.
  /// CLA (config.cla_share = s): layer l reads and (if l % s == 0) writes cache layer l / s.
  /// Non-finite activations: a model with a source() (weights from a file) checks each layer's new
  /// K and V, its output and the logits, and throws InputError "SOURCE: the forward gives
  /// non-finite values (WHERE): ..." (require_finite_forward) at the first NaN or ±inf; a seeded
  /// model returns them, and the comparison layer (core/finite.hpp) fails on them.
  Mat<T> forward(std::span<const int> tokens, int start_pos, KVCache<T>& cache) const;

  /// An empty cache shaped for this model (n_kv_layer() layers of width n_kv_head*head_dim).
  std::unique_ptr<KVCache<T>> make_cache(CacheKind kind, int max_len) const;

  const ModelConfig& config() const { return config_; }
  const GptWeights<T>& weights() const { return weights_; }
  /// Mutable access, for tests and weight conversions (e.g. MHA -> GQA mean-pooling).
  GptWeights<T>& weights() { return weights_; }

  /// Where the weights came from, as an error message names it (e.g. "--weights m.safetensors"):
  /// "" for a seeded or converted model. load_gpt sets the file's path; a non-empty source makes
  /// forward() refuse non-finite activations as an input error (the file is the cause).
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

 private:
  ModelConfig config_;
  GptWeights<T> weights_;
  std::string source_;
};

/// Throws InputError "SOURCE: the forward gives non-finite values (WHERE): the weights overflow
/// float64|float32 in the forward (largest |weight| X)" when `x` holds a NaN or ±inf and `model`
/// has a source (weights from a file); does nothing otherwise. WHERE names the activation: `what`
/// ("K", "output", "logits") and, for layer >= 0, the layer ("layer 0 K"). Cost: one pass over x
/// (allFinite), small next to the product that made x; nothing is formatted unless it throws.
template <class T>
void require_finite_forward(const MiniGPT<T>& model, const Mat<T>& x, const char* what, int layer = -1);

}  // namespace kvlab
