// spec-speedup: options, injectable parts and the pure run function (see spec_speedup.cpp).
#pragma once

#include <functional>
#include <span>

#include "spec/loop.hpp"
#include "spec/positional.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecSpeedupOptions {
  int prompts = 3;            ///< seeded prompts per K
  int new_tokens = 48;        ///< tokens generated per prompt
  double temperature = 0.2;   ///< target's and draft's sampling temperature
};

/// The parts a unit test may replace with a broken version.
struct SpecSpeedupParts {
  /// E[τ] from per-position acceptance probabilities a_1 .. a_K (spec/positional.hpp); with one α
  /// it is the document's (1 − α^{K+1})/(1 − α).
  std::function<double(std::span<const double>)> expected_tokens = [](std::span<const double> a) {
    return spec::expected_tokens_positional(a);
  };
  /// Bugs injected into the speculative loop (e.g. drop_bonus).
  spec::SpecFaults faults;
};

/// Runs the check over K = 1 .. 8. Throws InputError for invalid options (naming --prompts,
/// --new-tokens, --temperature).
Result run_spec_speedup(const SpecSpeedupOptions& opts, const RunContext& ctx,
                        const SpecSpeedupParts& parts = {});

}  // namespace kvlab::checks
