// continuous-batching: options, injectable parts and the pure run function (continuous_batching.cpp),
// declared for tests/test_serve.cpp, which injects a static scheduler that secretly refills.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "serve/simulator.hpp"
#include "framework/check.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_continuous_batching(const ContinuousBatchingOptions& o, const RunContext& ctx,
                               const ContinuousBatchingParts& parts = {});

}  // namespace kvlab::checks
