// spec-greedy (checks/spec_greedy.cpp): passes with the speculative loop as it is, fails when its
// bookkeeping is broken (spec::SpecFaults); its judge on hand-made runs. The device path:
// tests/checks/device_checks_test.cpp.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <string>

#include "checks/spec_greedy.hpp"
#include "spec/loop.hpp"

namespace check_spec_greedy_test {

using namespace kvlab;
using kvlab::checks::RunContext;


TEST_CASE("spec-greedy passes, and bites when the loop's bookkeeping is broken") {
  const RunContext ctx;
  const auto good = kvlab::checks::run_spec_greedy({}, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("bonus_steps_self") > 0);
  CHECK(good.metric_value("alpha_observed_small") < 1.0);
  RunContext f32 = ctx;
  f32.dtype = kvlab::Dtype::f32;
  CHECK(kvlab::checks::run_spec_greedy({}, f32).passed());

  spec::SpecFaults no_draft_truncate;
  no_draft_truncate.skip_draft_truncate = true;
  CHECK_FALSE(kvlab::checks::run_spec_greedy({}, ctx, no_draft_truncate).passed());
  spec::SpecFaults no_target_truncate;
  no_target_truncate.skip_target_truncate = true;
  CHECK_FALSE(kvlab::checks::run_spec_greedy({}, ctx, no_target_truncate).passed());
  spec::SpecFaults no_bonus_feed;
  no_bonus_feed.skip_bonus_feed = true;
  CHECK_FALSE(kvlab::checks::run_spec_greedy({}, ctx, no_bonus_feed).passed());
  spec::SpecFaults wrong_bonus_row;
  wrong_bonus_row.bonus_from_last_draft_row = true;
  const auto wb = kvlab::checks::run_spec_greedy({}, ctx, wrong_bonus_row);
  CHECK_FALSE(wb.passed());
  CHECK(kvlab::test::failed_row(wb, "differing"));
}

TEST_CASE("spec-greedy: judge on hand-made runs: one differing token or one broken invariant fails its draft's row") {
  checks::SpecGreedyMeasured m;
  for (const char* name : {"small", "near", "self"}) m.drafts.push_back({.name = name, .key = name});
  auto rows = checks::judge_spec_greedy(m);
  REQUIRE(rows.size() == 6);  // per draft: differing tokens, broken invariants
  for (const Expectation& e : rows) CHECK(e.holds());
  m.drafts[1].differing = 1;
  rows = checks::judge_spec_greedy(m);
  CHECK_FALSE(rows[2].holds());
  CHECK(rows[0].holds());
  m.drafts[1].differing = 0;
  m.drafts[2].invariant_breaks = 1;
  CHECK_FALSE(checks::judge_spec_greedy(m)[5].holds());
}

}  // namespace check_spec_greedy_test
