// spec-real: options, injectable parts and the pure run function (see spec_real.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/gpt.hpp"
#include "spec/loop.hpp"
#include "spec/positional.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecRealOptions {
  int prompts = 2;            ///< prompts from the validation text, per K and temperature
  int new_tokens = 24;        ///< tokens generated per prompt
  int alpha_windows = 4;      ///< validation windows of block_size bytes for the teacher-forced α
  bool long_run = false;      ///< 8 prompts × 64 tokens, 64 α windows, 2000 exactness samples
  /// Sequences per sampler of the exactness test at temperature 1 (spec-exact's core on the pair:
  /// 2 tokens after the first prompt, soft draft K = 1 and 2, greedy draft K = 2).
  std::int64_t exact_samples = 200;
  std::string target;         ///< checkpoint; empty: data/weights/target.safetensors
  std::string draft;          ///< checkpoint; empty: data/weights/draft.safetensors
  std::string fortunes;       ///< text directory; empty: /usr/share/games/fortunes
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

/// Runs the check; "skipped" (Result::skipped) when a default checkpoint or the default text is
/// absent. Throws InputError for options out of range, a named path that is absent, or a
/// malformed checkpoint (naming the option).
Result run_spec_real(const SpecRealOptions& opts, const RunContext& ctx, const SpecRealParts& parts = {});

}  // namespace kvlab::checks
