// Work budgets (core/work_budget.hpp): an option combination whose estimated work is over the
// 60 s budget is refused before any work, one line naming the flags, the estimate and what fits;
// the defaults stay within it. Each estimate is a count (FLOPs, bytes), so these tests do not
// depend on the machine's speed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "bench/machine.hpp"
#include "checks/cpu_roofline.hpp"
#include "core/work_budget.hpp"
#include "model/work.hpp"
#include "test_util.hpp"

namespace kvlab::core_work_budget_test {
namespace {

bool mentions(const std::string& text, const std::string& word) { return text.find(word) != std::string::npos; }

TEST_CASE("work budget: the refusal is one line naming the flags, the estimate and the budget") {
  CHECK_NOTHROW(require_work_budget(59.0, "--x 1", "at most --x 2"));
  const std::string e = test::input_error([] { require_work_budget(95.4, "--windows 4096 x --tokens 8", "at most --windows 10"); });
  CHECK(e == "--windows 4096 x --tokens 8: about 95 s of work, over the 60 s budget; at most --windows 10 (KVLAB_WORK_BUDGET=SECONDS raises it)");
  CHECK(mentions(test::input_error([] { require_work_budget(NAN, "--x 1", "h"); }), "far more"));
  CHECK(mentions(test::input_error([] { require_work_budget(1e300, "--x 1", "h"); }), "far more"));
  const std::string m = test::input_error([] { require_memory_budget(38e9, "--d-model 4096", "smaller"); });
  CHECK(mentions(m, "--d-model 4096: about 35 GiB of memory, over the 4 GiB budget"));
}

TEST_CASE("work budget: largest_fitting bisects an increasing cost") {
  auto under = [](std::int64_t limit) { return [limit](std::int64_t n) { return n <= limit; }; };
  CHECK(largest_fitting(1, 100, under(37)) == 37);
  CHECK(largest_fitting(1, 100, under(500)) == 100);
  CHECK(largest_fitting(1, 100, under(0)) == 0);
  CHECK(largest_fitting(5, 5, under(5)) == 5);
  CHECK(largest_fitting(1, 1'000'000'000'000, under(123'456'789)) == 123'456'789);
}

TEST_CASE("work budget: machine --gemm-n 8192 --repeats 100 and --size-mib 16384 are over it; the default is not") {
  MachineOptions o;  // the defaults: 512 MiB arrays, 5 repeats, n = 2048
  CHECK(within_work_budget(machine_work_seconds(o)));
  CHECK(machine_work(o).peak_bytes <= kMemoryBudgetBytes);
  MachineOptions big = o;
  big.gemm_n = 8192;
  big.repeats = 100;
  CHECK_FALSE(within_work_budget(machine_work_seconds(big)));
  // 100 x 3 GEMMs of 2 x 8192^3 FLOPs: 330 TFLOP.
  CHECK(machine_work(big).gemm_flops == doctest::Approx(100 * 3 * 2.0 * 8192.0 * 8192.0 * 8192.0));
  MachineOptions huge = o;
  huge.stream_bytes_per_array = 16384ull << 20;
  CHECK(machine_work(huge).peak_bytes > kMemoryBudgetBytes);  // three 16 GiB arrays
  MachineOptions curve = o;
  curve.curve = true;
  CHECK(machine_work(curve).stream_bytes > machine_work(o).stream_bytes);
}

TEST_CASE("work budget: cpu-roofline --d-model 4096 --layers 48 is refused before any weight is built") {
  checks::CpuRooflineOptions o;  // the defaults fit
  const checks::CpuRooflineWork w = checks::cpu_roofline_work(o);
  CHECK(within_work_budget(w.seconds));
  CHECK(w.peak_bytes <= kMemoryBudgetBytes);
  o.d_model = 4096;
  o.layers = 48;
  CHECK(checks::cpu_roofline_work(o).peak_bytes > 30e9);  // two copies of ~9.7e9 float32 parameters
  const std::string e = test::input_error([&] { checks::run_cpu_roofline(o, {}); });
  CHECK(mentions(e, "--d-model 4096"));
  CHECK(mentions(e, "--layers 48"));
  CHECK(mentions(e, "budget"));
  checks::CpuRooflineOptions slow;
  slow.repeats = 50;
  slow.stream_mib = 4096;
  CHECK(mentions(test::input_error([&] { checks::run_cpu_roofline(slow, {}); }), "budget"));
}

TEST_CASE("model work: forward FLOPs count the matrices, the LM head and causal attention") {
  ModelConfig c;  // 2 layers, d 64, 8 heads of 8, MHA, vocab 96
  const double macs_per_token = 2 * (64.0 * (64 + 2 * 64) + 64.0 * 64 + 2 * 64.0 * 256) + 64.0 * 96;
  CHECK(forward_flops(c, 1) == doctest::Approx(2 * macs_per_token + 4.0 * 2 * 64 * 1));
  CHECK(forward_flops(c, 10) == doctest::Approx(2 * macs_per_token * 10 + 4.0 * 2 * 64 * 55));
  CHECK(decode_step_flops(c, 9) == doctest::Approx(2 * macs_per_token + 4.0 * 2 * 64 * 10));
  CHECK(model_seconds(kRefModelFlopsPerSecond) == doctest::Approx(kBudgetMargin));
}

}  // namespace
}  // namespace kvlab::core_work_budget_test
