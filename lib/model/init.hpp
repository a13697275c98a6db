// Seeded weight initialisation shared by the mini-GPTs (MiniGPT, MlaGPT): draws are made in
// float64 from kvlab::Rng and rounded to T, so the f32 and f64 models of one seed are one model.
#pragma once

#include "core/rng.hpp"
#include "core/tensor.hpp"

namespace kvlab {

/// [rows, cols] with entries N(0, std^2).
template <class T>
Mat<T> random_matrix(Rng& rng, int rows, int cols, double std) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std * rng.normal();
  return m.cast<T>();
}

/// [n] with entries N(0, std^2).
template <class T>
Vec<T> random_vector(Rng& rng, int n, double std) {
  Vec<double> v(n);
  for (Eigen::Index i = 0; i < v.size(); ++i) v(i) = std * rng.normal();
  return v.cast<T>();
}

}  // namespace kvlab
