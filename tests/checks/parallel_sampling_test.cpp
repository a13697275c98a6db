// parallel-sampling (checks/parallel_sampling.cpp): passes with kvlab's paged pool, fails with a
// broken one; its judge on hand-made counts.
#include <doctest/doctest.h>

#include <cmath>

#include "checks/parallel_sampling.hpp"
#include "../test_util.hpp"

namespace check_parallel_sampling_test {

using namespace kvlab;

TEST_CASE("parallel-sampling passes, and fails with COW in place or a ref count not decremented") {
  using namespace kvlab::checks;
  CHECK(run_parallel_sampling({}, {}).passed());
  CHECK(run_parallel_sampling({.prompt = 32}, {}).passed());  // no partial block: no copies
  PagedFaults faults;
  faults.cow_in_place = true;
  CHECK_FALSE(run_parallel_sampling({}, {}, {faults}).passed());
  faults = {};
  faults.free_keeps_ref = true;
  CHECK_FALSE(run_parallel_sampling({}, {}, {faults}).passed());
  CHECK(test::input_error([] { run_parallel_sampling({.samples = 1}, {}); }).find("--samples") != std::string::npos);
}

TEST_CASE("parallel-sampling: judge holds the formulas exactly and the logits within the rounding bound") {
  checks::ParallelSamplingMeasured m;  // defaults: n 4, P 40, G 24, B 16: F 2, 4 blocks a copy
  m.config.n_layer = 2, m.config.d_model = 64, m.config.n_head = 8, m.config.n_kv_head = 2, m.config.head_dim = 8;
  m.blocks_in_use = 2 + 4 * (4 - 2);
  m.blocks_common = 2;
  m.cow_copies = 3;
  m.blocks_free_at_end = 16;
  m.max_abs_diff = 0.0;
  auto holds = [](const std::vector<Expectation>& rows) {
    for (const Expectation& e : rows)
      if (!e.holds()) return false;
    return true;
  };
  CHECK(holds(checks::judge_parallel_sampling(m)));
  m.blocks_in_use += 1;  // one block too many
  CHECK_FALSE(checks::judge_parallel_sampling(m)[0].holds());
  m.blocks_in_use -= 1;
  m.cow_copies = 4;  // the last writer copied too
  CHECK_FALSE(checks::judge_parallel_sampling(m)[2].holds());
  m.cow_copies = 3;
  m.max_abs_diff = std::nan("");  // a NaN never passes
  CHECK_FALSE(checks::judge_parallel_sampling(m)[3].holds());
  m.max_abs_diff = 0.0;
  m.end_problems = {"block 3: ref count 1, in no table"};
  CHECK_FALSE(checks::judge_parallel_sampling(m)[4].holds());
}

}  // namespace check_parallel_sampling_test
