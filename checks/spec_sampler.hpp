// spec-sampler (000 §7.5): options, injectable parts, what it measures and its testable steps
// (see spec_sampler.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "framework/spec.hpp"
#include "spec/loop.hpp"

namespace kvlab::checks::spec_sampler {

struct SpecSamplerOptions {
  std::int64_t samples = 1'200;  ///< generated 2-token sequences per draft sampler
  double temperature = 0.1;      ///< the target's temperature
  int top_k = 6;                 ///< the target's top-k (0 = off)
  double top_p = 0.9;            ///< the target's top-p (1 = off)
};

/// The parts a unit test may replace with a broken version.
struct SpecSamplerParts {
  /// The distribution the verifier uses for the target, from one row of logits and the target's
  /// sampler: 000 §7.5 requires the processed p̃ (process_logits); the raw softmax p is the
  /// mistake the unit test injects.
  std::function<std::vector<double>(std::span<const double>, const spec::SamplerConfig&)>
      verifier_target = [](std::span<const double> logits, const spec::SamplerConfig& s) {
        return spec::process_logits(logits, s);
      };
  spec::SpecFaults faults;  ///< bugs injected into the loop
};

/// One draft sampler: its one-step law at the first position (closed form) and the loop's run.
struct SamplerDraft {
  std::string name, key;
  double alpha_first = 0.0;             ///< Σ min(p̃, q̃) at the first position
  double first_law_error = 0.0;         ///< max over x of |one-step law − p̃| (+inf for a NaN)
  double q_sum_deviation = 0.0;         ///< Σq̃ − 1 at the first position
  LawFit fit;                           ///< the loop's 2-token sequences against the exact law under p̃
  std::int64_t evaluated = 0, accepted = 0, steps = 0, emitted = 0;  ///< the loop's counts
  double alpha_exact_sum = 0.0;         ///< Σ over verified positions of Σ min(p̃, q̃)
  double alpha_variation = 0.0;         ///< Σ over verified positions of a(1 − a)
  double alpha_observed() const;        ///< accepted / evaluated
  double alpha_exact() const;           ///< alpha_exact_sum / evaluated
};

/// What spec-sampler measured: the target's laws at the first position, the exact law's support
/// (V² sequences at most) and the five draft samplers.
struct SpecSamplerMeasured {
  SpecSamplerOptions options;
  RunContext context;
  std::vector<double> p_raw, p_tilde;   ///< the target at the first position: softmax and processed
  std::int64_t support = 0;             ///< sequences of positive probability under p̃
  std::vector<SamplerDraft> drafts;
};

/// Evaluates the closed form and runs the loop for every draft sampler with `parts`.
SpecSamplerMeasured measure_spec_sampler(const SpecSamplerOptions& o, const RunContext& ctx,
                                         const SpecSamplerParts& parts = {});
/// The verdict rows: per draft sampler the one-step law against p̃ (float64 rounding bound), then
/// per draft sampler TV and χ² against the exact law and α observed against the exact α (family
/// false alarm 1e-4 over the 15 statistical rows).
std::vector<Expectation> judge_spec_sampler(const SpecSamplerMeasured& m);

/// The check as data (registered as `spec-sampler`).
const CheckDef<SpecSamplerOptions, SpecSamplerMeasured>& spec_sampler_check();

/// Runs the check. Throws InputError for invalid options (naming --samples, --temperature,
/// --top-k, --top-p).
Result run_spec_sampler(const SpecSamplerOptions& opts, const RunContext& ctx,
                        const SpecSamplerParts& parts = {});

}  // namespace kvlab::checks::spec_sampler

namespace kvlab::checks {
using namespace spec_sampler;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
