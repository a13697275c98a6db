#include "core/rng.hpp"

#include <cmath>
#include <numbers>

namespace kvlab {

double Rng::normal() {
  // 1 - uniform() lies in (0, 1], so the logarithm is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::size_t Rng::categorical(std::span<const double> weights) {
  double total = 0.0;
  for (double w : weights) total += w;
  const double u = uniform() * total;
  double cumulative = 0.0;
  std::size_t last_positive = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0) continue;
    cumulative += weights[i];
    last_positive = i;
    if (u < cumulative) return i;
  }
  return last_positive;
}

}  // namespace kvlab
