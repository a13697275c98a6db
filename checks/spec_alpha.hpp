// spec-alpha (000 §7.2, §A.2 [d]): options, injectable parts, what it measures and its testable
// steps (see spec_alpha.cpp), declared for the unit tests that break a part and expect it to fail.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "spec/acceptance.hpp"

namespace kvlab::checks::spec_alpha {

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

/// One (p, q) pair: α by the formula under test and as 1 − TV, the sampler's acceptance rate over
/// --samples draws, and the distributions' |Σ − 1| (which the rounding bounds need).
struct AlphaPair {
  std::string name;
  double alpha = 0.0, alpha_tv = 0.0, alpha_mc = 0.0;
  double p_sum_deviation = 0.0, q_sum_deviation = 0.0;  ///< Σp − 1, Σq − 1
};

/// What spec-alpha measured: the pairs in order, the headline pair first.
struct SpecAlphaMeasured {
  SpecAlphaOptions options;
  std::uint64_t seed = 0;
  std::vector<AlphaPair> pairs;
};

/// Draws the pairs and runs the sampler on each with `parts`.
SpecAlphaMeasured measure_spec_alpha(const SpecAlphaOptions& o, const RunContext& ctx,
                                     const SpecAlphaParts& parts = {});
/// The verdict rows: Σ min − (1 − TV) within float64 rounding; per pair, α_MC in the exact binomial
/// region of a correct sampler (family false alarm 1e-4); the document's "within 1%" on the
/// headline pair where it is a sound test at this n.
std::vector<Expectation> judge_spec_alpha(const SpecAlphaMeasured& m);

/// The check as data (registered as `spec-alpha`).
const CheckDef<SpecAlphaOptions, SpecAlphaMeasured>& spec_alpha_check();

/// Runs the check. Throws InputError for invalid options (naming --samples, --vocab,
/// --alpha-target).
Result run_spec_alpha(const SpecAlphaOptions& opts, const RunContext& ctx,
                      const SpecAlphaParts& parts = {});

}  // namespace kvlab::checks::spec_alpha

namespace kvlab::checks {
using namespace spec_alpha;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
