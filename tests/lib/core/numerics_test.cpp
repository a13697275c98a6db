// lib/core/numerics.hpp: the unit roundoff and γ_n on values worked out by hand.
#include <doctest/doctest.h>

#include "core/dtype.hpp"
#include "core/numerics.hpp"

namespace core_numerics_test {

using namespace kvlab;

TEST_CASE("unit roundoff: 2^-53 for double, 2^-24 for float, and the dtype's") {
  static_assert(unit_roundoff<double>() == 0x1.0p-53);
  static_assert(unit_roundoff<float>() == 0x1.0p-24);
  CHECK(unit_roundoff(Dtype::f64) == 0x1.0p-53);
  CHECK(unit_roundoff(Dtype::f32) == 0x1.0p-24);
  // u is half the gap above 1: 1 + u rounds back to 1 (ties to even), 1 + 2u does not.
  volatile double one = 1.0;
  CHECK(one + unit_roundoff<double>() == 1.0);
  CHECK(one + 2 * unit_roundoff<double>() > 1.0);
}

TEST_CASE("gamma_n = n u / (1 - n u)") {
  CHECK(gamma_n(0.0, 0.25) == 0.0);
  CHECK(gamma_n(1.0, 0.25) == 1.0 / 3.0);  // 0.25 / 0.75
  CHECK(gamma_n(2.0, 0.25) == 1.0);        // 0.5 / 0.5
  CHECK(gamma_n(3.0, 0.125) == 0.6);       // 0.375 / 0.625
  // float64 by default; just above n·u for small n·u.
  const double u = 0x1.0p-53;
  CHECK(gamma_n(3) == gamma_n(3.0, u));
  CHECK(gamma_n(3) == 3 * u / (1.0 - 3 * u));
  CHECK(gamma_n(3) > 3 * u);
  CHECK(gamma_n(3) < 3 * u * (1 + 1e-15));
}

}  // namespace core_numerics_test
