// Rounding-error constants the checks' tolerances are built from: the unit roundoff u of a
// floating-point type and Higham's γ_n, the relative error bound of n roundings. One home, so that
// every tolerance that says "u = 2^-53" or "γ_n" means the same number.
#pragma once

#include <limits>

namespace kvlab {

/// Unit roundoff u = machine epsilon / 2 of the floating-point type T (round to nearest):
/// 2^-53 ≈ 1.1e-16 for double, 2^-24 ≈ 6.0e-8 for float. Returned as double.
/// Source: Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §2.1.
template <class T>
constexpr double unit_roundoff() {
  return static_cast<double>(std::numeric_limits<T>::epsilon()) / 2;
}

/// γ_n = n·u / (1 − n·u): a quantity built through n roundings of unit roundoff u (each
/// (1 + δ), |δ| <= u) is within relative γ_n of its exact value, as long as n·u < 1 (not checked:
/// callers use n in the tens to millions). Source: Higham, 2nd ed., Lemma 3.1, (3.8).
constexpr double gamma_n(double n, double u) { return n * u / (1.0 - n * u); }

/// γ_n for float64 rounding (u = 2^-53).
constexpr double gamma_n(double n) { return gamma_n(n, unit_roundoff<double>()); }

}  // namespace kvlab
