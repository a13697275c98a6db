// paged-vs-contiguous (checks/paged_vs_contiguous.cpp): passes with kvlab's paged pool, fails when
// the gather ignores the block table; its judge on hand-made runs. The device path:
// tests/checks/device_checks_test.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "checks/paged_vs_contiguous.hpp"
#include "../test_util.hpp"

namespace check_paged_vs_contiguous_test {

using namespace kvlab;

TEST_CASE("paged-vs-contiguous passes (f64, f32), and fails when the gather ignores the block table") {
  using namespace kvlab::checks;
  CHECK(run_paged_vs_contiguous({}, {}).passed());
  CHECK(run_paged_vs_contiguous({}, {.dtype = Dtype::f32}).passed());
  PagedVsContiguousParts broken;
  broken.faults.gather_ignores_table = true;
  CHECK_FALSE(run_paged_vs_contiguous({}, {}, broken).passed());
  CHECK(test::input_error([] { run_paged_vs_contiguous({.kv_heads = 3}, {}); }).find("--kv-heads") != std::string::npos);
}

TEST_CASE("paged-vs-contiguous: judge on hand-made runs: a logit off by more than the bound, a block too many or an audit problem fails") {
  checks::PagedVsContiguousMeasured m;  // defaults: 8 + 24 tokens
  m.config.n_layer = 2, m.config.d_model = 64, m.config.n_head = 8, m.config.n_kv_head = 2, m.config.head_dim = 8;
  for (int bs : {1, 16, 33}) m.runs.push_back({.block_size = bs, .blocks_per_sequence = (32 + bs - 1) / bs,
                                               .blocks_held = 2 * ((32 + bs - 1) / bs)});
  auto rows = checks::judge_paged_vs_contiguous(m);
  REQUIRE(rows.size() == 7);  // per block size: logits, blocks; then the audit
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[4].quantity.find("33 (> sequence)") != std::string::npos);
  m.runs[1].max_abs_diff = 2 * rows[2].tolerance;
  CHECK_FALSE(checks::judge_paged_vs_contiguous(m)[2].holds());
  m.runs[1].max_abs_diff = std::nan("");  // a NaN never passes
  CHECK_FALSE(checks::judge_paged_vs_contiguous(m)[2].holds());
  m.runs[1].max_abs_diff = 0;
  m.runs[2].blocks_held = 3;
  CHECK_FALSE(checks::judge_paged_vs_contiguous(m)[5].holds());
  m.runs[2].blocks_held = 2;
  m.audit_problems = {"block size 16: block 5 in two tables with ref count 1"};
  CHECK_FALSE(checks::judge_paged_vs_contiguous(m)[6].holds());
  m.context.device = Device::cuda;  // the device runs have no block counts or audit
  CHECK(checks::judge_paged_vs_contiguous(m).size() == 3);
}

}  // namespace check_paged_vs_contiguous_test
