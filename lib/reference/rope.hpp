// The RoPE rotation written out as a matrix, the oracle the RoPE checks compare the library's
// apply_rope against (applied_rope_matrix reads the matrix an implementation applies): rotate-half pairs (i, i + d/2), pair i turned by the angle p·θ^(−2i/d).
// Plain loops on std::cos/std::sin/std::pow, sharing no code with attention/ (a bug there cannot
// hide in its own reference).
#pragma once

#include <cmath>

#include "core/tensor.hpp"

namespace kvlab::reference {

/// R_p, the [d, d] rotation RoPE applies to a head vector at position p (a real number, so a
/// relative offset Δ = s − t gives R_Δ): for i < d/2, with a = p·θ^(−2i/d),
///   R(i, i) = R(i + d/2, i + d/2) = cos a,   R(i, i + d/2) = −sin a,   R(i + d/2, i) = sin a,
/// every other entry 0. d must be even (not checked: the callers' options require it); θ > 0 is
/// the base (10000 in Llama). R_tᵀR_s = R_{s−t}. Source: Su et al. 2021 (RoFormer) §3.4.2 in the
/// rotate-half layout of GPT-NeoX/Llama; 000 §4.4.1.
inline Mat<double> rope_matrix(int d, double p, double theta) {
  Mat<double> r = Mat<double>::Zero(d, d);
  const int half = d / 2;
  for (int i = 0; i < half; ++i) {
    const double a = p * std::pow(theta, -2.0 * i / d);
    r(i, i) = r(i + half, i + half) = std::cos(a);
    r(i, i + half) = -std::sin(a);
    r(i + half, i) = std::sin(a);
  }
  return r;
}

/// R_p [d, d] as a RoPE implementation applies it, to compare with rope_matrix: the d unit vectors
/// as the d heads of one row at position p; rotated head j is column j. `rope(x, n_heads,
/// head_dim, pos0, theta)` rotates the rows of x [rows, n_heads·head_dim] in place, row i at
/// position pos0 + i (attention/gqa.hpp's apply_rope<double> and the checks' injected faults).
template <class Rope>
Mat<double> applied_rope_matrix(const Rope& rope, int d, int p, double theta) {
  Mat<double> x = Mat<double>::Zero(1, static_cast<Eigen::Index>(d) * d);
  for (int j = 0; j < d; ++j) x(0, static_cast<Eigen::Index>(j) * d + j) = 1.0;
  rope(x, d, d, p, theta);
  Mat<double> r(d, d);
  for (int j = 0; j < d; ++j) r.col(j) = x.row(0).segment(static_cast<Eigen::Index>(j) * d, d).transpose();
  return r;
}

/// qᵀR_Δk, the RoPE score of a query and a key Δ positions apart, by its closed form
/// Σ_i cos(a_i)(q_i k_i + q_{i+d/2} k_{i+d/2}) + sin(a_i)(q_{i+d/2} k_i − q_i k_{i+d/2}),
/// a_i = Δ·θ^(−2i/d), summed over i in order. q and k have the same even length d.
/// Source: 000 §4.4.1 ((R_t q)·(R_s k) = qᵀR_{s−t}k).
inline double rope_relative_score(const Vec<double>& q, const Vec<double>& k, double delta, double theta) {
  const int d = static_cast<int>(q.size()), half = d / 2;
  double sum = 0;
  for (int i = 0; i < half; ++i) {
    const double a = delta * std::pow(theta, -2.0 * i / d);
    sum += std::cos(a) * (q(i) * k(i) + q(i + half) * k(i + half)) +
           std::sin(a) * (q(i + half) * k(i) - q(i) * k(i + half));
  }
  return sum;
}

}  // namespace kvlab::reference
