// kv-invariance (checks/kv_invariance.cpp): passes on causal models (learned, RoPE, float32),
// fails on a bidirectional one, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "checks/kv_invariance.hpp"

namespace check_kv_invariance_test {

using namespace kvlab;

TEST_CASE("kv-invariance passes on the causal model and fails when attention is bidirectional") {
  checks::RunContext ctx;
  checks::KvInvarianceOptions o;
  CHECK(checks::run_kv_invariance(o, ctx).passed());
  o.positional = "rope";
  CHECK(checks::run_kv_invariance(o, ctx).passed());
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_kv_invariance(o, ctx).passed());
  o.causal = false;  // BERT-style: token n changes the K/V of earlier positions (004 §1.2)
  const Result broken = checks::run_kv_invariance(o, ctx);
  CHECK_FALSE(broken.passed());
  CHECK(broken.metric_value("max_abs_diff") > 0.0);
}

TEST_CASE("kv-invariance: judge wants exactly 0 on the CPU, and no NaN passes") {
  checks::KvInvarianceMeasured m;
  m.config.n_layer = 2;
  CHECK(checks::judge_kv_invariance(m)[0].holds());
  m.max_dv = 1e-300;  // the smallest change is a change: the proof says equal
  CHECK_FALSE(checks::judge_kv_invariance(m)[1].holds());
  m.max_dv = 0;
  m.max_dk = std::nan("");
  CHECK_FALSE(checks::judge_kv_invariance(m)[0].holds());
}

}  // namespace check_kv_invariance_test
