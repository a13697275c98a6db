#include "core/martingale.hpp"

#include <cmath>
#include <stdexcept>

#include "core/stats.hpp"

namespace kvlab {

int freedman_grid_points(double b, double max_variation) {
  if (!(b > 0.0) || !std::isfinite(b) || !(max_variation >= 0.0) || !std::isfinite(max_variation))
    throw std::invalid_argument("freedman_grid_points: b must be > 0 and max_variation >= 0");
  const double ratio = max_variation / (b * b);
  return ratio <= 1.0 ? 1 : static_cast<int>(std::ceil(std::log2(ratio))) + 1;
}

double freedman_radius(double variation, double b, double max_variation, double false_alarm) {
  if (!(variation >= 0.0) || !std::isfinite(variation) || variation > max_variation)
    throw std::invalid_argument("freedman_radius: need 0 <= variation <= max_variation");
  if (!(false_alarm > 0.0 && false_alarm <= 1.0))
    throw std::invalid_argument("freedman_radius: false_alarm must be in (0, 1]");
  const int points = freedman_grid_points(b, max_variation);
  // Smallest grid value σ_k² = max_variation / 2^(L − k) that is >= variation.
  double sigma2 = max_variation;
  for (int k = 1; k < points && sigma2 / 2.0 >= variation; ++k) sigma2 /= 2.0;
  // Bernstein form with the total variation as "n · variance" (n = 1).
  return bernstein_radius(sigma2, b, 1, false_alarm / points);
}

}  // namespace kvlab
