// mla-absorb (checks/mla_absorb.cpp): passes in float64 and float32; fails when W_UV is not folded
// or W_UK not transposed; the decode-step closed form at DeepSeek-V2's shapes; and its judge on
// measurements made by hand.
#include <doctest/doctest.h>

#include "checks/mla_absorb.hpp"
#include "core/error.hpp"
#include "model/mla.hpp"

namespace check_mla_absorb_test {

using namespace kvlab;

TEST_CASE("mla-absorb passes in f64 and f32 and fails when the absorption is wrong") {
  checks::RunContext ctx;
  checks::MlaAbsorbOptions o;
  const Result good = checks::run_mla_absorb(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("flops_decode_step_naive") > good.metric_value("flops_decode_step_absorbed"));
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_mla_absorb(o, ctx).passed());
  ctx.dtype = Dtype::f64;

  o.kv_lora_rank = 8;  // d_c = d_h, so that the broken absorptions below have the right shapes
  CHECK(checks::run_mla_absorb(o, ctx).passed());
  checks::MlaAbsorbParts no_uv;  // W_UV not folded: the latent read as if it were the head output
  no_uv.absorb_f64 = [](const MlaWeights<double>& w, const MlaConfig& c) {
    MlaAbsorbed<double> a = absorb(w, c);
    for (int i = 0; i < c.n_head; ++i) a.w_ov[i] = w.w_o.middleRows(i * c.head_dim, c.head_dim);
    return a;
  };
  const Result r1 = checks::run_mla_absorb(o, ctx, no_uv);
  CHECK_FALSE(r1.passed());
  CHECK(r1.metric_value("max_abs_diff_logits") > 1e-6);
  checks::MlaAbsorbParts uk_not_transposed;  // W̃_QK,i = W_UQ,i W_UK,i instead of W_UQ,i W_UK,iᵀ
  uk_not_transposed.absorb_f64 = [](const MlaWeights<double>& w, const MlaConfig& c) {
    MlaAbsorbed<double> a = absorb(w, c);
    const int dh = c.head_dim;
    for (int i = 0; i < c.n_head; ++i) a.w_qk[i] = w.w_uq.middleCols(i * dh, dh) * w.w_uk.middleCols(i * dh, dh);
    return a;
  };
  CHECK_FALSE(checks::run_mla_absorb(o, ctx, uk_not_transposed).passed());

  o = {};
  o.decode = 0;  // no decode step: only the logits are compared
  CHECK(checks::run_mla_absorb(o, ctx).passed());
  o = {};
  o.q_lora_rank = 0;
  CHECK(checks::run_mla_absorb(o, ctx).passed());
  o.model = "llama-3-70b";
  CHECK_THROWS_WITH_AS(checks::run_mla_absorb(o, ctx), doctest::Contains("--model"), InputError);
}

TEST_CASE("the MLA decode-step formula at DeepSeek-V2's shapes: absorbed saves the up-projection") {
  // D 5120, H 128, d_h 128, d_c 512, d_q 1536, d_r 64, S 4096 (data/models/deepseek-v2.json).
  const auto f = checks::mla_decode_step_formula(5120, 128, 128, 512, 1536, true, 64, 4096);
  // The up-projection of K and V alone: 2 · 2 · S · d_c · H · d_h multiply-add FLOPs.
  CHECK(f.naive > 4ull * 4096 * 512 * 128 * 128);
  CHECK(f.naive / f.absorbed == 67);
  CHECK(f.absorbed_weights == 5120ull * 1536 + 1536ull * 128 * 64 + 5120ull * 512 + 5120ull * 64 +
                                  128ull * 1536 * 512 + 128ull * 512 * 5120);
}

TEST_CASE("mla-absorb: judge fails logits beyond rounding and a decode-step count off by one") {
  const checks::MlaAbsorbMeasured good = checks::measure_mla_absorb({}, checks::RunContext{});
  const auto rows = checks::judge_mla_absorb(good);
  REQUIRE(rows.size() == 6);  // logits; naive FLOPs, weights; absorbed FLOPs, weights; cache elements
  for (const Expectation& e : rows) CHECK(e.holds());

  checks::MlaAbsorbMeasured off = good;
  off.diff = 1e-6;  // an absorption that is not the same association
  CHECK_FALSE(checks::judge_mla_absorb(off)[0].holds());
  off = good;
  off.naive_step.weight_elements -= 1;
  CHECK_FALSE(checks::judge_mla_absorb(off)[2].holds());
  off = good;
  off.absorbed_step.flops += 2;  // one multiply-add the closed form does not have
  CHECK_FALSE(checks::judge_mla_absorb(off)[3].holds());
  off = good;
  off.naive_step.cache_elements += 1;  // a path that reads more than c_KV and k_R
  CHECK_FALSE(checks::judge_mla_absorb(off)[5].holds());

  // Hand-made: 1 layer, d_c 2, d_r 2, S = 3 + 1: the last step reads 1·4·(2 + 2) = 16 cached elements.
  checks::MlaAbsorbMeasured hand;
  hand.options = {.prefill = 3, .decode = 1};
  hand.config.n_layer = 1;
  hand.config.kv_lora_rank = 2;
  hand.config.rope_head_dim = 2;
  hand.naive_step.cache_elements = hand.absorbed_step.cache_elements = 16;
  auto judged = checks::judge_mla_absorb(hand);
  CHECK(judged[5].expected == 16);
  CHECK(judged[5].holds());
  CHECK_FALSE(judged[1].holds());  // no FLOPs counted: not the closed form
  hand.options.decode = 0;         // no decode step: the logits alone are judged
  CHECK(checks::judge_mla_absorb(hand).size() == 1);
}

}  // namespace check_mla_absorb_test
