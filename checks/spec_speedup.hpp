// spec-speedup (000 §7.4, §9.2): options, injectable parts, what it measures and its testable steps
// (see spec_speedup.cpp), declared for the unit tests that break a part and expect it to fail.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "spec/loop.hpp"
#include "spec/positional.hpp"

namespace kvlab::checks::spec_speedup {

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

/// One K's runs over every prompt: the loop's counts and seconds (SpecStats), and what the check
/// adds from the step traces.
struct SpeedupK : spec::SpecStats {
  int k = 0;
  double sum_a = 0.0, var_a = 0.0;      ///< Σ a, Σ a(1 − a) over verified positions, a = Σ min(p̃, q̃)
  double sum_m = 0.0, var_m = 0.0;      ///< Σ E[τ | drafts] (by the part under test), Σ Var[τ | drafts] over steps
  std::vector<double> pos_sum, pos_sq;  ///< [K] per position i: Σ a, Σ a² over the steps reaching i
  std::vector<std::int64_t> pos_n;      ///< [K] steps reaching position i
  double seconds_total = 0.0;           ///< wall-clock of the speculative runs
  double positional_observed = 0.0;     ///< the part's E[τ] at a_1 = .. = a_K = α observed
  double positional_exact = 0.0;        ///< the part's E[τ] at a_1 = .. = a_K = α exact
  double alpha() const { return evaluated > 0 ? static_cast<double>(accepted) / evaluated : 0.0; }
  double alpha_exact() const { return evaluated > 0 ? sum_a / evaluated : 0.0; }
  double predicted_per_step() const { return steps > 0 ? sum_m / steps : 0.0; }
};

/// What spec-speedup measured: K = 1 .. 8 in order, the target alone's seconds, the pair.
struct SpecSpeedupMeasured {
  SpecSpeedupOptions options;
  RunContext context;
  ModelConfig target, draft;
  std::vector<SpeedupK> ks;
  double seconds_baseline = 0.0;  ///< the target alone, one token per forward, all prompts
};

/// Runs the loop for K = 1 .. 8 on every prompt with `parts`. Throws InputError for a block_size
/// too small for the run, or when a bound would cover the whole range of its estimate (naming
/// --prompts, --new-tokens).
SpecSpeedupMeasured measure_spec_speedup(const SpecSpeedupOptions& o, const RunContext& ctx,
                                         const SpecSpeedupParts& parts = {});
/// The verdict rows: per K, α observed and tokens per step within Freedman bounds (a K whose
/// tokens-per-step bound is wider than 1 .. K + 1 is judged with every K in one pooled row); the forward
/// counts exactly; the closed form against the per-position sum; the predicted speedup at the best K.
std::vector<Expectation> judge_spec_speedup(const SpecSpeedupMeasured& m);

/// The check as data (registered as `spec-speedup`).
const CheckDef<SpecSpeedupOptions, SpecSpeedupMeasured>& spec_speedup_check();

/// Runs the check over K = 1 .. 8. Throws InputError for invalid options (naming --prompts,
/// --new-tokens, --temperature).
Result run_spec_speedup(const SpecSpeedupOptions& opts, const RunContext& ctx,
                        const SpecSpeedupParts& parts = {});

}  // namespace kvlab::checks::spec_speedup

namespace kvlab::checks {
using namespace spec_speedup;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
