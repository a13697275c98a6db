// spec-sampler: options, injectable parts and the pure run function (see spec_sampler.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "spec/loop.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError for invalid options (naming --samples, --temperature,
/// --top-k, --top-p).
Result run_spec_sampler(const SpecSamplerOptions& opts, const RunContext& ctx,
                        const SpecSamplerParts& parts = {});

}  // namespace kvlab::checks
