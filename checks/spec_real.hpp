// spec-real (000 §7.4, §9.2; Leviathan et al. 2023 Table 3): options, injectable parts, what it
// measures and its testable steps (see spec_real.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"
#include "spec/loop.hpp"
#include "spec/positional.hpp"
#include "support/spec_exactness.hpp"

namespace kvlab::checks::spec_real {

struct SpecRealOptions {
  int prompts = 3;            ///< prompts from the validation text, per K and temperature
  int new_tokens = 24;        ///< tokens generated per prompt
  int alpha_windows = 4;      ///< validation windows of block_size bytes for the teacher-forced α
  /// Sequences per sampler of the exactness test at temperature 1 (spec-exact's test on the pair:
  /// 2 tokens after the first prompt, soft draft K = 1 and 2, greedy draft K = 2).
  std::int64_t exact_samples = 200;
  bool long_run = false;      ///< at least 8 prompts × 64 tokens, 64 α windows, 2000 exactness samples
  std::optional<std::string> target;    ///< checkpoint; unset: data/weights/target.safetensors
  std::optional<std::string> draft;     ///< checkpoint; unset: data/weights/draft.safetensors
  std::optional<std::string> fortunes;  ///< text directory; unset: /usr/share/games/fortunes
};

/// The pair and the text a run uses; tests inject small random ones.
struct SpecRealInputs {
  std::optional<MiniGPT<float>> target, draft;
  std::vector<int> validation;
  std::string skipped;  ///< non-empty: skip with this reason (what an absent default gives)
};

/// Parts a unit test may replace with broken versions.
struct SpecRealParts {
  /// E[τ] from per-position acceptance probabilities (spec/positional.hpp).
  std::function<double(std::span<const double>)> expected_tokens = [](std::span<const double> a) {
    return spec::expected_tokens_positional(a);
  };
  /// Bugs injected into the speculative loop.
  spec::SpecFaults faults;
  /// When set, used instead of loading the checkpoints and the text.
  std::function<SpecRealInputs()> inputs;
};

/// One K's runs at one temperature: the loop's counts and seconds summed over the prompts, and
/// what the check adds from the step traces (sums over verified positions and over steps).
struct SpecRealK {
  int k = 0;
  spec::SpecStats stats;
  double sum_a = 0.0, var_a = 0.0;  ///< Σ exact acceptance a and Σ a(1 − a) over verified positions
  double sum_m = 0.0, var_m = 0.0;  ///< Σ E[τ | drafts] and Σ Var[τ | drafts] over steps
  double seconds_total = 0.0;       ///< wall-clock of the runs (shown, never judged)
  std::int64_t greedy_mismatches = 0;  ///< temperature 0: tokens differing from the greedy decoding
  double alpha() const;             ///< accepted / verified
  double alpha_exact() const;       ///< sum_a / verified
  double tokens_per_step() const;   ///< emitted / steps
  double predicted_per_step() const;  ///< sum_m / steps
};

/// One temperature's runs: the target alone (the baseline, seconds) and K = 1..8.
struct SpecRealTemperature {
  double temperature = 1.0;
  double seconds_baseline = 0.0;
  std::vector<SpecRealK> ks;
};

/// Teacher-forced α over validation windows: per window, the mean over its positions of
/// Σ_x min(p̃, q̃) (temperature 1) or [argmax p = argmax q] (temperature 0).
struct TeacherAlpha {
  double mean1 = 0, se1 = 0, mean0 = 0, se0 = 0;
  std::int64_t positions = 0, windows = 0;
};

/// What spec-real measured, or why it skipped (then nothing else is set).
struct SpecRealMeasured {
  SpecRealOptions options;  ///< as run (after --long)
  RunContext context;
  std::string skipped;
  ModelConfig target, draft;
  double target_params = 0, draft_params = 0;
  TeacherAlpha teacher;
  std::vector<SpecRealTemperature> temperatures;  ///< 1, then 0 (greedy)
  ExactnessMeasured exactness;                    ///< temperature 1
  double seconds_exactness = 0.0;
};

/// Loads the pair and the text (or parts.inputs), then measures. Throws InputError for a named
/// path that is absent, a malformed checkpoint (naming the option), sizes beyond the pair's
/// block_size, or a run over the work budget.
SpecRealMeasured measure_spec_real(const SpecRealOptions& o, const RunContext& ctx, const SpecRealParts& parts = {});
/// The verdict rows: per temperature and K, α observed and tokens per step against their exact
/// expectations (Freedman, family false alarm 1e-4 over 38 rows; a K whose bound cannot fail is
/// judged only in the pooled row), greedy output = target's, and the exactness test's rows.
std::vector<Expectation> judge_spec_real(const SpecRealMeasured& m);

/// The check as data (registered as `spec-real`).
const CheckDef<SpecRealOptions, SpecRealMeasured>& spec_real_check();

/// Runs the check; "skipped" (Result::skipped) when a default checkpoint or the default text is
/// absent. Throws InputError for options out of range and the cases measure_spec_real names.
Result run_spec_real(const SpecRealOptions& opts, const RunContext& ctx, const SpecRealParts& parts = {});

}  // namespace kvlab::checks::spec_real

namespace kvlab::checks {
using namespace spec_real;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
