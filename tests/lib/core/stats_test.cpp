// lib/core/stats.hpp's mean and median on values worked out by hand.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "core/stats.hpp"

namespace core_stats_test {

using namespace kvlab;

TEST_CASE("mean: left-to-right sum over the count, 0 for none") {
  CHECK(mean({}) == 0.0);
  CHECK(mean({4.0}) == 4.0);
  CHECK(mean({1.0, 2.0, 6.0}) == 3.0);
  // The order is the caller's: (1e16 + 1) + 1 loses both ones (each half an ulp, ties to even),
  // so the mean is 1e16 / 3, not (1e16 + 2) / 3.
  CHECK(mean({1e16, 1.0, 1.0}) == 1e16 / 3.0);
}

TEST_CASE("median: middle value, or the average of the two middle ones") {
  CHECK(median({5.0}) == 5.0);
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);        // sorted 1 2 3
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);   // sorted 1 2 3 4: (2 + 3) / 2
  CHECK(median({7.0, 7.0, 1.0, 9.0}) == 7.0);   // sorted 1 7 7 9
  CHECK_THROWS_AS(median({}), std::invalid_argument);
}

}  // namespace core_stats_test
