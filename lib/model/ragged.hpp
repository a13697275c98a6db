// A ragged batch: requests of different lengths served together (003 Q10, answer 10).
//
// The tokens of R requests of lengths n_1 .. n_R are stacked row-wise into one [Σ n_r, d] matrix
// ("flattened", no padding). A block's per-token pieces (LayerNorm, the linear layers, GELU: the
// MLP sublayer) treat every row alone, so they run once over the flattened rows; attention mixes
// rows, so it runs per request, each over its own rows only (the cu_seqlens / varlen attention of
// FlashAttention and vLLM). Running the sublayers on the flattened rows as if they were one
// sequence lets every token attend to the requests stacked before it. (The MLP sublayer,
// mlp_sublayer, is MiniGPT's own: model/gpt.hpp.)
#pragma once

#include <vector>

#include "core/tensor.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"

namespace kvlab {

/// The attention sublayer of block `b` over ONE sequence at positions 0 .. n − 1 (a prefill):
/// x + GQA(LN1(x) W_q, LN1(x) W_k, LN1(x) W_v) W_o + b_o, causal as c.causal says, RoPE when
/// c.positional is rope. x: [n, d_model] -> [n, d_model].
template <class T>
Mat<T> attention_sublayer(const BlockWeights<T>& b, const ModelConfig& c, const Mat<T>& x);

/// attention_sublayer per request over flattened rows: request r is rows
/// [offset_r, offset_r + lengths[r]). x: [Σ lengths, d_model] -> same shape. Throws
/// std::invalid_argument when the lengths do not sum to x.rows() or one is not positive.
template <class T>
Mat<T> ragged_attention_sublayer(const BlockWeights<T>& b, const ModelConfig& c, const Mat<T>& x,
                                 const std::vector<int>& lengths);

}  // namespace kvlab
