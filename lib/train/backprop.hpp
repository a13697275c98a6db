// Manual backward pass of the mini-GPT (lib/model/gpt.hpp; 004 §3, nanoGPT layout) for training:
// a forward over one sequence that keeps every activation, then the gradient of the summed
// cross-entropy through the LM head, final LayerNorm, each block (GELU MLP, grouped-query causal
// attention, LayerNorm) and the token + learned position embeddings. Templated so that the
// gradient check runs in float64 and training in float32.
//
// Per block, with h1 = LN1(x), x' = x + Attn(h1) Wo + bo, x'' = x' + GELU(LN2(x') Wfc + bfc) Wproj + bproj:
//   LayerNorm  y = x̂ g + b, x̂ = (x - μ) r, r = 1/sqrt(σ² + 1e-5):
//              dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ ⊙ x̂)), dx̂ = dy ⊙ g
//   attention  S = q kᵀ/√d_h (causal), P = softmax(S), o = P v:
//              dv += Pᵀ do, dP = do vᵀ, dS = P ⊙ (dP - rowsum(dP ⊙ P)), dq = dS k/√d_h, dk += dSᵀ q/√d_h
//              (a K/V head's gradient sums over the n_head/n_kv_head query heads that read it)
//   GELU       d/du [u Φ(u)] = Φ(u) + u φ(u)
//   loss       L = Σ_t -log softmax(logits_t)[target_t]; dlogits_t = (p_t - onehot) · scale
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"

namespace kvlab::train {

/// One parameter tensor of a GptWeights, as a flat array. name follows Hugging Face GPT-2 naming
/// (transformer.h.{l}.attn.q_proj.weight, ...); decay: AdamW's weight decay applies (matrices and
/// embeddings, not biases or LayerNorm parameters).
template <class T>
struct ParamRef {
  std::string name;
  T* data;
  Eigen::Index size;
  bool decay;
};

/// Every parameter tensor of `w` in a fixed order (wte, wpe, blocks 0..n-1 in BlockWeights field
/// order, lnf, lm_head). The pointers stay valid while `w` is not resized.
template <class T>
std::vector<ParamRef<T>> param_refs(GptWeights<T>& w);

/// A GptWeights of the same shapes as `w`, every entry zero (gradient and optimizer buffers).
template <class T>
GptWeights<T> zeros_like(const GptWeights<T>& w);

/// Total number of scalar parameters of `w`.
template <class T>
std::size_t param_count(const GptWeights<T>& w);

/// Throws InputError naming the field when `c` is outside what the trainer differentiates:
/// learned positions, causal attention, no sliding window, no CLA (cla_share = 1).
void require_trainable(const ModelConfig& c);

/// Logits [T, vocab] of `tokens` at positions 0..T-1 (the MiniGPT forward without a cache, same
/// operations; Eigen's matrix products, so not bit-identical to MiniGPT's fixed-order loops —
/// tests/lib/train/train_test.cpp bounds the difference). Throws InputError for T > block_size or a token
/// outside [0, vocab).
template <class T>
Mat<T> train_forward(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens);

/// Summed cross-entropy (nats) of predicting targets[t] from tokens[0..t], t = 0..T-1, and its
/// gradient times `grad_scale` ADDED to `grad` (same shapes as w). tokens and targets have equal
/// length T <= block_size. Targets outside [0, vocab) throw InputError.
template <class T>
double forward_backward(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens,
                        std::span<const int> targets, T grad_scale, GptWeights<T>& grad);

/// Summed cross-entropy only (no gradient): the validation loss's building block.
template <class T>
double sequence_loss(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens,
                     std::span<const int> targets);

/// Test hook: a deliberately broken backward for the gradient check's own test. When set to a
/// part name ("layernorm", "attention", "gelu", "embedding", "head"), that part's backward is
/// wrong (a factor or a term dropped). Empty (default): correct. Not thread-safe; tests only.
void set_broken_backward_for_test(const std::string& part);

}  // namespace kvlab::train
