// Tokens emitted per speculative step, tau, when each of the K draft positions is accepted
// independently with probability alpha (000 §7.4; Leviathan et al. 2023, arXiv:2211.17192, §3,
// the expected number of tokens per run; Chen et al. 2023, arXiv:2302.01318). The i.i.d.
// assumption is the papers' approximation: real acceptances are correlated.
//
// A step emits j + 1 tokens when the first j drafts are accepted and draft j + 1 is rejected
// (j < K: j accepted plus the replacement), and K + 1 when all K are accepted (K plus the bonus
// token from the target's last position):
//   P(tau = j + 1) = alpha^j (1 - alpha)  (j < K),   P(tau = K + 1) = alpha^K,
//   E[tau] = sum_{j<K} alpha^j (1 - alpha)(j + 1) + alpha^K (K + 1)
//          = (1 - alpha^{K+1}) / (1 - alpha),   K + 1 at alpha = 1.
// Units: tokens per step (per target forward).
#pragma once

#include <vector>

namespace kvlab::spec {

/// Largest draft length K kvlab accepts. Practical drafts are 1-16 tokens (token trees ~60); 256
/// leaves room while keeping a simulated step (up to K + 1 draws) cheap.
inline constexpr int kMaxDraftTokens = 256;

/// Throws InputError "alpha: must be a finite number in [0, 1] (got ...)" unless it is.
void validate_alpha(double alpha);
/// Throws InputError "K (draft tokens per step): must be in [0, 256] (got ...)" unless it is.
void validate_draft_tokens(int k);

/// E[tau] = (1 - alpha^{K+1}) / (1 - alpha), K + 1 at alpha = 1, for alpha in [0, 1] and
/// 0 <= K <= kMaxDraftTokens (InputError otherwise). Relative error <= (2K + 4) * 1.1e-16.
///
/// Numerics: for alpha near 1 both 1 - alpha^{K+1} and 1 - alpha are small, and the subtraction
/// 1 - alpha^{K+1} turns the rounding error of alpha^{K+1} (up to ~1e-16 absolute) into a relative
/// error of ~1e-16 / ((K + 1)(1 - alpha)). It is not worse only because 1 - alpha is exact for
/// alpha >= 1/2 (Sterbenz) and a product of numbers just below 1 rounds by at most ~(1 - alpha)^2:
/// the loss peaks where (1 - alpha)^2 ~ 1e-16, i.e. 1 - alpha ~ 1e-8, at about half the digits
/// (alpha = 1 - 2^-28, K = 4: the closed form gives 5 exactly, the true value is 4.99999996, a
/// relative error of 7e-9). So for alpha > 1/2 the value is the geometric sum
/// 1 + alpha + ... + alpha^K by Horner's rule: positive terms, no cancellation, relative error
/// <= 2K roundings. For alpha <= 1/2 the closed form is well conditioned (alpha^{K+1} <= 1/4,
/// 1 - alpha >= 1/2).
double expected_tokens(double alpha, int k);

/// The closed form exactly as the document writes it, (1 - alpha^{K+1}) / (1 - alpha) in float64
/// with no special-casing (NaN at alpha = 1): kept to show the digits lost near alpha = 1 that
/// expected_tokens keeps. Validates alpha and K.
double expected_tokens_closed_form(double alpha, int k);

/// The defining sum sum_{j<K} alpha^j (1 - alpha)(j + 1) + alpha^K (K + 1), term by term
/// (000 §7.4, before the simplification). Validates alpha and K.
double expected_tokens_by_definition(double alpha, int k);

/// The law of tau: element t - 1 is P(tau = t) for t = 1 .. K + 1 (shape [K + 1], sums to 1).
/// Validates alpha and K.
std::vector<double> tokens_per_step_law(double alpha, int k);

/// Var[tau] = sum_t P(tau = t) (t - E[tau])^2, summed from the law (non-negative terms, so it is
/// accurate also where E[tau^2] - E[tau]^2 would cancel: alpha near 0 or 1). 0 at alpha = 0 and 1.
/// Validates alpha and K.
double tokens_per_step_variance(double alpha, int k);

/// Speedup over plain decoding, E[tau] / (1 + K c) (000 §7.4, §9.2): one step costs one target
/// forward plus K draft forwards of c target-forwards each. `c` >= 0 and finite (InputError naming
/// "c (draft/target cost ratio)"); alpha and K as above.
double speedup(double alpha, int k, double c);

/// The alpha in [0, 1] at which expected_tokens(alpha, K) equals `tokens` (E[tau] is strictly
/// increasing in alpha for K >= 1), by bisection to 1e-15. `tokens` must lie in [1, K + 1]
/// (InputError naming "tokens") and K >= 1 (InputError naming "K").
double alpha_for_expected_tokens(double tokens, int k);

}  // namespace kvlab::spec
