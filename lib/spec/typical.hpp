// Medusa's typical acceptance (000 §8.2; Cai et al., "Medusa", arXiv:2401.10774, §2.3.1): a draft
// token x is accepted when the target gives it more than a threshold that falls with the target's
// entropy,
//   p(x) > min(epsilon, delta · exp(−H(p))),   H(p) = −Σ_y p(y) ln p(y)   (nats),
// with the reference implementation's defaults epsilon = 0.09 (posterior_threshold) and
// delta = 0.3 (posterior_alpha, "recommended sqrt(posterior_threshold)"). The decision is
// deterministic given x (no uniform draw), and the token emitted at the first rejected position is
// the target's greedy argmax (Medusa "always accepts the first token using greedy decoding": the
// next step's root candidate is argmax p). This rule is not rejection sampling: the emitted token
// is not distributed as p (000 §8.2 says so: "不严格保证 exact sampling"). Its one-position law
// is step_output_law(p, q, q, typical_accept_rule(...), greedy_replacement) (spec/step_law.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "core/rng.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/rejection.hpp"
#include "spec/step_law.hpp"

namespace kvlab::spec {

/// Medusa's two thresholds (unitless probabilities). Defaults: the reference implementation's.
struct TypicalParams {
  double epsilon = 0.09;  ///< hard threshold (posterior_threshold), in (0, 1]
  double delta = 0.3;     ///< entropy-scaled threshold factor (posterior_alpha), in (0, 1]
};

/// Throws InputError naming "epsilon" or "delta" unless each is finite and in (0, 1].
void validate_typical(const TypicalParams& t);

/// Shannon entropy −Σ p ln p of a distribution (shape [V]), in nats; terms with p = 0 count 0
/// (Medusa adds 1e-5 inside the log; kvlab uses the exact definition). No validation.
double entropy_nats(Dist p);

/// The acceptance threshold min(epsilon, delta · exp(−H(p))). No validation.
double typical_threshold(Dist p, const TypicalParams& t);

/// The rule as an AcceptRule: 1 when p(x) > typical_threshold(p), else 0 (q is not used).
/// Validates t (InputError) when the rule is made, not when it is called.
AcceptRule typical_accept_rule(const TypicalParams& t = {});

/// Medusa's token at a rejected position: the one-hot on argmax p (lowest id on ties), shape [V].
/// Fits ResidualFn; q is not used.
std::vector<double> greedy_replacement(Dist p, Dist q);

/// One position of a verifier given as (rule, replacement): draw x ~ q, accept with probability
/// rule(p, q, x) (one uniform), else draw the emitted token from replacement(p, q). With
/// exact_accept_probability and residual_distribution this is rejection_step; with
/// typical_accept_rule and greedy_replacement it is Medusa's typical acceptance. Its law is
/// step_output_law(p, q, q, rule, replacement). Validates p and q (InputError).
Verdict verify_one(Dist p, Dist q, Rng& rng, const AcceptRule& rule, const ResidualFn& replacement);

}  // namespace kvlab::spec
