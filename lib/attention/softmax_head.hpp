// One query head's softmax attention over a list of keys: the loop grouped_query_attention
// (attention/gqa.cpp) and masked_attention (attention/masked.cpp) share, so that a query allowed
// keys 0 .. m − 1 gets bit-identical output from both (the same sums in the same order).
// Internal to lib/attention; the reference that shares no code with it is reference/attention.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "core/tensor.hpp"

namespace kvlab::detail {

/// oh[0 .. head_dim) += Σ_s p_s · v[key(s)], p = softmax over s of scale · qh · k[key(s)], for s in
/// [0, n): scores in key order, the running max subtracted, then exp, the denominator and the
/// weighted values, each in key order.
///   qh: head_dim numbers of the query head; k, v: [S, n_kv_head · head_dim], K/V head g read in place
///   key(s): the row of k and v of the s-th key (increasing in s); n >= 1
///   score: scratch of at least n numbers
template <class T, class Key>
void attend_head(const T* qh, int n, Key key, const ConstMatView<T>& k, const ConstMatView<T>& v, int g, int head_dim,
                 T scale, T* score, T* oh) {
  T max_score = -std::numeric_limits<T>::infinity();
  for (int s = 0; s < n; ++s) {
    const T* ks = k.data() + static_cast<std::ptrdiff_t>(key(s)) * k.cols() + g * head_dim;
    T dot = 0;
    for (int c = 0; c < head_dim; ++c) dot += qh[c] * ks[c];
    score[s] = dot * scale;
    max_score = std::max(max_score, score[s]);
  }
  T denom = 0;
  for (int s = 0; s < n; ++s) {
    score[s] = std::exp(score[s] - max_score);
    denom += score[s];
  }
  for (int s = 0; s < n; ++s) {
    const T w = score[s] / denom;
    const T* vs = v.data() + static_cast<std::ptrdiff_t>(key(s)) * v.cols() + g * head_dim;
    for (int c = 0; c < head_dim; ++c) oh[c] += w * vs[c];
  }
}

}  // namespace kvlab::detail
