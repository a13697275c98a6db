// rope-breaks-absorb (checks/rope_breaks_absorb.cpp): passes with RoPE; fails when the rotation is
// missing; and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <limits>

#include "checks/rope_breaks_absorb.hpp"
#include "core/error.hpp"

namespace check_rope_breaks_absorb_test {

using namespace kvlab;

TEST_CASE("rope-breaks-absorb passes with RoPE and fails when the rotation is missing") {
  checks::RunContext ctx;
  checks::RopeBreaksAbsorbOptions o;
  const Result good = checks::run_rope_breaks_absorb(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("min_relative_spread") > 0.1);
  checks::RopeBreaksAbsorbParts no_rotation;  // positions ignored: M(Δ) = M(0), absorbable
  no_rotation.rope = [](Mat<double>&, int, int, int, double) {};
  CHECK_FALSE(checks::run_rope_breaks_absorb(o, ctx, no_rotation).passed());
  o.max_delta = 0;
  CHECK_THROWS_WITH_AS(checks::run_rope_breaks_absorb(o, ctx), doctest::Contains("--max-delta"), InputError);
}

TEST_CASE("rope-breaks-absorb: judge fails an identity beyond its bound and an offset whose matrix did not move") {
  const checks::RopeBreaksAbsorbMeasured good = checks::measure_rope_breaks_absorb({}, checks::RunContext{});
  auto rows = checks::judge_rope_breaks_absorb(good);
  REQUIRE(rows.size() == 2);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[1].measured == 64);

  checks::RopeBreaksAbsorbMeasured off = good;
  off.draws[5].error = 1e-6;  // one head's score is not c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ
  CHECK_FALSE(checks::judge_rope_breaks_absorb(off)[0].holds());
  off = good;
  off.offsets[9].entry = 0;  // Δ = 10 absorbable after all: one offset short of "every offset"
  rows = checks::judge_rope_breaks_absorb(off);
  CHECK(rows[1].measured == 63);
  CHECK_FALSE(rows[1].holds());

  // Hand-made: one draw at t = s = 0 with magnitude 1: a bound of a few hundred u.
  checks::RopeBreaksAbsorbMeasured hand;
  hand.options.max_delta = 1;
  hand.row_a = hand.row_b = 1;
  hand.draws = {{.t = 0, .s = 0, .mag = 1, .error = 1e-12}};
  hand.offsets = {{.delta = 1, .relative = 0.5, .entry = 0.5}};
  rows = checks::judge_rope_breaks_absorb(hand);
  CHECK(rows[0].tolerance < 1e-13);
  CHECK_FALSE(rows[0].holds());
  CHECK(rows[1].holds());
  hand.offsets[0].entry = 10 * std::numeric_limits<double>::epsilon();  // within rounding: not a change
  CHECK_FALSE(checks::judge_rope_breaks_absorb(hand)[1].holds());
}

}  // namespace check_rope_breaks_absorb_test
