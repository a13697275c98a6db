// chunked-prefill (checks/chunked_prefill.cpp): passes with kvlab's chunker, fails with one that
// drops a chunk; its claim names this run's figures; its plot shows the stall; its judge on
// hand-made runs. The simulator itself: tests/lib/serve/serve_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "checks/chunked_prefill.hpp"
#include "../test_util.hpp"

namespace check_chunked_prefill_test {

namespace {

using namespace kvlab;
using namespace kvlab::serve;
using kvlab::test::input_error;

using kvlab::test::row_fails;

bool row_fails(const std::vector<Expectation>& rows, const std::string& part) {
  Result r;
  r.expectations = rows;
  return row_fails(r, part);
}

}  // namespace

TEST_CASE("chunked-prefill: passes, and fails with a chunker that drops a chunk") {
  using namespace kvlab::checks;
  const RunContext ctx;
  ChunkedPrefillOptions o;
  const Result ok = run_chunked_prefill(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("stall_s_sim_whole") >= 0.1);
  CHECK(ok.metric_value("stall_s_sim_chunked") < ok.metric_value("stall_s_sim_whole"));

  ChunkedPrefillParts drops;  // skips every prompt's second chunk: progress jumps, nothing computed
  drops.chunker = [](const std::vector<PendingPrefill>& p, std::uint64_t budget) {
    auto plan = fcfs_chunker(p, budget);
    for (auto& c : plan)
      if (c.start == budget) c.start += c.tokens, c.tokens = 0;
    return plan;
  };
  const Result dropped = run_chunked_prefill(o, ctx, drops);
  CHECK_FALSE(dropped.passed());
  CHECK(row_fails(dropped, "chunked: prompt tokens computed"));

  ChunkedPrefillParts empty_chunks;  // plans an empty chunk for every pending request first
  empty_chunks.chunker = [](const std::vector<PendingPrefill>& p, std::uint64_t budget) {
    std::vector<ChunkPlan> out;
    for (const auto& q : p) out.push_back({q.request, q.done, 0});
    auto plan = fcfs_chunker(p, budget);
    out.insert(out.end(), plan.begin(), plan.end());
    return out;
  };
  const Result same = run_chunked_prefill(o, ctx, empty_chunks);
  CHECK(same.passed());
  CHECK(same.metric_value("stall_s_sim_chunked") == ok.metric_value("stall_s_sim_chunked"));

  o.chunk = 0;
  CHECK(input_error([&] { run_chunked_prefill(o, ctx); }).find("--chunk") != std::string::npos);
  o = ChunkedPrefillOptions{};
  o.decoder_output = 2;  // decoders done long before the prompt's prefill ends
  CHECK(input_error([&] { run_chunked_prefill(o, ctx); }).find("--decoder-output") != std::string::npos);
}

TEST_CASE("chunked-prefill: the claim states this run's prompt and chunks; the course's figure only at its options") {
  using namespace kvlab::checks;
  const RunContext ctx;
  const Result course = run_chunked_prefill({}, ctx);
  CHECK(course.claim.find("4 chunks × 1024") != std::string::npos);
  CHECK(course.claim.find("100+ ms") != std::string::npos);

  ChunkedPrefillOptions o;
  o.chunk = 512;
  const Result eight = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(eight.claim.find("4096-token prompt") != std::string::npos, eight.claim);
  CHECK_MESSAGE(eight.claim.find("8 chunks of 512") != std::string::npos, eight.claim);
  CHECK_MESSAGE(eight.claim.find("split into 4 chunks × 1024") == std::string::npos, eight.claim);
  for (const auto& e : eight.expectations) CHECK_FALSE(e.stated.has_value());

  o = ChunkedPrefillOptions{};
  o.long_prompt = 3000;
  o.chunk = 1024;
  const Result three = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(three.claim.find("3000-token prompt") != std::string::npos, three.claim);
  CHECK_MESSAGE(three.claim.find("3 chunks of 1024 (the last 952)") != std::string::npos, three.claim);

  o.chunk = 4096;
  const Result one = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(one.claim.find("is one chunk") != std::string::npos, one.claim);
  CHECK_MESSAGE(one.claim.find("stall shrinks and") == std::string::npos, one.claim);
}

TEST_CASE("chunked-prefill: its first plot shows the decode stall that chunking removes") {
  using namespace kvlab::checks;
  const Result r = run_chunked_prefill({}, RunContext{});
  REQUIRE_FALSE(r.plots.empty());
  const Plot& stall = r.plots.front();
  CHECK(stall.title.find("stall") != std::string::npos);
  REQUIRE(stall.series.size() >= 2);
  const auto peak = [](const PlotSeries& s) { return *std::max_element(s.y.begin(), s.y.end()); };
  // The plotted step times are the simulated ones: the tallest is each run's longest stall.
  CHECK(peak(stall.series[0]) == doctest::Approx(r.metric_value("stall_s_sim_whole") * 1e3));
  CHECK(peak(stall.series[1]) == doctest::Approx(r.metric_value("stall_s_sim_chunked") * 1e3));
  CHECK(peak(stall.series[0]) > 2.0 * peak(stall.series[1]));
  // Time runs from the long prompt's arrival (x = 0) or just before to after its prefill.
  CHECK(*std::min_element(stall.series[0].x.begin(), stall.series[0].x.end()) <= 0.0);
  CHECK(*std::max_element(stall.series[0].x.begin(), stall.series[0].x.end()) > peak(stall.series[0]));
}

TEST_CASE("chunked-prefill: judge fails a stall outside its roofline bounds, a NaN stall, a lost token, a wrong chunk count") {
  using namespace kvlab::checks;
  const ChunkedPrefillMeasured good = measure_chunked_prefill({});
  const auto rows = judge_chunked_prefill(good);
  REQUIRE(rows.size() == 10);
  for (const Expectation& e : rows) CHECK_MESSAGE(e.holds(), e.quantity);

  ChunkedPrefillMeasured off = good;
  off.whole.stall_s *= 1.5;  // above the prompt + every decoder at its longest context
  CHECK(row_fails(judge_chunked_prefill(off), "no chunking: longest decode stall"));
  off = good;
  off.chunked.stall_s = good.whole.stall_s;  // chunking that did not shorten the step
  CHECK(row_fails(judge_chunked_prefill(off), "chunked (1024 per step)"));
  CHECK(row_fails(judge_chunked_prefill(off), "chunked stall"));
  off = good;
  off.whole.stall_s = std::numeric_limits<double>::quiet_NaN();
  CHECK(row_fails(judge_chunked_prefill(off), "no chunking: longest decode stall"));
  off = good;
  off.chunked.stall_s = std::numeric_limits<double>::quiet_NaN();
  CHECK(row_fails(judge_chunked_prefill(off), "chunked (1024 per step)"));
  off = good;
  off.chunked.sim.requests.back().prefill_chunks = 5;
  CHECK(row_fails(judge_chunked_prefill(off), "chunks the 4096-token prompt"));
  off = good;
  off.whole.sim.requests.front().tokens_emitted -= 1;
  CHECK(row_fails(judge_chunked_prefill(off), "no chunking: tokens emitted"));
  off = good;
  off.chunked.sum.throughput_tok_s = good.whole.sum.throughput_tok_s * 0.99;
  CHECK(row_fails(judge_chunked_prefill(off), "throughput kept"));
}

}  // namespace check_chunked_prefill_test
