// Attention under an arbitrary mask: the tree attention of Medusa and SpecInfer (000 §8.2: "把
// tree 里所有节点拍平输入 target 一次 forward，每节点的 attention mask 只看其祖先"; Miao et al.,
// SpecInfer, arXiv:2305.09781, §4; Cai et al., Medusa, arXiv:2401.10774, §2.1.2).
//
// grouped_query_attention (attention/gqa.hpp) knows one mask, the lower-right causal one. Here the
// caller says, for each new query, which of the S keys it reads. Numerics: a query reads its
// allowed keys in increasing key index and sums exactly as grouped_query_attention does (scores,
// running max, exp, denominator, weighted values, all in key order), so a query that is allowed
// keys 0 .. m − 1 gets bit-identical output from both functions; a query allowed any other set
// gets the output grouped_query_attention would give on a sequence made of exactly those keys.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace kvlab {

/// Which keys each query may read: [rows = queries, cols = keys], row-major, 1 = allowed.
struct AttentionMask {
  int rows = 0;
  int cols = 0;
  std::vector<std::uint8_t> allowed;  ///< rows * cols entries

  AttentionMask() = default;
  /// A mask of rows × cols, every entry `value`. Throws std::invalid_argument for negative sizes.
  AttentionMask(int rows, int cols, bool value = false);
  bool operator()(int i, int j) const {
    return allowed[static_cast<std::size_t>(i) * static_cast<std::size_t>(cols) +
                   static_cast<std::size_t>(j)] != 0;
  }
  void set(int i, int j, bool value) {
    allowed[static_cast<std::size_t>(i) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(j)] =
        value ? 1 : 0;
  }
};

/// Attention of T queries over S keys under `mask` ([T, S]); GQA grouping as in
/// grouped_query_attention (query head h reads K/V head h / (n_head / n_kv_head)).
///   q: [T, n_head * head_dim];  k, v: [S, n_kv_head * head_dim]  ->  [T, n_head * head_dim].
/// Scores are scaled by 1/sqrt(head_dim). Throws std::invalid_argument when shapes disagree, the
/// mask is not [T, S], or a query is allowed no key (its softmax would be 0/0).
template <class T>
Mat<T> masked_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v,
                        int n_head, int n_kv_head, int head_dim, const AttentionMask& mask);

}  // namespace kvlab
