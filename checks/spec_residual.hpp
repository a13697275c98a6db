// spec-residual (000 §7.3): options, injectable parts, what it measures and its testable steps
// (see spec_residual.cpp), declared for the unit tests that break a part and expect it to fail.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "spec/acceptance.hpp"
#include "spec/step_law.hpp"

namespace kvlab::checks::spec_residual {

struct SpecResidualOptions {
  std::int64_t pairs = 2000;  ///< seeded random (p, q) pairs besides the edge cases
  int vocab = 8;              ///< V of the random pairs and the edge cases
};

/// The parts a unit test may replace with a broken version.
struct SpecResidualParts {
  /// The residual p' drawn from on a rejection (000 §7.3).
  spec::ResidualFn residual = spec::residual_distribution;
  /// The acceptance probability (000 §7.1 step 3).
  spec::AcceptRule accept = spec::exact_accept_probability;
};

/// One (p, q) pair's errors: the identity min(p, q) + (1 − α)·p′ − p and the one-step law − p (max
/// over x; +inf where a value was NaN or the residual had the wrong length), with what their
/// float64 bounds need: Σp − 1, Σq − 1 and V.
struct ResidualCase {
  std::string name;
  double alpha = 0.0;
  double identity_error = 0.0, law_error = 0.0;
  double p_sum_deviation = 0.0, q_sum_deviation = 0.0;
  int vocab = 0;
};

/// What spec-residual measured: the edge cases one by one, the random pairs as their worst errors
/// (absolute, and relative to each pair's own bound), and the greedy-draft counterexample.
struct SpecResidualMeasured {
  SpecResidualOptions options;
  RunContext context;
  std::vector<ResidualCase> edges;
  double worst_identity = 0.0, worst_law = 0.0;                  ///< random pairs, absolute
  double worst_identity_ratio = 0.0, worst_law_ratio = 0.0;      ///< random pairs, over each one's bound
  ResidualCase greedy_one_hot, greedy_soft;                      ///< V = 2, p = [0.6, 0.4]
  std::vector<double> law_one_hot, law_soft;                     ///< the two laws of the emitted token
};

/// The float64 bounds of the identity (|Σp − 1| + (2V + 5)·u) and of the one-step law
/// (|Σp − 1| + |Σq − 1| + (2V + 8)·u), u = 2^-53 (derivation in spec_residual.cpp).
double residual_identity_bound(const ResidualCase& c);
double residual_law_bound(const ResidualCase& c);

/// Evaluates every case with `parts`. Throws InputError for invalid options.
SpecResidualMeasured measure_spec_residual(const SpecResidualOptions& o, const RunContext& ctx,
                                           const SpecResidualParts& parts = {});
/// The verdict rows: each edge case's identity and law within its bound, the random pairs' worst
/// ratio to their bounds at most 1, the greedy draft's law within its bound, and the mistaken law
/// 0.15 away from p.
std::vector<Expectation> judge_spec_residual(const SpecResidualMeasured& m);

/// The check as data (registered as `spec-residual`).
const CheckDef<SpecResidualOptions, SpecResidualMeasured>& spec_residual_check();

/// Runs the check. Throws InputError for invalid options (naming --pairs, --vocab).
Result run_spec_residual(const SpecResidualOptions& opts, const RunContext& ctx,
                         const SpecResidualParts& parts = {});

}  // namespace kvlab::checks::spec_residual

namespace kvlab::checks {
using namespace spec_residual;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
