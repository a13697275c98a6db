// gqa-meanpool (checks/gqa_meanpool.cpp, gqa_meanpool_trained.cpp): passes with kvlab's pooler,
// fails with one that averages the tiled groups or drops the K/V biases; the trained mode on a
// small stand-in and on the committed target; the judge on hand-made measurements.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "checks/gqa_meanpool.hpp"
#include "core/error.hpp"
#include "model/gqa_convert.hpp"
#include "train/checkpoint.hpp"
#include "../test_util.hpp"

namespace check_gqa_meanpool_test {

using namespace kvlab;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The expectation of `rows` whose quantity starts with `prefix`; fails the test when there is none.
const Expectation* row_starting(const std::vector<Expectation>& rows, const std::string& prefix) {
  for (const auto& e : rows)
    if (e.quantity.rfind(prefix, 0) == 0) return &e;
  FAIL("no expectation starts with: " << prefix);
  return nullptr;
}

using kvlab::test::byte_config;

}  // namespace

TEST_CASE("gqa-meanpool passes, and fails when the pooled groups are the tiled ones") {
  checks::RunContext ctx;
  checks::GqaMeanpoolOptions o;
  const Result ok = checks::run_gqa_meanpool(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("relative_error_random_g2") > 10 * ok.metric_value("relative_error_eps_0_01_g2"));
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_gqa_meanpool(o, ctx).passed());
  ctx.dtype = Dtype::f64;
  checks::GqaMeanpoolParts tiled;
  tiled.pool_f64 = [](const MiniGPT<double>& mha, int G) {
    // a wrong grouping: K/V head g averages heads g, g + G, g + 2G, ... (repeat's tiling)
    MiniGPT<double> permuted = mha;
    const int hd = mha.config().head_dim, n = mha.config().n_kv_head, r = n / G;
    for (auto& b : permuted.weights().blocks) {
      const Mat<double> wk = b.w_k, wv = b.w_v;
      for (int g = 0; g < G; ++g)
        for (int i = 0; i < r; ++i) {  // slot g·r + i takes head g + i·G
          b.w_k.middleCols((g * r + i) * hd, hd) = wk.middleCols((g + i * G) * hd, hd);
          b.w_v.middleCols((g * r + i) * hd, hd) = wv.middleCols((g + i * G) * hd, hd);
        }
    }
    return mean_pool_kv_heads<double>(permuted, G);
  };
  CHECK_FALSE(checks::run_gqa_meanpool(o, ctx, tiled).passed());
  ModelConfig c;
  const MiniGPT<double> m(c, 3);
  CHECK_THROWS_AS(mean_pool_kv_heads<double>(m, 3), InputError);
  CHECK(mean_pool_kv_heads<double>(m, 2).config().n_kv_head == 2);
}

TEST_CASE("gqa-meanpool trained mode: identity conversion exact; a pooler that drops the K/V biases fails") {
  MiniGPT<float> m(byte_config(2, 32, 4), 9);
  for (auto& b : m.weights().blocks) b.b_k.setConstant(0.5f), b.b_v.setConstant(-0.5f);
  const std::string path = (std::filesystem::temp_directory_path() / "kvlab_test_mha.safetensors").string();
  train::save_checkpoint(m, path, {});
  checks::GqaMeanpoolOptions o;
  o.trained_weights = path;
  o.fortunes = kvlab::test::fortune_fixture("kvlab_test_fortunes");
  o.windows = 2;
  const Result ok = checks::run_gqa_meanpool(o, checks::RunContext{});
  CHECK(ok.passed());
  CHECK(ok.metric_value("trained_loss_mha") > 0);
  checks::GqaMeanpoolParts broken;
  broken.pool_f32 = [](const MiniGPT<float>& mha, int G) {
    MiniGPT<float> g = mean_pool_kv_heads<float>(mha, G);
    for (auto& b : g.weights().blocks) b.b_k.setZero(), b.b_v.setZero();
    return g;
  };
  CHECK(!checks::run_gqa_meanpool(o, checks::RunContext{}, broken).passed());
  o.trained_weights = "/nonexistent/kvlab/t.safetensors";
  CHECK(test::input_error([&] { checks::run_gqa_meanpool(o, checks::RunContext{}); }).find("--trained-weights") == 0);
}


TEST_CASE("gqa-meanpool trained mode: a conversion that changes nothing, or an uptraining too short, fails") {
  checks::GqaTrainedOptions o;  // the committed target and the fortunes text; skipped where absent
  o.windows = 2;
  const checks::PoolerF32 pool = [](const MiniGPT<float>& m, int g) { return mean_pool_kv_heads<float>(m, g); };
  const auto ok = checks::judge_gqa_trained(checks::measure_gqa_trained(o, pool));
  if (ok.empty()) {
    MESSAGE("trained mode skipped here (no checkpoint or fortunes text)");
    return;
  }
  for (const Expectation& e : ok) CHECK_MESSAGE(e.holds(), e.quantity);
  CHECK(row_starting(ok, "trained target, G = 2: validation windows")->measured == 0);

  // "pooling" that keeps every head: the loss does not rise, the row fails
  const auto same = checks::judge_gqa_trained(
      checks::measure_gqa_trained(o, [](const MiniGPT<float>& m, int) { return m; }));
  CHECK_FALSE(row_starting(same, "trained target, G = 2: validation windows")->holds());

  checks::GqaTrainedOptions brief = o;  // one uptraining step (0.1% of the original run) recovers little
  brief.uptrain = true;
  brief.uptrain_share = 0.001;
  const auto up = checks::judge_gqa_trained(checks::measure_gqa_trained(brief, pool));
  CHECK_FALSE(row_starting(up, "uptraining 1 steps")->holds());
}

TEST_CASE("gqa-meanpool: judge fails an inexact ε = 0, an error that stops shrinking, and NaNs") {
  const checks::GqaMeanpoolMeasured good = checks::measure_gqa_meanpool({}, checks::RunContext{});
  const auto rows = checks::judge_gqa_meanpool(good);
  REQUIRE(rows.size() >= 4);
  for (const Expectation& e : rows) CHECK_MESSAGE(e.holds(), e.quantity);
  REQUIRE(good.rows.size() == 12);  // G = 2 then G = 1, ε = 1 .. 0
  checks::GqaMeanpoolMeasured off = good;
  off.rows[5].err = 1e-6;  // G = 2, ε = 0: an inexact conversion of equal heads
  CHECK_FALSE(row_starting(checks::judge_gqa_meanpool(off), "G = 2: max |Δ attention| with equal heads")->holds());
  off = good;
  off.rows[5].err = kNaN;
  CHECK_FALSE(row_starting(checks::judge_gqa_meanpool(off), "G = 2: max |Δ attention| with equal heads")->holds());
  CHECK_FALSE(row_starting(checks::judge_gqa_meanpool(off), "G = 2: steps of ε")->holds());
  off = good;
  off.rows[10].err = off.rows[9].err;  // G = 1, ε = 0.01 no better than ε = 0.03
  CHECK_FALSE(row_starting(checks::judge_gqa_meanpool(off), "G = 1: steps of ε")->holds());
  CHECK(row_starting(checks::judge_gqa_meanpool(off), "G = 2: steps of ε")->holds());

  checks::GqaTrainedMeasured t;  // a trained mode by hand: 2 K/V heads, two windows
  t.config.n_kv_head = 2;
  t.base = {1.0, 2.0};
  t.conversions = {{.G = 2, .losses = {1.0, 2.0}}, {.G = 1, .losses = {1.5, 2.5}, .loss_after = 1.6}};
  t.options.uptrain = true;
  t.uptrain_steps = 50;
  t.original_steps = 1000;
  auto trows = checks::judge_gqa_trained(t);
  REQUIRE(trows.size() == 3);
  for (const Expectation& e : trows) CHECK_MESSAGE(e.holds(), e.quantity);
  t.conversions[0].losses[1] = kNaN;  // the identity conversion's loss
  t.conversions[1].losses[0] = 0.9;   // pooling that lowered the loss on a window
  t.conversions[1].loss_after = kNaN;
  trows = checks::judge_gqa_trained(t);
  for (const Expectation& e : trows) CHECK_FALSE_MESSAGE(e.holds(), e.quantity);
}

}  // namespace check_gqa_meanpool_test
