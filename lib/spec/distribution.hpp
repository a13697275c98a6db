// Probability distributions over a vocabulary, as speculative decoding sees them: the target's p
// and the draft's q at one position (000 §7.1), validated, generated at random, or built with a
// chosen acceptance rate.
//
// A distribution is a vector of V probabilities, one per token id (shape [V], unitless, entries
// >= 0, summing to 1). Functions take them as Dist (a read-only view) and return std::vector.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.hpp"

namespace kvlab::spec {

/// A read-only view of one distribution, shape [V].
using Dist = std::span<const double>;

/// |sum - 1| a distribution may show and still count as normalized. Normalizing n positive
/// float64 numbers leaves the sum within about n * 1.1e-16 of 1 (1.1e-10 for a 10^6-token
/// vocabulary), so 1e-9 admits every float64 softmax or normalization while still rejecting a
/// vector that was never normalized (or was rounded through float32, ~6e-8 per entry: renormalize
/// such a vector in float64 first).
inline constexpr double kSumTolerance = 1e-9;

/// Largest vocabulary the spec functions accept: 2^24 tokens (real vocabularies are 32k-256k).
inline constexpr std::size_t kMaxVocab = std::size_t{1} << 24;

/// Throws InputError naming `field` unless `p` is a distribution: 1 <= size <= kMaxVocab, every
/// entry finite and >= 0, |sum - 1| <= tolerance. Example message:
/// "q (draft distribution): entry 3 is negative (-0.1); probabilities must be >= 0".
void validate_distribution(const std::string& field, Dist p, double tolerance = kSumTolerance);

/// Validates p (field "p (target distribution)") and q (field "q (draft distribution)") and
/// that they have the same vocabulary size (InputError naming both).
void validate_pair(Dist p, Dist q, double tolerance = kSumTolerance);

/// (sum of p computed in float64, index order) - 1: how far a distribution's stored values are
/// from normalized, for rounding bounds (e.g. 1 - TV(p, q) = sum min(p, q) needs sum p = sum q).
/// No validation.
double sum_deviation(Dist p);

/// A distribution drawn uniformly from the probability simplex over `size` tokens (Dirichlet with
/// all concentrations 1: normalized Exp(1) draws from `rng`). Every entry is > 0.
/// Throws InputError naming "size" for size == 0 or size > kMaxVocab.
std::vector<double> random_distribution(std::size_t size, Rng& rng);

/// The one-hot distribution on token `index` of `size` (a greedy draft, 000 §7.5).
/// Throws InputError unless index < size <= kMaxVocab.
std::vector<double> one_hot(std::size_t size, std::size_t index);

/// A target/draft pair (p, q) over `vocab` tokens whose acceptance rate sum_x min(p, q) is `alpha`
/// (up to float64 rounding: within vocab * 1.1e-16):
///   p = alpha * m + (1 - alpha) * a,   q = alpha * m + (1 - alpha) * b,
/// with m random on all tokens, a random on the first half of the tokens and b random on the
/// second half (a and b have disjoint supports, so min(p, q) = alpha * m). Both distributions
/// then have every kind of token: where a > 0 the draft under-proposes (p/q > 1, always
/// accepted), where b > 0 it over-proposes (0 < p/q < 1, accepted with that probability), and
/// TV(p, q) = 1 - alpha. alpha = 1 gives p = q = m; alpha = 0 disjoint supports.
/// Throws InputError naming "alpha" (not finite or outside [0, 1]) or "vocab" (< 2 or > kMaxVocab).
std::pair<std::vector<double>, std::vector<double>> pair_with_acceptance(double alpha,
                                                                         std::size_t vocab,
                                                                         Rng& rng);

}  // namespace kvlab::spec
