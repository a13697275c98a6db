// spec-etau (000 §7.4): options, injectable parts, what it measures and its testable steps (see
// spec_etau.cpp), declared for the unit tests that break a part and expect it to fail.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "framework/spec.hpp"
#include "spec/acceptance.hpp"
#include "spec/expected_tokens.hpp"

namespace kvlab::checks::spec_etau {

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

/// One simulated case: the formula under test against the mean τ of `steps` simulated steps.
struct EtauCase {
  double alpha = 0.0;      ///< the pair's acceptance rate Σ min(p, q), computed by the library
  int k = 0;               ///< draft tokens per step
  std::int64_t steps = 0;  ///< simulated steps
  double theory = 0.0;     ///< E[τ](α, K) by the formula under test, tokens/step
  double mc = 0.0;         ///< mean τ of the steps, tokens/step
  double sample_sd = 0.0;  ///< their sample standard deviation
  double rounding = 0.0;   ///< float64 bound on how far the sampler's E[τ] can sit from the formula's
};

/// What spec-etau measured. The α × K grid is empty when --alpha or --k chose one case.
struct SpecEtauMeasured {
  SpecEtauOptions options;
  std::uint64_t seed = 0;
  EtauCase head;                ///< the headline (or single) case
  std::vector<EtauCase> grid;   ///< [α of the table][K of the table], row-major
  /// The formula under test against its defining sum: the worst |difference| / its float64 bound
  /// (NaN kept) and |difference|, over `identity_cases` (α, K).
  double identity_worst_ratio = 0.0, identity_worst_abs = 0.0;
  std::size_t identity_cases = 0;
  std::vector<int> limit_k;                       ///< the K of the limit rows
  double limit0_error = 0.0, limit1_error = 0.0;  ///< max |E[τ](0, K) − 1|, max |E[τ](1, K) − (K + 1)|
  double course_low = 0.0, course_high = 0.0;     ///< the formula under test at α = 0.6, 0.7, K = 4
  bool single() const { return options.alpha.has_value() || options.k.has_value(); }
};

/// Builds the pairs, refuses a run whose comparison could not fail (InputError naming --samples or
/// --grid-samples), then simulates every case and evaluates the formula under test.
SpecEtauMeasured measure_spec_etau(const SpecEtauOptions& o, const RunContext& ctx, const SpecEtauParts& parts = {});
/// The verdict rows: each simulation within its Bernstein (or union) bound, the identity and the
/// limits; in the full check also the grid's worst cell and the course's "K = 4 → E[τ] ≈ 2.7".
std::vector<Expectation> judge_spec_etau(const SpecEtauMeasured& m);

/// The check as data (registered as `spec-etau`).
const CheckDef<SpecEtauOptions, SpecEtauMeasured>& spec_etau_check();

/// Runs the check. Throws InputError for invalid options (naming --alpha, --k, --samples, ...).
Result run_spec_etau(const SpecEtauOptions& opts, const RunContext& ctx,
                     const SpecEtauParts& parts = {});

}  // namespace kvlab::checks::spec_etau

namespace kvlab::checks {
using namespace spec_etau;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
