#include "attention/linear_attention.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

Vec<double> linear_attention_feature(const Vec<double>& x) {
  Vec<double> f(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) f(i) = x(i) > 0 ? x(i) + 1.0 : std::exp(x(i));
  return f;
}

LinearAttention::LinearAttention(int key_dim, int value_dim, double decay)
    : key_dim_(key_dim), value_dim_(value_dim), decay_(decay) {
  if (key_dim < 1 || key_dim > 4096) throw InputError(fmt::format("key_dim: must be in [1, 4096], got {}", key_dim));
  if (value_dim < 1 || value_dim > 4096)
    throw InputError(fmt::format("value_dim: must be in [1, 4096], got {}", value_dim));
  if (!(decay > 0.0 && decay <= 1.0)) throw InputError(fmt::format("decay: must be in (0, 1], got {}", decay));
  s_ = Mat<double>::Zero(key_dim, value_dim);
  z_ = Vec<double>::Zero(key_dim);
}

Vec<double> LinearAttention::step(const Vec<double>& q, const Vec<double>& k, const Vec<double>& v) {
  if (q.size() != key_dim_ || k.size() != key_dim_ || v.size() != value_dim_)
    throw std::invalid_argument(fmt::format("LinearAttention::step: q, k must have {} and v {} elements, got {}, {}, {}",
                                            key_dim_, value_dim_, q.size(), k.size(), v.size()));
  const Vec<double> fq = linear_attention_feature(q), fk = linear_attention_feature(k);
  std::uint64_t macs = 0;
  // S ← γ S + φ(k) vᵀ ; z ← γ z + φ(k)
  for (int i = 0; i < key_dim_; ++i) {
    for (int j = 0; j < value_dim_; ++j) s_(i, j) = decay_ * s_(i, j) + fk(i) * v(j);
    z_(i) = decay_ * z_(i) + fk(i);
  }
  macs += static_cast<std::uint64_t>(key_dim_) * value_dim_ + key_dim_;
  // y = (φ(q)ᵀ S) / (φ(q)·z)
  Vec<double> y = Vec<double>::Zero(value_dim_);
  double den = 0.0;
  for (int i = 0; i < key_dim_; ++i) {
    for (int j = 0; j < value_dim_; ++j) y(j) += fq(i) * s_(i, j);
    den += fq(i) * z_(i);
  }
  macs += static_cast<std::uint64_t>(key_dim_) * value_dim_ + key_dim_;
  last_macs_ = macs;
  return y / den;
}

std::size_t LinearAttention::state_bytes() const {
  return static_cast<std::size_t>(s_.size() + z_.size()) * sizeof(double);
}

Mat<double> linear_attention_parallel(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v,
                                      double decay) {
  const Eigen::Index T = q.rows();
  if (k.rows() != T || v.rows() != T || k.cols() != q.cols())
    throw std::invalid_argument("linear_attention_parallel: Q, K [T, d_k] and V [T, d_v] must agree");
  Mat<double> fq(T, q.cols()), fk(T, k.cols());
  for (Eigen::Index t = 0; t < T; ++t) {
    fq.row(t) = linear_attention_feature(q.row(t).transpose()).transpose();
    fk.row(t) = linear_attention_feature(k.row(t).transpose()).transpose();
  }
  Mat<double> a = fq * fk.transpose();  // [T, T]
  for (Eigen::Index t = 0; t < T; ++t)
    for (Eigen::Index s = 0; s < T; ++s) a(t, s) = s <= t ? a(t, s) * std::pow(decay, double(t - s)) : 0.0;
  Mat<double> y = a * v;
  const Vec<double> den = a.rowwise().sum();
  for (Eigen::Index t = 0; t < T; ++t) y.row(t) /= den(t);
  return y;
}

}  // namespace kvlab
