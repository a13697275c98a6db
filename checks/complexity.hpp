// complexity (003 Q5): options, what it measures, and its testable steps. See complexity.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "framework/spec.hpp"
#include "model/generate.hpp"

namespace kvlab::checks::complexity {

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

/// A FLOP count walked call by call, beside its closed form (exact in 128 bits, rounded to double).
struct CountedFlops {
  std::uint64_t counted = 0;
  double formula = 0;  ///< the closed form, rounded to double
  bool equal = true;   ///< counted == the closed form, compared exactly in 128 bits
};

/// One prompt length N of the sweep (d/32 .. 32d, by factors of 4): FLOPs of one layer.
struct ComplexityRow {
  std::int64_t n = 0;
  CountedFlops prefill;  ///< prefill of N tokens
  CountedFlops decode;   ///< one cached decode step at t = N
  CountedFlops naive;    ///< naive generation of T tokens after N
  CountedFlops cached;   ///< cached generation of T tokens after N
};

/// Which count a local exponent is taken of.
enum class ComplexityCurve { prefill, naive, cached };

/// A local exponent log2(C(2x) / C(x)): the counts at x and 2x and their closed forms.
struct ExponentRow {
  ComplexityCurve curve = ComplexityCurve::prefill;
  std::int64_t x = 0;            ///< N for prefill, N + T (N = T) for the generations
  double counted_x = 0, counted_2x = 0;
  double formula_x = 0, formula_2x = 0;
  double linear_share = 0;       ///< the linear layers' (24d² per position) share of the closed form at x
};

/// What complexity measured: FLOP counts and their closed forms.
struct ComplexityMeasured {
  ComplexityOptions options;
  std::vector<ComplexityRow> sweep;
  std::vector<ExponentRow> exponents;  ///< prefill at d/8 and 32d; naive, cached at max(2, d/8) and d
  std::uint64_t naive_at_d = 0, cached_at_d = 0;  ///< generation totals at N = d (the metric)
};

/// Walks the schedules and counts (`parts` or the library's). Throws InputError naming
/// --d-model, --new-tokens when a count exceeds 64 bits.
ComplexityMeasured measure_complexity(const ComplexityOptions& o, const ComplexityParts& parts = {});
/// The verdict rows: four counts against their closed forms (exact), then the local exponents
/// against the closed forms' (rounding of two doubles through log2), with the document's orders
/// flagged as E18 where its dropped d² terms dominate.
std::vector<Expectation> judge_complexity(const ComplexityMeasured& m);

/// The check as data (registered as `complexity`).
const CheckDef<ComplexityOptions, ComplexityMeasured>& complexity_check();

/// Runs the check with `parts`. Throws InputError on out-of-range options.
Result run_complexity(const ComplexityOptions& o, const RunContext& ctx, const ComplexityParts& parts = {});

}  // namespace kvlab::checks::complexity

namespace kvlab::checks {
using namespace complexity;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
