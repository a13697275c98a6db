// spec-residual: options, injectable parts and the pure run function (see spec_residual.cpp),
// declared for the unit tests that break a part and expect the check to fail.
#pragma once

#include <cstdint>

#include "spec/acceptance.hpp"
#include "spec/step_law.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecResidualOptions {
  std::int64_t pairs = 2000;  ///< seeded random (p, q) pairs besides the edge cases
  int vocab = 8;              ///< V of the random pairs and the edge cases
};

/// The parts a unit test may replace with a broken version.
struct SpecResidualParts {
  /// The residual p' drawn from on a rejection (000 §7.3).
  spec::ResidualFn residual = spec::residual_distribution;
  /// The acceptance probability (000 §7.1 step 3).
  spec::AcceptRule accept = spec::exact_accept_probability;
};

/// Runs the check. Throws InputError for invalid options (naming --pairs, --vocab).
Result run_spec_residual(const SpecResidualOptions& opts, const RunContext& ctx,
                         const SpecResidualParts& parts = {});

}  // namespace kvlab::checks
