// max-batch (checks/max_batch.cpp): 000 §2.3's 298 with errata E3 and E4, the check failing with a
// cache that forgets K or V or with wrong weights, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "checks/max_batch.hpp"
#include "core/error.hpp"
#include "cost/capacity.hpp"
#include "../test_util.hpp"

namespace check_max_batch_test {

using namespace kvlab;
using kvlab::test::input_error;

TEST_CASE("max-batch: 298 with errata E3 and E4, and fails with a cache that forgets K or V, or wrong weights") {
  checks::RunContext ctx;
  const Result r = checks::run_max_batch({}, ctx);
  CHECK(r.passed());
  CHECK(r.metric_value("max_batch") == 298.0);
  CHECK(r.errata().size() == 2);

  checks::MaxBatchParts half;  // forgets the factor 2 of K and V
  half.capacity = [](const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n, double bpp,
                     std::uint64_t c, CacheDtype d, std::optional<double> budget) {
    BatchCapacity cap = batch_capacity(m, g, gpus, n, bpp, c, d, budget);
    cap.kv_bytes_per_sequence /= 2;
    cap.max_batch = static_cast<std::uint64_t>(std::floor(cap.kv_budget_bytes / static_cast<double>(cap.kv_bytes_per_sequence)));
    return cap;
  };
  CHECK_FALSE(checks::run_max_batch({}, ctx, half).passed());

  checks::MaxBatchParts int8_weights;  // weights counted at 1 B whatever --weight-bytes says
  int8_weights.capacity = [](const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n, double,
                             std::uint64_t c, CacheDtype d, std::optional<double> budget) {
    return batch_capacity(m, g, gpus, n, 1.0, c, d, budget);
  };
  CHECK_FALSE(checks::run_max_batch({}, ctx, int8_weights).passed());

  checks::MaxBatchOptions o;
  o.model = "llama-2-7b";
  o.gpu = "a100-40gb";
  o.gpus = 1;
  o.kv_dtype = "fp8";
  const Result one = checks::run_max_batch(o, ctx);
  CHECK(one.passed());
  CHECK(one.errata().empty());
  o.kv_budget_gb = 1e6;
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("--kv-budget-gb") != std::string::npos);
  o.kv_budget_gb.reset();
  o.model = "llama-3.1-405b";  // 810 GB of weights on one 40 GB card
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("weights") != std::string::npos);
  o.model = "deepseek-v2";
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("--model") != std::string::npos);
}

TEST_CASE("max-batch: judge fails a batch one sequence off, a cache one byte off, and weights 1% off") {
  const checks::MaxBatchMeasured good = checks::measure_max_batch({});
  const auto rows = checks::judge_max_batch(good);
  REQUIRE(rows.size() == 4);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[3].headline);
  CHECK(rows[3].expected == 298);
  checks::MaxBatchMeasured off = good;
  off.capacity.max_batch = 299;  // one sequence more than floor(400 GB / 1.25 GiB)
  CHECK_FALSE(checks::judge_max_batch(off)[3].holds());
  off = good;
  off.capacity.kv_bytes_per_sequence += 1;
  CHECK_FALSE(checks::judge_max_batch(off)[1].holds());
  off = good;
  off.capacity.weight_bytes *= 1.01;
  CHECK_FALSE(checks::judge_max_batch(off)[0].holds());
  off = good;
  off.capacity.left_bytes -= 1e6;  // 1 MB less left than 640 GB − the weights
  CHECK_FALSE(checks::judge_max_batch(off)[2].holds());
}

TEST_CASE("max-batch: its defaults are 000 §2.3's setup, shown by --help; the setup asked for explicitly is the same") {
  const checks::MaxBatchOptions defaults;
  CHECK(defaults.model == "llama-3-70b");
  CHECK(defaults.gpu == "a100-80gb");
  CHECK(defaults.gpus == 8);
  CHECK(defaults.ctx == 4096);
  CHECK(defaults.kv_dtype == "fp16");
  CHECK(defaults.weight_bytes == 2.0);
  CHECK(checks::measure_max_batch(defaults).document);
  checks::MaxBatchOptions o;
  o.gpus = 8;  // `--gpus 8`: the document's deployment, its 400 GB budget and its figures
  CHECK(checks::measure_max_batch(o).document);
  o.gpus = 4;
  CHECK_FALSE(checks::measure_max_batch(o).document);
  o = {};
  o.params = 70e9;
  CHECK_FALSE(checks::measure_max_batch(o).document);
}

}  // namespace check_max_batch_test
