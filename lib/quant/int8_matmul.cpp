#include "quant/int8_matmul.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "quant/minifloat.hpp"

namespace kvlab {

namespace {

void require_finite(const Mat<double>& a, const char* name) {
  if (!a.allFinite()) throw std::invalid_argument(fmt::format("int8 matmul: {} has a non-finite entry", name));
}

// absmax codes of one vector (strided), q = round(x / s), s = max|x| / 127. Returns s.
double absmax_quantize(const double* x, Eigen::Index n, Eigen::Index stride, std::int32_t* q) {
  double amax = 0;
  for (Eigen::Index i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i * stride]));
  const double s = amax / 127.0;
  for (Eigen::Index i = 0; i < n; ++i)
    q[i] = s > 0 ? static_cast<std::int32_t>(std::nearbyint(x[i * stride] / s)) : 0;  // ties to even
  return s;
}

}  // namespace

Mat<double> int8_vectorwise_matmul(const Mat<double>& x, const Mat<double>& w) {
  if (x.cols() != w.rows())
    throw std::invalid_argument(fmt::format("int8 matmul: x [{}, {}] and w [{}, {}] do not chain", x.rows(), x.cols(),
                                            w.rows(), w.cols()));
  require_finite(x, "x");
  require_finite(w, "w");
  const Eigen::Index n = x.rows(), d = x.cols(), m = w.cols();
  Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> xq(n, d), wq_t(m, d);  // wq_t: Wq transposed
  Vec<double> sx(n), sw(m);
  for (Eigen::Index i = 0; i < n; ++i) sx(i) = absmax_quantize(x.row(i).data(), d, 1, xq.row(i).data());
  for (Eigen::Index j = 0; j < m; ++j) sw(j) = absmax_quantize(w.data() + j, d, m, wq_t.row(j).data());
  Mat<double> c(n, m);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < m; ++j) {
      std::int64_t acc = 0;  // |acc| <= d · 127² : exact
      for (Eigen::Index k = 0; k < d; ++k) acc += std::int64_t{xq(i, k)} * wq_t(j, k);
      c(i, j) = sx(i) * sw(j) * static_cast<double>(acc);
    }
  return c;
}

Int8Decomposition llm_int8_matmul(const Mat<double>& x, const Mat<double>& w, double threshold) {
  if (!(std::isfinite(threshold) && threshold > 0))
    throw std::invalid_argument("llm_int8_matmul: threshold must be positive and finite");
  if (x.cols() != w.rows())
    throw std::invalid_argument(fmt::format("int8 matmul: x [{}, {}] and w [{}, {}] do not chain", x.rows(), x.cols(),
                                            w.rows(), w.cols()));
  require_finite(x, "x");
  Int8Decomposition out;
  std::vector<int> regular;
  for (Eigen::Index k = 0; k < x.cols(); ++k)
    (x.col(k).cwiseAbs().maxCoeff() >= threshold ? out.outlier_columns : regular).push_back(static_cast<int>(k));
  const auto n_out = static_cast<Eigen::Index>(out.outlier_columns.size());
  const auto n_reg = static_cast<Eigen::Index>(regular.size());
  Mat<double> x_reg(x.rows(), n_reg), w_reg(n_reg, w.cols()), x_out(x.rows(), n_out), w_out(n_out, w.cols());
  for (Eigen::Index k = 0; k < n_reg; ++k) {
    x_reg.col(k) = x.col(regular[static_cast<std::size_t>(k)]);
    w_reg.row(k) = w.row(regular[static_cast<std::size_t>(k)]);
  }
  for (Eigen::Index k = 0; k < n_out; ++k) {  // the outlier part, inputs rounded to fp16
    const int col = out.outlier_columns[static_cast<std::size_t>(k)];
    x_out.col(k) = x.col(col).unaryExpr([](double v) { return minifloat_round(v, MiniFloat::fp16); });
    w_out.row(k) = w.row(col).unaryExpr([](double v) { return minifloat_round(v, MiniFloat::fp16); });
  }
  out.c = n_reg > 0 ? int8_vectorwise_matmul(x_reg, w_reg) : Mat<double>::Zero(x.rows(), w.cols());
  if (n_out > 0) out.c += x_out * w_out;
  return out;
}

}  // namespace kvlab
