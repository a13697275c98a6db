// complexity (003 Q5): options and the testable entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/generate.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct ComplexityOptions {
  int d_model = 4096;   ///< model width d (003 Q5's 7B example), one MHA layer
  int new_tokens = 128; ///< T generated after each prompt of the sweep
};

/// The injectable pieces: the generation schedules and the per-call FLOP count. Unit tests pass
/// a "cached" schedule that recomputes the prefix, and a count that forgets the causal mask.
struct ComplexityParts {
  std::function<std::vector<ForwardCall>(GenerationMode, std::int64_t, std::int64_t, std::optional<std::int64_t>)> schedule;
  std::function<OpCount(const ModelConfig&, std::int64_t, std::int64_t)> count;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_complexity(const ComplexityOptions& o, const RunContext& ctx, const ComplexityParts& parts = {});

}  // namespace kvlab::checks
