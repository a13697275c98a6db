#include "core/stats.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace kvlab {

double normal_two_sided_tail(double z) {
  if (!(z > 0.0)) return 1.0;
  return std::erfc(z / std::numbers::sqrt2);
}

double z_for_two_sided(double p) {
  if (!(p > 0.0 && p <= 1.0)) throw std::invalid_argument("z_for_two_sided: p must be in (0, 1]");
  // The tail is decreasing in z; erfc(40 / sqrt 2) underflows to ~1e-350, below any p we accept
  // (p is a double > 0 so at least ~5e-324: take the upper end where the tail is 0).
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_two_sided_tail(mid) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double bonferroni_z(double family_false_alarm, std::size_t comparisons) {
  if (comparisons == 0) throw std::invalid_argument("bonferroni_z: no comparisons");
  return z_for_two_sided(family_false_alarm / static_cast<double>(comparisons));
}

}  // namespace kvlab
