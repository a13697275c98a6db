// Sliding-window attention (Mistral 7B; 004 §2.7, 003 part 2): the query at absolute position p
// sees only the keys at absolute positions p - W + 1 .. p (W keys, itself included).
#pragma once

#include "core/tensor.hpp"

namespace kvlab {

/// Windowed causal grouped-query attention of T new queries.
///   q: [T, n_head * head_dim]        queries at absolute positions q_pos0 .. q_pos0 + T - 1
///   k, v: [S, n_kv_head * head_dim]  keys/values at absolute positions k_pos0 .. k_pos0 + S - 1
///                                    (a rolling cache's first_position is k_pos0)
///   window: W >= 1; query p sees the rows whose position is in [max(k_pos0, p - W + 1), p].
/// Every query needs its own key: k_pos0 <= q_pos0 and q_pos0 + T <= k_pos0 + S. Each row is
/// grouped_query_attention over its visible keys, so the sums run in the same order whether the
/// keys come from a full cache or a rolling one. Returns [T, n_head * head_dim].
/// Throws std::invalid_argument on inconsistent shapes or positions, window < 1.
template <class T>
Mat<T> sliding_window_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v, int n_head,
                                int n_kv_head, int head_dim, int q_pos0, int k_pos0, int window);

}  // namespace kvlab
