// bidirectional (checks/bidirectional.cpp): passes, fails with a "bidirectional" model that kept
// its causal mask; its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "checks/bidirectional.hpp"
#include "core/error.hpp"

namespace check_bidirectional_test {

using namespace kvlab;

TEST_CASE("bidirectional passes (f64, f32, 2 layers), and fails when its mask is causal after all") {
  checks::RunContext ctx;
  checks::BidirectionalOptions o;
  CHECK(checks::run_bidirectional(o, ctx).passed());
  o.layers = 2;
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_bidirectional(o, ctx).passed());
  checks::BidirectionalParts wrong;
  wrong.bidirectional_is_causal = true;  // a wrong mask
  const Result r = checks::run_bidirectional(o, ctx, wrong);
  CHECK_FALSE(r.passed());
  CHECK(r.metric_value("max_abs_diff_bidirectional") == 0.0);
  o.layers = 1;
  CHECK_THROWS_AS(checks::run_bidirectional(o, ctx), InputError);
}

TEST_CASE("bidirectional: judge fails when a later layer's old K stays put, or layer 1's moves") {
  checks::BidirectionalMeasured m{.options = {}, .context = {}};
  m.config.n_layer = 3;
  m.causal.assign(3, {});
  m.bidirectional = {{0, 0, 1}, {0.01, 0.02, 1}, {0.01, 0.02, 1}};
  for (const Expectation& e : checks::judge_bidirectional(m)) CHECK(e.holds());
  auto broken = m;
  broken.bidirectional[2].dk = 0;  // layer 3's old K unchanged: the mask did not reach it
  CHECK_FALSE(checks::judge_bidirectional(broken)[2].holds());
  broken = m;
  broken.bidirectional[0].dv = 1e-18;
  CHECK_FALSE(checks::judge_bidirectional(broken)[1].holds());
  broken = m;
  broken.causal[1].dk = 1e-18;
  CHECK_FALSE(checks::judge_bidirectional(broken)[0].holds());
}

}  // namespace check_bidirectional_test
