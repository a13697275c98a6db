// spec-greedy: options, injectable faults and the pure run function (see spec_greedy.cpp).
#pragma once

#include "spec/loop.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecGreedyOptions {
  int prompts = 4;       ///< seeded prompts
  int new_tokens = 24;   ///< tokens generated per prompt
  int k = 4;             ///< draft tokens per step
};

/// Runs the check. Throws InputError for invalid options (naming --prompts, --new-tokens, --k).
/// `faults` are passed to the speculative loop (the unit tests break it on purpose).
Result run_spec_greedy(const SpecGreedyOptions& opts, const RunContext& ctx,
                       const spec::SpecFaults& faults = {});

}  // namespace kvlab::checks
