// NaN-aware reductions for comparing model outputs.
//
// A check's verdict compares one measured number with an expectation (report/result.hpp), and
// Expectation::holds() fails a measured value that is not finite. That only helps if the number
// still carries the NaN: std::max(0.0, NaN) is 0.0, Eigen's plain maxCoeff() may skip a NaN, and
// an argmax over NaN logits picks token 0 on both sides of a comparison, so a model whose forward
// overflowed would compare "equal" to itself. Every reduction here propagates NaN instead: a
// difference of two tensors is NaN when either holds a NaN (or an infinity where the other holds
// the same infinity: inf − inf), and argmax refuses non-finite logits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include <Eigen/Core>

namespace kvlab {

/// A value that had to be finite was not (NaN or ±inf): a forward that overflowed, or a bug. The
/// CLI reports it as an internal error (exit 3) when no input error was raised before it.
class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The larger of a and b, NaN when either is NaN (std::max(0.0, NaN) is 0.0, std::max(NaN, 0.0) NaN).
inline double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (a < b ? b : a);
}

/// The smaller of a and b, NaN when either is NaN.
inline double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (b < a ? b : a);
}

/// sum / count, NaN when count is 0: a rate over nothing (no verified position, no step) was not
/// measured, and a row judging it must fail rather than read 0 or a sample too small to judge.
inline double rate_or_nan(double sum, std::int64_t count) {
  return count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

/// max |x| over every element of an Eigen expression, as double; NaN when any element is NaN;
/// 0 for an empty one.
template <class D>
double max_abs(const Eigen::DenseBase<D>& x) {
  if (x.size() == 0) return 0.0;
  return static_cast<double>(x.derived().cwiseAbs().template maxCoeff<Eigen::PropagateNaN>());
}

/// max |a − b| over every element of two Eigen expressions of one shape, as double; NaN when
/// either holds a NaN (and when both hold the same infinity). 0 for empty ones. Throws
/// std::invalid_argument when the shapes differ.
template <class A, class B>
double max_abs_diff(const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument("max_abs_diff: shapes differ");
  if (a.size() == 0) return 0.0;
  return static_cast<double>((a.derived() - b.derived()).cwiseAbs().template maxCoeff<Eigen::PropagateNaN>());
}

/// max |a[i] − b[i]| over two spans of one length, as double; NaN when either holds a NaN.
/// Throws std::invalid_argument when the lengths differ.
template <class T>
double max_abs_diff(std::span<const T> a, std::span<const T> b) {
  if (a.size() != b.size()) throw std::invalid_argument("max_abs_diff: lengths differ");
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = nan_max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

/// Whether every element of an Eigen expression is finite (no NaN, no ±inf).
template <class D>
bool all_finite(const Eigen::DenseBase<D>& x) {
  return x.derived().allFinite();
}

/// The index of the largest of `logits` (first on ties). Throws NonFiniteError naming `what`
/// when any logit is NaN or ±inf: a plain argmax of NaN logits is index 0, the same on both sides
/// of a comparison, which would make two broken forwards agree.
template <class D>
int checked_argmax(const Eigen::DenseBase<D>& logits, const std::string& what = "logits") {
  if (!logits.derived().allFinite())
    throw NonFiniteError(what + ": argmax of non-finite values (NaN or inf)");
  Eigen::Index best = 0;
  for (Eigen::Index j = 1; j < logits.size(); ++j)
    if (logits.derived()(j) > logits.derived()(best)) best = j;
  return static_cast<int>(best);
}

}  // namespace kvlab
