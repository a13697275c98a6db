// cpu-roofline (checks/cpu_roofline.cpp): its verdict on synthetic machines (timings near the roof
// hold; a decode or a prefill that falls short fails), its judge on hand-made measurements, and
// its refusals. The machine measurement itself: tests/lib/bench/machine_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "checks/cpu_roofline.hpp"
#include "core/error.hpp"
#include "model/fast_gpt.hpp"

namespace check_cpu_roofline_test {

using namespace kvlab;

namespace {

// Synthetic parts: a machine of 10 GB/s and 100 GFLOP/s, and timers returning the roof's bound
// divided by an efficiency, with a ±3% spread over the repeats.
checks::CpuRooflineParts synthetic(double decode_eff, double prefill_eff) {
  checks::CpuRooflineParts p;
  p.machine = [] { return checks::MachineRoof{10e9, 100e9, {9.8e9, 10e9, 10.1e9}, {99e9, 100e9, 101e9}, "synthetic"}; };
  auto bound = [](const StepCost& s) { return std::max(s.bytes / 10e9, s.flops / 100e9); };
  auto spread = [](double t, int repeats) {
    std::vector<double> v;
    for (int r = 0; r < repeats; ++r) v.push_back(t * (1.0 + 0.03 * ((r % 3) - 1)));
    return v;
  };
  p.time_decode = [=](const ModelConfig& c, int batch, int ctx, int repeats) {
    return spread(bound(decode_step_cost(c, batch, ctx)) / decode_eff, repeats);
  };
  p.time_verify = [=](const ModelConfig& c, int rows, int ctx, int repeats) {
    return spread(bound(verify_step_cost(c, rows, ctx)) / decode_eff, repeats);
  };
  p.time_prefill = [=](const ModelConfig& c, int len, int repeats) {
    return spread(bound(prefill_cost(c, len)) / prefill_eff, repeats);
  };
  return p;
}

}  // namespace

TEST_CASE("cpu-roofline: holds on timings near the roof, fails when decode or prefill falls short") {
  checks::CpuRooflineOptions o;  // the default grid; the timers are synthetic, no model is built
  const checks::RunContext ctx;
  const Result good = checks::run_cpu_roofline(o, ctx, synthetic(0.9, 0.8));
  CHECK(good.passed());
  CHECK(good.metric_value("decode_bandwidth_fraction") == doctest::Approx(0.9).epsilon(0.02));
  CHECK(good.metric_value("ridge") == doctest::Approx(10.0));
  // At 90% of the roof everywhere the measured turn is where the roof turns.
  CHECK(good.metric_value("crossover_batch_measured") ==
        doctest::Approx(good.metric_value("crossover_batch_predicted")).epsilon(0.35));
  CHECK_FALSE(good.plots.empty());

  for (const char* key : {"bw_fraction_batch_1", "bw_fraction_batch_2", "bw_fraction_batch_4", "bw_fraction_batch_8",
                          "bw_fraction_verify_5"}) {
    CAPTURE(key);
    CHECK(good.metric_value(key) == doctest::Approx(0.9).epsilon(0.05));
  }

  // Paired: the copy rate swings between 5 and 20 GB/s from one measurement to the next and each
  // step runs at 90% of the rate measured just before it; the verdict follows the pairs, not a
  // roof measured once.
  auto swinging = synthetic(0.9, 0.8);
  auto rate = std::make_shared<double>(5e9);
  swinging.copy_rate = [rate] {
    *rate = *rate == 5e9 ? 20e9 : 5e9;
    return *rate;
  };
  swinging.time_decode = [rate](const ModelConfig& c, int batch, int n, int repeats) {
    return std::vector<double>(static_cast<std::size_t>(repeats), decode_step_cost(c, batch, n).bytes / (0.9 * *rate));
  };
  const Result paired = checks::run_cpu_roofline(o, ctx, swinging);
  CHECK(paired.expectations[0].holds());
  CHECK(paired.metric_value("bw_fraction_batch_1") == doctest::Approx(0.9));
  CHECK(paired.metric_value("bw_fraction_batch_8") == doctest::Approx(0.9));

  const Result slow_decode = checks::run_cpu_roofline(o, ctx, synthetic(0.5, 0.8));  // half the bandwidth
  CHECK_FALSE(slow_decode.passed());
  CHECK_FALSE(slow_decode.expectations[0].holds());
  CHECK(slow_decode.expectations[1].holds());

  const Result slow_prefill = checks::run_cpu_roofline(o, ctx, synthetic(0.9, 0.4));
  CHECK_FALSE(slow_prefill.passed());
  CHECK(slow_prefill.expectations[0].holds());
  CHECK_FALSE(slow_prefill.expectations[1].holds());
}

TEST_CASE("cpu-roofline: bad options are InputErrors naming the option") {
  checks::CpuRooflineOptions o;
  o.n_kv_head = 3;
  CHECK_THROWS_AS(checks::run_cpu_roofline(o, {}, synthetic(0.9, 0.8)), InputError);
  o = {};
  o.batches = {};
  CHECK_THROWS_AS(checks::run_cpu_roofline(o, {}, synthetic(0.9, 0.8)), InputError);
  o = {};
  o.max_cached_tokens = 10;
  CHECK_THROWS_AS(checks::run_cpu_roofline(o, {}, synthetic(0.9, 0.8)), InputError);
}

TEST_CASE("cpu-roofline: judge on hand-made measurements: the batch-1 pairs' median and the longest prefill decide") {
  checks::CpuRooflineMeasured m;
  m.options.repeats = 3;
  m.roof.flops_per_s = 100e9;
  checks::PairedStep b1;
  b1.rows = 1;
  b1.fractions = {0.70, 0.85, 0.95};  // median 0.85: one pair below 80% does not fail the row
  m.paired.push_back(b1);
  checks::RoofPoint longest;
  longest.batch = 1, longest.ctx = 512;
  longest.cost.flops = 70e9;
  longest.median_s = 1.0;  // 70 GFLOP/s of 100: 70%
  m.prefill.push_back(longest);
  auto rows = checks::judge_cpu_roofline(m);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].holds());
  CHECK(rows[1].holds());
  m.paired[0].fractions = {0.70, 0.79, 0.95};  // median 0.79: below kvlab's 80%
  m.prefill[0].median_s = 70.0 / 59.0;           // 59 GFLOP/s: below 60%
  rows = checks::judge_cpu_roofline(m);
  CHECK_FALSE(rows[0].holds());
  CHECK_FALSE(rows[1].holds());
  m.paired[0].fractions = {1.4, 1.5, 1.6};  // above the roof (part of the model in cache): capped at 1, holds
  rows = checks::judge_cpu_roofline(m);
  CHECK(rows[0].holds());
  CHECK(rows[0].measured == 1.0);
  // A NaN is never capped into a pass (std::min(1.0, NaN) is 1.0).
  m.paired[0].fractions = {std::nan(""), std::nan(""), std::nan("")};
  m.prefill[0].median_s = std::nan("");
  rows = checks::judge_cpu_roofline(m);
  CHECK_FALSE(rows[0].holds());
  CHECK_FALSE(rows[1].holds());
}

}  // namespace check_cpu_roofline_test
