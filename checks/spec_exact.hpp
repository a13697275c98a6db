// spec-exact (000 §7.6, §7.3, §A.2 [e]): options, what it measures and its testable steps (see
// spec_exact.cpp); the exactness test itself is support/spec_exactness.hpp.
#pragma once

#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "spec/loop.hpp"
#include "support/spec_exactness.hpp"

namespace kvlab::checks::spec_exact {

/// --samples, --new-tokens, --k, --temperature: the exactness test's own settings.
using SpecExactOptions = ExactnessOptions;

/// What spec-exact measured: the pair it ran on, the prompt, and the exactness test's fits.
struct SpecExactMeasured {
  SpecExactOptions options;
  RunContext context;
  ModelConfig target, draft;
  ExactnessMeasured exactness;
};

/// Runs the exactness test on the seeded random pair (V = 8), or on ctx.weights (target) and
/// ctx.draft_weights (draft) given together (same vocabulary); `faults` go to the loop. Throws
/// InputError for a run whose TV bound covers [0, 1], V^N over 2^20 outcomes, or a bad pair.
SpecExactMeasured measure_spec_exact(const SpecExactOptions& o, const RunContext& ctx,
                                     const spec::SpecFaults& faults = {});
/// The verdict rows: per sampler TV below the Bretagnolle–Huber–Carol bound and χ² below its
/// critical value (family false alarm 1e-4 over the 8 rows).
std::vector<Expectation> judge_spec_exact(const SpecExactMeasured& m);

/// The check as data (registered as `spec-exact`).
const CheckDef<SpecExactOptions, SpecExactMeasured>& spec_exact_check();

/// Runs the check. Throws InputError for invalid options (naming --samples, --new-tokens, --k,
/// --temperature) and the cases measure_spec_exact names.
Result run_spec_exact(const SpecExactOptions& opts, const RunContext& ctx, const spec::SpecFaults& faults = {});

}  // namespace kvlab::checks::spec_exact

namespace kvlab::checks {
using namespace spec_exact;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
