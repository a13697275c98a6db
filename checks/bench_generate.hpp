// bench-generate (004 §B.5): options, what it measures, and its testable steps. See bench_generate.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "model/generate.hpp"

namespace kvlab::checks::bench_generate {

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

/// One generation length: the work each generator's schedule counts, the closed forms' distance
/// from it, the tokens on which the two outputs differ, and the per-token times (median of the
/// repeats, seconds).
struct BenchLength {
  int n = 0;
  OpCount naive, cached;            ///< counted over the real schedules (count_schedule)
  double positions_gap = 0.0;       ///< worst |counted − closed form| of the positions (both generators)
  double flops_gap = 0.0;           ///< the same for the FLOPs
  double differing = 0.0;           ///< tokens that differ, naive vs cached
  double seconds_per_token_naive = 0.0, seconds_per_token_cached = 0.0;
};

/// What bench-generate measured, per length.
struct BenchGenerateMeasured {
  BenchGenerateOptions options;
  RunContext context;
  ModelConfig config;
  std::vector<BenchLength> lengths;
};

/// Counts, runs and times both generators at every length. Throws InputError on out-of-range
/// options or a --weights model that cannot generate the longest length.
BenchGenerateMeasured measure_bench_generate(const BenchGenerateOptions& o, const RunContext& ctx,
                                             const BenchGenerateParts& parts = {});
/// The verdict rows: positions and FLOPs against the closed forms, and the differing tokens,
/// each exactly 0 (the times are shown, never judged).
std::vector<Expectation> judge_bench_generate(const BenchGenerateMeasured& m);

/// The check as data (registered as `bench-generate`).
const CheckDef<BenchGenerateOptions, BenchGenerateMeasured>& bench_generate_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_bench_generate(const BenchGenerateOptions& o, const RunContext& ctx, const BenchGenerateParts& parts = {});

}  // namespace kvlab::checks::bench_generate

namespace kvlab::checks {
using namespace bench_generate;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
