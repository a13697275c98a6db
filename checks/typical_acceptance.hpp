// typical-acceptance: options, injectable parts and the pure run function (see
// typical_acceptance.cpp).
#pragma once

#include <cstdint>

#include "spec/acceptance.hpp"
#include "spec/step_law.hpp"
#include "spec/typical.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct TypicalAcceptanceOptions {
  std::int64_t samples = 20'000;  ///< Monte Carlo draws per verifier and context
  int contexts = 4;               ///< prompts whose next-token (p, q) pairs are compared
  double temperature = 0.1;       ///< target and draft sampling temperature
  double epsilon = 0.09;          ///< Medusa's posterior_threshold
  double delta = 0.3;             ///< Medusa's posterior_alpha
};

/// The verifier under test as "typical acceptance": its acceptance rule and the token it emits on
/// a rejection. Empty members mean Medusa's (typical_accept_rule with the options' epsilon and
/// delta; greedy_replacement). The unit tests swap in rejection sampling to show the check fails.
struct TypicalAcceptanceParts {
  spec::AcceptRule rule;
  spec::ResidualFn replacement;
};

/// Runs the check. Throws InputError naming the option for invalid options or a run too small
/// for its comparisons to fail.
Result run_typical_acceptance(const TypicalAcceptanceOptions& opts, const RunContext& ctx,
                              const TypicalAcceptanceParts& parts = {});

}  // namespace kvlab::checks
