// mla-decoupled (checks/mla_decoupled.cpp): passes on the MLA mini-GPT; fails when a head absorbs
// another head's W_UK; and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "checks/mla_decoupled.hpp"
#include "core/error.hpp"
#include "model/mla.hpp"

namespace check_mla_decoupled_test {

using namespace kvlab;

TEST_CASE("mla-decoupled passes and fails when a head absorbs another head's W_UK") {
  checks::RunContext ctx;
  checks::MlaDecoupledOptions o;
  CHECK(checks::run_mla_decoupled(o, ctx).passed());
  checks::MlaDecoupledParts shifted;
  shifted.absorb = [](const MlaWeights<double>& w, const MlaConfig& c) {
    MlaAbsorbed<double> a = absorb(w, c);
    const int dh = c.head_dim, j = 1;  // head 0 pairs its W_UQ with head 1's W_UK
    a.w_qk[0] = w.w_uq.middleCols(0, dh) * w.w_uk.middleCols(j * dh, dh).transpose();
    return a;
  };
  const Result broken = checks::run_mla_decoupled(o, ctx, shifted);
  CHECK_FALSE(broken.passed());
  CHECK(broken.metric_value("max_abs_diff_score_split") > 1e-10);
  o.decode = 0;
  CHECK(checks::run_mla_decoupled(o, ctx).passed());
  o.pairs = 0;
  CHECK_THROWS_WITH_AS(checks::run_mla_decoupled(o, ctx), doctest::Contains("--pairs"), InputError);
}

TEST_CASE("mla-decoupled: judge fails a split beyond rounding, logits that differ, and a per-head RoPE key") {
  const checks::MlaDecoupledMeasured good = checks::measure_mla_decoupled({}, checks::RunContext{});
  const auto rows = checks::judge_mla_decoupled(good);
  REQUIRE(rows.size() == 3);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[2].expected == 32 + 4);

  checks::MlaDecoupledMeasured off = good;
  off.split[3].error = 1e-9;
  CHECK_FALSE(checks::judge_mla_decoupled(off)[0].holds());
  off = good;
  off.diff = 1e-9;  // the absorbed cached decode drifts from the full forward
  CHECK_FALSE(checks::judge_mla_decoupled(off)[1].holds());
  off = good;
  // A cache that keeps a RoPE key per head: d_c + H·d_r = 32 + 8·4 per token per layer.
  off.cache_elements = static_cast<std::uint64_t>(16) * 2 * (32 + 8 * 4);
  CHECK_FALSE(checks::judge_mla_decoupled(off)[2].holds());

  checks::MlaDecoupledMeasured hand;  // 8 + 8 tokens × 2 layers × (32 + 4)
  hand.cache_elements = 16 * 2 * 36;
  hand.split = {{.mag = 1, .error = 0}};
  for (const Expectation& e : checks::judge_mla_decoupled(hand)) CHECK(e.holds());
}

}  // namespace check_mla_decoupled_test
