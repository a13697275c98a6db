// continuous-batching (checks/continuous_batching.cpp): passes with kvlab's simulator, fails with a
// static scheduler that secretly refills, one that loses tokens, pads or pauses; its judge on
// hand-made runs. The simulator itself: tests/lib/serve/serve_test.cpp.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "checks/continuous_batching.hpp"

namespace check_continuous_batching_test {

namespace {

using namespace kvlab;
using namespace kvlab::serve;
using kvlab::test::input_error;

}  // namespace

TEST_CASE("continuous-batching: passes, and fails with a static scheduler that secretly refills") {
  using namespace kvlab::checks;
  const RunContext ctx;
  ContinuousBatchingOptions o;
  const Result ok = run_continuous_batching(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("ttft_mean_s_sim_continuous") < ok.metric_value("ttft_mean_s_sim_static"));

  ContinuousBatchingParts refills;
  refills.simulate = [](const std::vector<Request>& t, const SimConfig& c, const StepTimeModel& m, const SimParts& p) {
    SimConfig secretly = c;
    if (c.policy == Policy::static_batching) secretly.policy = Policy::continuous;
    return simulate(t, secretly, m, p);
  };
  const Result refilled = run_continuous_batching(o, ctx, refills);
  CHECK_FALSE(refilled.passed());
  CHECK(kvlab::test::row_fails(refilled, "static: steps where a request joins"));

  ContinuousBatchingParts loses_tokens;  // a scheduler that drops each request's last token
  loses_tokens.simulate = [](const std::vector<Request>& t, const SimConfig& c, const StepTimeModel& m, const SimParts& p) {
    std::vector<Request> shorter = t;
    for (auto& q : shorter) q.output_tokens = std::max<std::uint64_t>(1, q.output_tokens - 1);
    return simulate(shorter, c, m, p);
  };
  const Result lost = run_continuous_batching(o, ctx, loses_tokens);
  CHECK_FALSE(lost.passed());
  CHECK(kvlab::test::row_fails(lost, "continuous: tokens emitted"));

  // 003 part 6's "zero idle": a continuous scheduler that keeps a finished request's slot stepping
  // once, or pauses a millisecond while a request waits, fails.
  ContinuousBatchingParts pads;
  pads.simulate = [](const std::vector<Request>& t, const SimConfig& c, const StepTimeModel& m, const SimParts& p) {
    SimResult r = simulate(t, c, m, p);
    if (c.policy == Policy::continuous) r.steps.at(1).padding += 1;
    return r;
  };
  CHECK(kvlab::test::row_fails(run_continuous_batching(o, ctx, pads), "continuous: decodes spent on finished requests"));
  ContinuousBatchingParts pauses;  // admits one request that arrived at an idle engine 1 ms late
  pauses.simulate = [](const std::vector<Request>& t, const SimConfig& c, const StepTimeModel& m, const SimParts& p) {
    SimResult r = simulate(t, c, m, p);
    if (c.policy != Policy::continuous) return r;
    for (auto& q : r.requests)
      if (q.admitted_s == q.arrival_s) {  // it started a step on arrival (an idle engine)
        for (auto& s : r.steps)
          if (s.start_s >= q.admitted_s) s.start_s += 1e-3;
        for (auto& other : r.requests)
          if (other.admitted_s >= q.admitted_s) other.admitted_s += 1e-3;
        break;
      }
    return r;
  };
  CHECK(kvlab::test::row_fails(run_continuous_batching(o, ctx, pauses), "continuous: engine idle time while a request waits"));

  o.rate = 0;
  CHECK(input_error([&] { run_continuous_batching(o, ctx); }).find("--rate") != std::string::npos);
  o = ContinuousBatchingOptions{};
  o.gpu = "nosuch";
  CHECK(input_error([&] { run_continuous_batching(o, ctx); }).find("--gpu") != std::string::npos);
}

TEST_CASE("continuous-batching: judge on hand-made runs: a join into a running static batch or a held-back response fails") {
  using namespace kvlab::checks;
  ContinuousBatchingMeasured m;
  m.trace = {{.id = 0, .arrival_s = 0.0, .prompt_tokens = 4, .output_tokens = 2}};
  m.trace_stats.prompt_total = 4;
  for (SimResult* r : {&m.static_run, &m.continuous_run}) {
    r->requests = {{.id = 0, .arrival_s = 0.0, .prompt_tokens = 4, .output_tokens = 2, .admitted_s = 0.0,
                    .first_token_s = 1.0, .last_token_s = 2.0, .returned_s = 2.0, .max_gap_s = 1.0,
                    .tokens_emitted = 2, .prefill_tokens = 4}};
    r->steps = {{.start_s = 0.0, .duration_s = 1.0, .admitted = 1}, {.start_s = 1.0, .duration_s = 1.0, .running_before = 1}};
    r->makespan_s = r->busy_s = 2.0;
  }
  auto all_hold = [](const std::vector<Expectation>& rows) {
    return std::all_of(rows.begin(), rows.end(), [](const Expectation& e) { return e.holds(); });
  };
  CHECK(all_hold(judge_continuous_batching(m)));
  m.static_run.steps[1].admitted = 1;  // a request joined while a member was unfinished
  CHECK_FALSE(all_hold(judge_continuous_batching(m)));
  m.static_run.steps[1].admitted = 0;
  m.continuous_run.requests[0].returned_s = 3.0;  // returned a step after its last token
  CHECK_FALSE(all_hold(judge_continuous_batching(m)));
}

}  // namespace check_continuous_batching_test
