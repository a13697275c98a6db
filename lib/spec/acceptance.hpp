// The acceptance rate of speculative sampling and the residual distribution drawn from on a
// rejection (000 §7.2, §7.3; Leviathan, Kalman, Matias, ICML 2023, arXiv:2211.17192, §3;
// Chen et al. 2023, arXiv:2302.01318, Algorithm 2).
//
// Notation as in 000 §7: p is the target's distribution, q the draft's, both shape [V]. A draft
// token x ~ q is accepted with probability min(1, p(x)/q(x)), so
//   P(accept and X = x) = min(p(x), q(x)),  alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q),
// and on rejection the replacement is drawn from p'(x) = max(0, p(x) - q(x)) / (1 - alpha), which
// makes the emitted token exactly p-distributed: min(p, q) + (1 - alpha) p' = p.
// (003 part 5 writes the same rule with the names swapped: there q is the target, p the draft.)
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "spec/distribution.hpp"

namespace kvlab::spec {

/// alpha = sum_x min(p(x), q(x)) (000 §7.2, boxed), in [0, 1]. Unitless (a probability per
/// draft position). The float64 sum is capped at 1: distributions normalized to rounding (sum
/// within ~V * 1.1e-16 of 1) can otherwise give 1 + 2e-16 for p = q, which is no probability.
/// Validates p and q (InputError, see validate_pair).
double acceptance_rate(Dist p, Dist q);

/// TV(p, q) = 1/2 sum_x |p(x) - q(x)|, in [0, 1] (capped at 1 as acceptance_rate is).
/// Validates p and q.
double tv_distance(Dist p, Dist q);

/// 1 - TV(p, q): equal to acceptance_rate(p, q) in exact arithmetic whenever sum p = sum q = 1
/// (000 §7.2, last step). Computed by its own route so that the identity can be checked.
double acceptance_rate_from_tv(Dist p, Dist q);

/// The residual p'(x) = max(0, p(x) - q(x)) / Z with Z = sum_x max(0, p(x) - q(x)) (000 §7.3),
/// shape [V]. Z equals 1 - alpha in exact arithmetic; dividing by the sum computed directly keeps
/// p' normalized where 1 - alpha would suffer cancellation (alpha near 1).
/// alpha = 1 (Z = 0: p <= q everywhere, i.e. p = q): a rejection has probability 0 and p' is not
/// defined by the formula; kvlab returns p itself, so that a rejection caused by rounding still
/// emits a p-distributed token. Validates p and q.
std::vector<double> residual_distribution(Dist p, Dist q);

/// Probability of accepting draft token x (the rule of 000 §7.1 step 3). Takes the whole
/// distributions so that rules which look beyond p(x) and q(x) (Medusa's typical acceptance,
/// 000 §8.2, uses the entropy of p) fit the same slot.
using AcceptRule = std::function<double(Dist p, Dist q, std::size_t x)>;

/// The exact rule min(1, p(x)/q(x)): 0 when p(x) = 0; 1 when p(x) >= q(x) (including q(x) = 0,
/// a token the draft cannot propose but a caller may pass); else p(x)/q(x). No validation (it is
/// called once per draft token; the callers validate the distributions once).
double exact_accept_probability(Dist p, Dist q, std::size_t x);

}  // namespace kvlab::spec
