// position-offset (checks/position_offset.cpp): passes with the right start, fails when the
// right-start path forgets the offset too; its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "checks/position_offset.hpp"
#include "core/error.hpp"

namespace check_position_offset_test {

using namespace kvlab;

TEST_CASE("position-offset passes, and fails when the right-start path forgets the offset too") {
  checks::RunContext ctx;
  checks::PositionOffsetOptions o;
  const Result ok = checks::run_position_offset(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_forgotten_start") > 1e-6);
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_position_offset(o, ctx).passed());
  checks::PositionOffsetParts forgotten;
  forgotten.right = [](int, int t) { return t; };  // a forgotten offset
  CHECK_FALSE(checks::run_position_offset(o, ctx, forgotten).passed());
  o.decode = 0;
  CHECK_THROWS_AS(checks::run_position_offset(o, ctx), InputError);
}

TEST_CASE("position-offset: judge fails when a forgotten start passes for one step, or raises an error") {
  checks::PositionOffsetMeasured m{.options = {}, .context = {}};
  m.bound = 1e-13;
  for (int p = 0; p < m.options.decode; ++p) m.steps.push_back({.position = 8 + p, .forgotten = 0.5});
  for (const Expectation& e : checks::judge_position_offset(m)) CHECK(e.holds());
  auto broken = m;
  broken.steps[3].forgotten = 1e-14;  // one step where the bug went unseen
  CHECK_FALSE(checks::judge_position_offset(broken)[1].holds());
  broken = m;
  broken.errors_raised = 1;
  CHECK_FALSE(checks::judge_position_offset(broken)[2].holds());
  broken = m;
  broken.right_diff = 2e-13;
  CHECK_FALSE(checks::judge_position_offset(broken)[0].holds());
}

}  // namespace check_position_offset_test
