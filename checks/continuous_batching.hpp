// continuous-batching: options, injectable parts, what it measures and its testable steps
// (continuous_batching.cpp); its test injects a static scheduler that secretly refills.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cost/premises.hpp"
#include "framework/spec.hpp"
#include "io/catalogue.hpp"
#include "serve/simulator.hpp"
#include "serve/trace.hpp"

namespace kvlab::checks::continuous_batching {

struct ContinuousBatchingOptions {
  std::int64_t requests = 200;  ///< --requests: trace length (--long: 2000)
  double rate = 2.0;            ///< --rate: Poisson arrivals, requests/s
  std::int64_t max_batch = 32;  ///< --max-batch: static batch size = continuous's running limit
  std::string model = premises::kModel7b, gpu = premises::kGpu;
  bool long_run = false;        ///< --long: 2000 requests, full series tables, progress bar
};

struct ContinuousBatchingParts {
  /// The simulator; a test swaps in one whose static scheduler refills its batch.
  std::function<serve::SimResult(const std::vector<serve::Request>&, const serve::SimConfig&,
                                 const serve::StepTimeModel&, const serve::SimParts&)>
      simulate = [](const std::vector<serve::Request>& t, const serve::SimConfig& c,
                    const serve::StepTimeModel& m, const serve::SimParts& p) { return serve::simulate(t, c, m, p); };
};

/// What continuous-batching measured: the trace, the engine it ran on and both schedulers' runs.
struct ContinuousBatchingMeasured {
  ContinuousBatchingOptions options;
  RunContext context;
  ModelSpec model;                       ///< the catalogue model whose cache is simulated
  GpuSpec gpu;
  std::vector<serve::Request> trace;
  serve::TraceStats trace_stats;
  std::uint64_t kv_tokens = 0;           ///< token slots of KV memory (paged)
  serve::SimResult static_run, continuous_run;
};

/// Generates the trace and simulates both schedulers. Throws InputError naming the option for an
/// unknown --model/--gpu or one that leaves no room for a sequence next to the weights.
ContinuousBatchingMeasured measure_continuous_batching(const ContinuousBatchingOptions& o, const RunContext& ctx,
                                                       const ContinuousBatchingParts& parts = {});
/// The verdict rows: exact accounting of both runs, the schedulers' semantics read off the step
/// series, zero padding and zero idle while a request waits, and the three comparisons on this trace.
std::vector<Expectation> judge_continuous_batching(const ContinuousBatchingMeasured& m);

/// The check as data (registered as `continuous-batching`).
const CheckDef<ContinuousBatchingOptions, ContinuousBatchingMeasured>& continuous_batching_check();

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_continuous_batching(const ContinuousBatchingOptions& o, const RunContext& ctx,
                               const ContinuousBatchingParts& parts = {});

}  // namespace kvlab::checks::continuous_batching

namespace kvlab::checks {
using namespace continuous_batching;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
