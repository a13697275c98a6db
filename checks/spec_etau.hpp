// spec-etau: options, injectable parts and the pure run function (see spec_etau.cpp), declared
// for the unit tests that break a part and expect the check to fail.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "spec/acceptance.hpp"
#include "spec/expected_tokens.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecEtauOptions {
  /// --alpha / --k: when either is given, run that one case (the other takes its default, 0.6 or
  /// 4); when neither is, the full check with the table over alpha x K.
  std::optional<double> alpha;
  std::optional<int> k;
  std::int64_t samples = 100'000;      ///< simulated steps for the headline (or single) case
  std::int64_t grid_samples = 20'000;  ///< simulated steps per cell of the alpha x K table
  int vocab = 8;                       ///< V of the (p, q) pairs the simulation samples from
  double cost_ratio = 0.05;            ///< c: one draft forward / one target forward (000 §7.4)
};

/// The parts a unit test may replace with a broken version.
struct SpecEtauParts {
  /// The formula under test, E[tau](alpha, K) (000 §7.4).
  std::function<double(double alpha, int k)> expected_tokens = [](double a, int k) {
    return spec::expected_tokens(a, k);
  };
  /// The sampler's acceptance probability, used by the simulation (000 §7.1 step 3).
  spec::AcceptRule accept = spec::exact_accept_probability;
};

/// Runs the check. Throws InputError for invalid options (naming --alpha, --k, --samples, ...).
Result run_spec_etau(const SpecEtauOptions& opts, const RunContext& ctx,
                     const SpecEtauParts& parts = {});

}  // namespace kvlab::checks
