// bench-generate (004 §B.5): options and the testable entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/generate.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct BenchGenerateOptions {
  bool long_sweep = false;  ///< --long: 004 §B.5's lengths 64, 128, 255 and a sweep 16 .. 255
  int repeats = 3;          ///< timing runs per length and generator (median)
};

/// The injectable piece: the generation schedules. Unit tests pass a "cached" generator that
/// recomputes the prefix every step.
struct BenchGenerateParts {
  std::function<std::vector<ForwardCall>(GenerationMode, std::int64_t, std::int64_t, std::optional<std::int64_t>)> schedule;
};

/// Generation lengths the check runs: {32, 64} by default, the long sweep with --long.
std::vector<int> bench_lengths(bool long_sweep);

/// Runs the check. Throws InputError on out-of-range options.
Result run_bench_generate(const BenchGenerateOptions& o, const RunContext& ctx, const BenchGenerateParts& parts = {});

}  // namespace kvlab::checks
