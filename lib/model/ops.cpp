#include "model/ops.hpp"

#include <cmath>

#include "core/op_count.hpp"

namespace kvlab {

template <class T>
Mat<T> linear(const Mat<T>& x, const Mat<T>& W, const Vec<T>& b) {
  const Eigen::Index n_in = W.rows(), n_out = W.cols();
  Mat<T> y(x.rows(), n_out);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    T* yt = y.data() + t * n_out;
    for (Eigen::Index j = 0; j < n_out; ++j) yt[j] = b(j);
    for (Eigen::Index i = 0; i < n_in; ++i) {
      const T xi = x(t, i);
      const T* wi = W.data() + i * n_out;
      for (Eigen::Index j = 0; j < n_out; ++j) yt[j] += xi * wi[j];
    }
  }
  if (MacCount* count = active_mac_count())  // the loops above: rows × n_in × n_out
    count->linear += static_cast<std::uint64_t>(x.rows()) * n_in * n_out;
  return y;
}

template <class T>
Mat<T> layer_norm(const Mat<T>& x, const Vec<T>& gain, const Vec<T>& bias) {
  const Eigen::Index C = x.cols();
  Mat<T> y(x.rows(), C);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    T mean = 0;
    for (Eigen::Index c = 0; c < C; ++c) mean += x(t, c);
    mean /= T(C);
    T var = 0;
    for (Eigen::Index c = 0; c < C; ++c) var += (x(t, c) - mean) * (x(t, c) - mean);
    var /= T(C);
    const T inv = T(1) / std::sqrt(var + T(1e-5));
    for (Eigen::Index c = 0; c < C; ++c) y(t, c) = (x(t, c) - mean) * inv * gain(c) + bias(c);
  }
  return y;
}

template <class T>
void gelu_inplace(Mat<T>& x) {
  const T inv_sqrt2 = T(0.70710678118654752440);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    T& e = x.data()[i];
    e = T(0.5) * e * (T(1) + std::erf(e * inv_sqrt2));
  }
}

template Mat<double> linear<double>(const Mat<double>&, const Mat<double>&, const Vec<double>&);
template Mat<float> linear<float>(const Mat<float>&, const Mat<float>&, const Vec<float>&);
template Mat<double> layer_norm<double>(const Mat<double>&, const Vec<double>&, const Vec<double>&);
template Mat<float> layer_norm<float>(const Mat<float>&, const Vec<float>&, const Vec<float>&);
template void gelu_inplace<double>(Mat<double>&);
template void gelu_inplace<float>(Mat<float>&);

}  // namespace kvlab
