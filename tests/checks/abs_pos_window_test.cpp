// abs-pos-window (checks/abs_pos_window.cpp): passes, fails when the RoPE model renumbers the new
// token but not its keys; its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "checks/abs_pos_window.hpp"
#include "core/error.hpp"

namespace check_abs_pos_window_test {

using namespace kvlab;

TEST_CASE("abs-pos-window passes, and fails when the RoPE model forgets to count the next position on") {
  checks::RunContext ctx;
  checks::AbsPosWindowOptions o;
  const Result ok = checks::run_abs_pos_window(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_k_learned_layer1") > 1e-3);
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_abs_pos_window(o, ctx).passed());
  checks::AbsPosWindowParts renumbered;
  renumbered.rope_next_position = [](int window) { return window - 1; };  // a forgotten offset
  CHECK_FALSE(checks::run_abs_pos_window(o, ctx, renumbered).passed());
  o.window = 1;
  CHECK_THROWS_AS(checks::run_abs_pos_window(o, ctx), InputError);
}

TEST_CASE("abs-pos-window: judge fails when one layer's K stays put, or RoPE's scores drift") {
  checks::AbsPosWindowMeasured m{.options = {}, .context = {}};
  m.learned = {{0.5, 1, 1e-13}, {0.3, 1, 1e-13}};
  m.rope_bound = 1e-13;
  for (const Expectation& e : checks::judge_abs_pos_window(m)) CHECK(e.holds());
  auto broken = m;
  broken.learned[1].dk = 1e-14;  // within rounding: as if the position never reached layer 2
  CHECK_FALSE(checks::judge_abs_pos_window(broken)[0].holds());
  broken = m;
  broken.rope_max_dscore = 2e-13;
  CHECK_FALSE(checks::judge_abs_pos_window(broken)[1].holds());
}

}  // namespace check_abs_pos_window_test
