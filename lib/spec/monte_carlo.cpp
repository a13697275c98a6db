#include "spec/monte_carlo.hpp"

#include <vector>

#include "core/error.hpp"
#include "spec/expected_tokens.hpp"
#include "spec/rejection_detail.hpp"

namespace kvlab::spec {

void validate_samples(const char* field, std::int64_t n) {
  require_range(field, n, 1, kMaxSamples);
}

AcceptanceEstimate estimate_acceptance_rate(Dist p, Dist q, std::int64_t samples, Rng& rng,
                                            const AcceptRule& rule) {
  validate_pair(p, q);
  validate_samples("samples", samples);
  AcceptanceEstimate e{samples, 0};
  for (std::int64_t i = 0; i < samples; ++i)
    if (detail::accept_or_resample(p, q, rng.categorical(q), rng, rule).accepted) ++e.accepted;
  return e;
}

double TokensEstimate::mean() const {
  return static_cast<double>(tokens) / static_cast<double>(steps);
}

double TokensEstimate::sample_variance() const {
  if (steps < 2) return 0.0;
  // From the exact integer sums: sum (t - mean)^2 = sum t^2 - (sum t)^2 / n. sum t^2 < 2^53 (at
  // most 1e9 steps of tau <= 257) is exact in double; (sum t)^2 / n carries one relative rounding
  // of 1.1e-16, so the difference is good to ~1e-16 * sum t^2 / (its value): ample for a standard
  // error shown to a few digits. Rounding can leave a tiny negative where the variance is 0.
  const double n = static_cast<double>(steps);
  const double s = static_cast<double>(tokens);
  const double ss = static_cast<double>(tokens_squared);
  const double centered = ss - s * s / n;
  return centered > 0.0 ? centered / (n - 1.0) : 0.0;
}

TokensEstimate simulate_tokens_per_step(Dist p, Dist q, int k, std::int64_t steps, Rng& rng,
                                        const AcceptRule& rule) {
  validate_pair(p, q);
  validate_draft_tokens(k);
  validate_samples("steps", steps);
  const auto kk = static_cast<std::size_t>(k);
  const std::vector<Dist> target(kk + 1, p);  // the same target law at every position (i.i.d.)
  const std::vector<Dist> draft(kk, q);
  std::vector<std::size_t> drafts(kk);
  TokensEstimate e{steps, 0, 0};
  for (std::int64_t s = 0; s < steps; ++s) {
    for (auto& x : drafts) x = rng.categorical(q);  // the draft proposes K tokens first
    const auto tau =
        static_cast<std::int64_t>(detail::verify_draft(target, draft, drafts, rng, rule).emitted());
    e.tokens += tau;
    e.tokens_squared += tau * tau;
  }
  return e;
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  // SplitMix64's finalizer (Steele, Lea, Flood 2014), applied to the seed and then to the seed's
  // hash plus the golden-ratio increment times the stream number.
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  return mix(mix(seed) + 0x9E3779B97F4A7C15ULL * (stream + 1));
}

}  // namespace kvlab::spec
