// Grouped-query attention with a KV cache, and rotary position embeddings.
//
// One function covers MHA (n_kv_head = n_head), GQA (1 < n_kv_head < n_head) and MQA
// (n_kv_head = 1): query head h reads K/V head h / (n_head / n_kv_head), the repeat_interleave
// grouping of 004 §3.4 (GQA paper, Ainslie et al. 2023). The K/V heads are never copied.
//
// Numerics: every output row is computed in an order that depends only on that row's own keys,
// never on how many other queries or keys are in the call (design.md "Numerics"). So the K/V of
// an old position, and a query's output, are bit-identical whether the sequence is processed at
// once, in chunks or one token at a time.
#pragma once

#include "core/tensor.hpp"

namespace kvlab {

/// Attention of T new queries over S cached positions.
///   q: [T, n_head * head_dim]       queries of the new tokens, at positions q_pos0 .. q_pos0 + T - 1
///   k, v: [S, n_kv_head * head_dim] every cached position 0 .. S - 1 (S >= q_pos0 + T)
/// causal: query i sees keys 0 .. q_pos0 + i — the lower-right-aligned mask of 004 §3.3, which is
/// the plain lower triangle for prefill (q_pos0 = 0, T = S), one full row for decode (T = 1) and
/// torch.ones(T, S).tril(S - T) for a chunk. Not causal: every query sees all S keys.
/// Scores are scaled by 1/sqrt(head_dim). Returns [T, n_head * head_dim].
/// Throws std::invalid_argument when shapes disagree or n_kv_head does not divide n_head.
template <class T>
Mat<T> grouped_query_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v,
                               int n_head, int n_kv_head, int head_dim, int q_pos0, bool causal);

/// Rotary position embedding (RoFormer, Su et al. 2021; "rotate-half" pairing as in LLaMA/HF):
/// in each head, the pair (x[i], x[i + head_dim/2]) of token t is rotated by the angle
/// (pos0 + t) * theta^(-2i / head_dim). x: [T, n_heads * head_dim], modified in place.
/// Angles are computed in double, whatever T is. Throws std::invalid_argument on odd head_dim.
template <class T>
void apply_rope(Mat<T>& x, int n_heads, int head_dim, int pos0, double theta);

}  // namespace kvlab
