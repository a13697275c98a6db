// The exact output law of one rejection-sampling step, in closed form (000 §7.3): what token a
// single draft position emits, as a distribution over the vocabulary, computed by summing the
// accept path and the reject path instead of sampling them.
//
//   P(X = x) = g(x) · a(x)  +  (Σ_y g(y) (1 − a(y))) · r(x)
//              accept path      reject path
//
// with g the distribution the draft actually proposes from, a(x) = rule(p, q, x) the acceptance
// probability the verifier applies with the q it was given, and r = residual(p, q). When g = q and
// the rule and residual are the exact ones, the first term is min(p, q), the second max(0, p − q),
// and the law is p. When the verifier is given a q other than the proposal distribution (a greedy
// draft whose soft probabilities are passed as q), the law is not p: that is the mistake the
// closed form makes visible (V = 2, p = [0.6, 0.4], proposal one-hot on 0, q = [0.8, 0.2]:
// law = [0.75, 0.25]).
#pragma once

#include <functional>
#include <vector>

#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"

namespace kvlab::spec {

/// The residual a verifier draws from on a rejection (residual_distribution is the exact one).
using ResidualFn = std::function<std::vector<double>(Dist p, Dist q)>;

/// The law of the token one step emits (shape [V]): proposal g, verifier's (p, q), acceptance
/// rule and residual as above. Validates p, q and g as distributions of one size (InputError
/// naming "proposal (draft's sampling distribution)" for g); throws InputError when the residual
/// returns a vector of another size.
std::vector<double> step_output_law(Dist p, Dist q, Dist proposal,
                                    const AcceptRule& rule = exact_accept_probability,
                                    const ResidualFn& residual = residual_distribution);

/// The law when the draft proposes from q itself (the correct protocol): step_output_law(p, q, q).
std::vector<double> step_output_law(Dist p, Dist q);

}  // namespace kvlab::spec
