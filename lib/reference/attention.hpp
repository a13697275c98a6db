// The float64 oracles the checks compare the library against: plain loops, written once, sharing
// no code with attention/, model/ or cost/ on purpose (a bug there cannot hide in its own
// reference). Templated on the scalar so a float32 run compares like with like; the checks'
// references run at float64 unless the check is about float32.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/tensor.hpp"

namespace kvlab::reference {

/// Grouped-query attention under an arbitrary mask, textbook form: query head j reads K/V head
/// j / (n_head / n_kv_head) (004 §2; n_kv_head = n_head is multi-head attention), and query row i
/// attends to the keys s with visible(i, s), in key order. q is [T, n_head·head_dim], k and v are
/// [S, n_kv_head·head_dim]. Scores are scaled by 1/sqrt(head_dim); the softmax subtracts the row
/// maximum over the visible keys. Returns [T, n_head·head_dim]. Requires n_kv_head dividing
/// n_head and at least one visible key per row (not checked: callers size it).
/// Source: Vaswani et al. 2017 §3.2.2; Ainslie et al. 2023 (GQA); 004 §2.1, §2.7.
template <class T, class Visible>
Mat<T> masked_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int n_head, int n_kv_head, int head_dim,
                        Visible visible) {
  const int n_new = static_cast<int>(q.rows()), n_keys = static_cast<int>(k.rows()), group = n_head / n_kv_head;
  const T scale = T(1) / std::sqrt(T(head_dim));
  Mat<T> out = Mat<T>::Zero(n_new, static_cast<Eigen::Index>(n_head) * head_dim);
  std::vector<T> score(static_cast<std::size_t>(n_keys));
  for (int i = 0; i < n_new; ++i)
    for (int j = 0; j < n_head; ++j) {
      const int g = j / group;
      T max_score = -std::numeric_limits<T>::infinity();
      for (int s = 0; s < n_keys; ++s) {
        if (!visible(i, s)) continue;
        T dot = 0;
        for (int c = 0; c < head_dim; ++c) dot += q(i, j * head_dim + c) * k(s, g * head_dim + c);
        score[s] = dot * scale;
        max_score = std::max(max_score, score[s]);
      }
      T denom = 0;
      for (int s = 0; s < n_keys; ++s)
        if (visible(i, s)) denom += score[s] = std::exp(score[s] - max_score);
      for (int s = 0; s < n_keys; ++s) {
        if (!visible(i, s)) continue;
        const T w = score[s] / denom;
        for (int c = 0; c < head_dim; ++c) out(i, j * head_dim + c) += w * v(s, g * head_dim + c);
      }
    }
  return out;
}

/// Multi-head attention, textbook form: head j attends with its own q_j, k_j, v_j (no groups,
/// no shared heads). q is [T, h·d], k and v are [S, h·d]; query i sits at position q_pos0 + i and
/// sees keys 0 .. q_pos0 + i (causal). Returns [T, h·d]. Requires q_pos0 + T <= S (not checked:
/// callers size it). Source: Vaswani et al. 2017 §3.2.2; 004 §2.1.
template <class T>
Mat<T> multi_head_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int n_head, int head_dim,
                            int q_pos0) {
  return masked_attention(q, k, v, n_head, n_head, head_dim, [q_pos0](int i, int s) { return s <= q_pos0 + i; });
}

}  // namespace kvlab::reference
