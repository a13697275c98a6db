// spec-exact: options and the pure run function (see spec_exact.cpp); `faults` break the loop on
// purpose for the unit tests.
#pragma once

#include <cstdint>

#include "spec/loop.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

struct SpecExactOptions {
  std::int64_t samples = 5'000;  ///< generated sequences per sampler
  int new_tokens = 2;             ///< tokens per sequence (V^new_tokens outcomes)
  int k = 2;                      ///< draft tokens per step
  double temperature = 0.1;       ///< the target's (and the soft draft's) temperature
};

Result run_spec_exact(const SpecExactOptions& opts, const RunContext& ctx,
                      const spec::SpecFaults& faults = {});

}  // namespace kvlab::checks
