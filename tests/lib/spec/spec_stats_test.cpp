// lib/spec/loop.hpp: SpecStats::operator+= adds every field.
#include <doctest/doctest.h>

#include "spec/loop.hpp"

namespace spec_spec_stats_test {

using namespace kvlab;

TEST_CASE("SpecStats += adds every count and both seconds") {
  spec::SpecStats a{.steps = 1, .drafted = 2, .evaluated = 3, .accepted = 4, .bonus = 5, .emitted = 6,
                    .draft_forwards = 7, .target_forwards = 8, .seconds_draft = 0.5, .seconds_target = 0.25};
  const spec::SpecStats b{.steps = 10, .drafted = 20, .evaluated = 30, .accepted = 40, .bonus = 50, .emitted = 60,
                          .draft_forwards = 70, .target_forwards = 80, .seconds_draft = 1.0, .seconds_target = 2.0};
  a += b;
  CHECK(a.steps == 11);
  CHECK(a.drafted == 22);
  CHECK(a.evaluated == 33);
  CHECK(a.accepted == 44);
  CHECK(a.bonus == 55);
  CHECK(a.emitted == 66);
  CHECK(a.draft_forwards == 77);
  CHECK(a.target_forwards == 88);
  CHECK(a.seconds_draft == 1.5);
  CHECK(a.seconds_target == 2.25);
  CHECK(a.alpha_observed() == 44.0 / 33.0);
  CHECK(a.tokens_per_step() == 6.0);
}

}  // namespace spec_spec_stats_test
