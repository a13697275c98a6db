// spec-alpha: options, injectable parts and the pure run function (see spec_alpha.cpp), declared
// for the unit tests that break a part and expect the check to fail.
#pragma once

#include <cstdint>
#include <functional>

#include "spec/acceptance.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecAlphaOptions {
  std::int64_t samples = 100'000;  ///< rejection-sampling draws per pair (the document's 100k)
  int vocab = 8;                   ///< V, tokens per distribution
  double alpha_target = 0.7;       ///< acceptance rate of the headline pair (000 §7.4: 0.6-0.7)
};

/// The parts a unit test may replace with a broken version.
struct SpecAlphaParts {
  /// The formula under test, alpha(p, q) (000 §7.2).
  std::function<double(spec::Dist p, spec::Dist q)> alpha = spec::acceptance_rate;
  /// The sampler's acceptance probability (000 §7.1 step 3).
  spec::AcceptRule accept = spec::exact_accept_probability;
};

/// Runs the check. Throws InputError for invalid options (naming --samples, --vocab,
/// --alpha-target).
Result run_spec_alpha(const SpecAlphaOptions& opts, const RunContext& ctx,
                      const SpecAlphaParts& parts = {});

}  // namespace kvlab::checks
