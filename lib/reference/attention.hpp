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

/// Multi-head attention, textbook form: head j attends with its own q_j, k_j, v_j (no groups,
/// no shared heads). q is [T, h·d], k and v are [S, h·d]; query i sits at position q_pos0 + i and
/// sees keys 0 .. q_pos0 + i (causal). Scores are scaled by 1/sqrt(d); the softmax subtracts the
/// row maximum. Returns [T, h·d]. Requires q_pos0 + T <= S (not checked: callers size it).
/// Source: Vaswani et al. 2017 §3.2.2; 004 §2.1.
template <class T>
Mat<T> multi_head_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int n_head, int head_dim,
                            int q_pos0) {
  const int n_new = static_cast<int>(q.rows());
  const T scale = T(1) / std::sqrt(T(head_dim));
  Mat<T> out = Mat<T>::Zero(n_new, static_cast<Eigen::Index>(n_head) * head_dim);
  std::vector<T> score(static_cast<std::size_t>(k.rows()));
  for (int i = 0; i < n_new; ++i) {
    const int n_visible = q_pos0 + i + 1;
    for (int j = 0; j < n_head; ++j) {
      T max_score = -std::numeric_limits<T>::infinity();
      for (int s = 0; s < n_visible; ++s) {
        T dot = 0;
        for (int c = 0; c < head_dim; ++c) dot += q(i, j * head_dim + c) * k(s, j * head_dim + c);
        score[s] = dot * scale;
        max_score = std::max(max_score, score[s]);
      }
      T denom = 0;
      for (int s = 0; s < n_visible; ++s) {
        score[s] = std::exp(score[s] - max_score);
        denom += score[s];
      }
      for (int s = 0; s < n_visible; ++s) {
        const T w = score[s] / denom;
        for (int c = 0; c < head_dim; ++c) out(i, j * head_dim + c) += w * v(s, j * head_dim + c);
      }
    }
  }
  return out;
}

}  // namespace kvlab::reference
