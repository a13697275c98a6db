// Monte Carlo estimates of the acceptance rate and of tokens per speculative step, by running the
// real rejection sampler (spec/rejection.hpp) with a seeded Rng. They are what spec-alpha and
// spec-etau compare with the formulas (000 §7.2, §7.4, sanity [d]).
#pragma once

#include <cstdint>

#include "core/rng.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"

namespace kvlab::spec {

/// Most draws or steps one estimate takes (1e9: minutes of CPU; the checks use ~1e5).
inline constexpr std::int64_t kMaxSamples = 1'000'000'000;

/// Throws InputError "<field>: must be in [1, 1000000000] (got n)" unless 1 <= n <= kMaxSamples.
void validate_samples(const char* field, std::int64_t n);

/// n rejection steps (x ~ q, accept with rule) and how many were accepted.
struct AcceptanceEstimate {
  std::int64_t samples = 0;
  std::int64_t accepted = 0;
  double alpha() const { return static_cast<double>(accepted) / static_cast<double>(samples); }
};

/// Estimates alpha by `samples` calls of rejection_step(p, q, rng, rule) (each draws the draft
/// token, the acceptance uniform and, on rejection, the replacement). Its mean is
/// acceptance_rate(p, q) for the exact rule, with standard error sqrt(alpha (1 - alpha) / n).
/// Validates p, q (validate_pair) and samples (field "samples").
AcceptanceEstimate estimate_acceptance_rate(Dist p, Dist q, std::int64_t samples, Rng& rng,
                                            const AcceptRule& rule = exact_accept_probability);

/// Tokens emitted over `steps` simulated speculative steps: the sum, the sum of squares (exact
/// integers) and the derived mean and sample variance (tokens per step, tokens^2).
struct TokensEstimate {
  std::int64_t steps = 0;
  std::int64_t tokens = 0;          ///< sum of tau over the steps
  std::int64_t tokens_squared = 0;  ///< sum of tau^2
  double mean() const;
  double sample_variance() const;  ///< unbiased (n - 1 denominator); 0 for one step
};

/// Simulates `steps` speculative steps with K draft positions whose target and draft
/// distributions are p and q at every position (the i.i.d. setting of the E[tau] formula): the
/// draft samples K tokens from q, then verify_draft runs real rejection sampling per position,
/// with the residual on rejection and the bonus token from p when all K are accepted. Its mean
/// is expected_tokens(acceptance_rate(p, q), K) for the exact rule.
/// Validates p, q, K (validate_draft_tokens) and steps (field "steps").
TokensEstimate simulate_tokens_per_step(Dist p, Dist q, int k, std::int64_t steps, Rng& rng,
                                        const AcceptRule& rule = exact_accept_probability);

/// A seed for an independent stream `stream` derived from `seed` (SplitMix64 of the pair), so
/// that each case of a check draws from its own generator and changing one case's sample count
/// does not shift another's draws.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace kvlab::spec
