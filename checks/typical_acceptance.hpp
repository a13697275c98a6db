// typical-acceptance (000 §8.2): options, injectable parts, what it measures and its testable
// steps (see typical_acceptance.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "framework/spec.hpp"
#include "spec/acceptance.hpp"
#include "spec/step_law.hpp"
#include "spec/typical.hpp"

namespace kvlab::checks::typical_acceptance {

struct TypicalAcceptanceOptions {
  std::int64_t samples = 20'000;  ///< Monte Carlo draws per verifier and context
  int contexts = 4;               ///< prompts whose next-token (p, q) pairs are compared
  double temperature = 0.1;       ///< target and draft sampling temperature
  double epsilon = 0.09;          ///< Medusa's posterior_threshold
  double delta = 0.3;             ///< Medusa's posterior_alpha
};

/// The verifier under test as "typical acceptance": its acceptance rule and the token it emits on
/// a rejection. Empty members mean Medusa's (typical_accept_rule with the options' epsilon and
/// delta; greedy_replacement). The unit tests swap in rejection sampling to show the check fails.
struct TypicalAcceptanceParts {
  spec::AcceptRule rule;
  spec::ResidualFn replacement;
};

/// One context: its prompt, the next-token laws p (target) and q (draft) over V = 8, the two
/// verifiers' closed-form laws and their Monte Carlo draws, as TV distances (probabilities).
struct TypicalContext {
  std::vector<int> prompt;
  std::vector<double> p, q, law_typical;
  double rejection_law_error = 0.0;  ///< max over x of |rejection sampling's closed-form law − p|
  double tv_typical_law = 0.0;       ///< TV(typical acceptance's closed-form law, p)
  double tv_rejection_empirical = 0.0, tv_typical_empirical = 0.0;  ///< TV(empirical, p)
  double tv_typical_own = 0.0;       ///< TV(typical acceptance's empirical law, its closed form)
  double typical_accepted = 0.0;     ///< fraction of draws typical acceptance accepted
};

/// What typical-acceptance measured, one entry per context.
struct TypicalAcceptanceMeasured {
  TypicalAcceptanceOptions options;
  RunContext context;
  std::vector<TypicalContext> contexts;
};

/// Computes the laws and draws the samples with `parts`. Throws InputError (naming the options and
/// the temperatures that can judge the claim) where Medusa's law is within 2β of p at a context.
TypicalAcceptanceMeasured measure_typical_acceptance(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                                                     const TypicalAcceptanceParts& parts = {});
/// The verdict rows: rejection sampling's law = p (rounding bound) and its draws within β of p;
/// typical acceptance's law more than 2β from p, its draws more than β from p and within β of
/// its own law (β: Bretagnolle–Huber–Carol, family false alarm 1e-4).
std::vector<Expectation> judge_typical_acceptance(const TypicalAcceptanceMeasured& m);

/// The check as data (registered as `typical-acceptance`).
const CheckDef<TypicalAcceptanceOptions, TypicalAcceptanceMeasured>& typical_acceptance_check();

/// Runs the check. Throws InputError naming the option for invalid options or a run too small
/// for its comparisons to fail.
Result run_typical_acceptance(const TypicalAcceptanceOptions& opts, const RunContext& ctx,
                              const TypicalAcceptanceParts& parts = {});

}  // namespace kvlab::checks::typical_acceptance

namespace kvlab::checks {
using namespace typical_acceptance;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
