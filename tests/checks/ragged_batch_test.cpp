// ragged-batch (checks/ragged_batch.cpp): the check passing, failing with an MLP that normalizes
// across the batch or attention over the flattened rows, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <vector>

#include "checks/ragged_batch.hpp"
#include "core/error.hpp"
#include "model/ragged.hpp"
#include "../test_util.hpp"

namespace check_ragged_batch_test {

using namespace kvlab;
using kvlab::test::input_error;

TEST_CASE("ragged-batch passes, and fails with an MLP that normalizes across the batch or attention over the flattened rows") {
  checks::RunContext ctx;
  checks::RaggedBatchOptions o;
  const Result ok = checks::run_ragged_batch(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_mlp") == 0.0);

  checks::RaggedBatchParts batch_norm;  // subtracts the mean over all rows of the batch first
  batch_norm.mlp = [](const BlockWeights<double>& b, const Mat<double>& x) {
    Mat<double> centred = x.rowwise() - x.colwise().mean();
    return mlp_sublayer(b, centred);
  };
  CHECK_FALSE(checks::run_ragged_batch(o, ctx, batch_norm).passed());

  checks::RaggedBatchParts one_sequence;  // attends across requests
  one_sequence.batched_attention = [](const BlockWeights<double>& b, const ModelConfig& c, const Mat<double>& x,
                                      const std::vector<int>&) { return attention_sublayer(b, c, x); };
  CHECK_FALSE(checks::run_ragged_batch(o, ctx, one_sequence).passed());

  o.requests = 1;  // one request: nothing to mix
  CHECK(checks::run_ragged_batch(o, ctx).passed());
  o.max_len = 0;
  CHECK(input_error([&] { checks::run_ragged_batch(o, ctx); }).find("--max-len") != std::string::npos);
}

TEST_CASE("ragged-batch: judge fails an MLP one ulp off for one request, and a first request that sees another") {
  const checks::RaggedBatchMeasured good = checks::measure_ragged_batch({}, checks::RunContext{});
  REQUIRE(good.requests.size() == 5);
  const auto rows = checks::judge_ragged_batch(good);
  REQUIRE(rows.size() == 3);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::RaggedBatchMeasured off = good;
  off.requests[3].mlp_diff = 0x1.0p-52;  // one request's MLP output one ulp of 1 away from its own
  CHECK_FALSE(checks::judge_ragged_batch(off)[0].holds());
  off = good;
  off.requests[1].block_diff = 1e-3;
  CHECK_FALSE(checks::judge_ragged_batch(off)[1].holds());
  off = good;
  off.requests[0].mixed_diff = 0.5;  // the first request changed too: it attended to rows not its own
  CHECK_FALSE(checks::judge_ragged_batch(off)[2].holds());
}

}  // namespace check_ragged_batch_test
