// Tokens per speculative step when each draft position has its own acceptance probability
// (000 §7.4 without the i.i.d. assumption; Leviathan et al. 2023, arXiv:2211.17192, §3.1 makes
// the same sum with one α).
//
// A step verifies drafts 1 .. K in order; a_i is the probability that draft i is accepted given
// that drafts 1 .. i − 1 were. It emits τ = i + 1 tokens when the first i are accepted and draft
// i + 1 is rejected, K + 1 (the bonus) when all K are:
//   P(τ = i + 1) = a_1 ··· a_i (1 − a_{i+1})  (i < K),   P(τ = K + 1) = a_1 ··· a_K,
//   E[τ] = Σ_{i=0}^{K} a_1 ··· a_i          (the empty product is 1).
// With every a_i = α this is 1 + α + … + α^K = (1 − α^{K+1})/(1 − α), the document's formula.
//
// Given the K drafted tokens d_i, the acceptances are independent with a_i = min(1, p̃_i(d_i) /
// q̃_i(d_i)) (each uses its own uniform), so E[τ | drafts] is exactly this sum: spec-speedup
// compares a real loop's tokens per step with it.
#pragma once

#include <span>
#include <vector>

namespace kvlab::spec {

/// E[τ] = Σ_{i=0}^{K} Π_{j<=i} a_j for acceptance probabilities a (shape [K], each in [0, 1];
/// InputError naming "acceptance probability" otherwise). Tokens per step, in [1, K + 1].
double expected_tokens_positional(std::span<const double> a);

/// The law of τ: element t − 1 is P(τ = t), t = 1 .. K + 1 (shape [K + 1]). Same errors.
std::vector<double> tokens_law_positional(std::span<const double> a);

/// Var[τ], summed from the law (non-negative terms). Tokens². Same errors.
double tokens_variance_positional(std::span<const double> a);

}  // namespace kvlab::spec
