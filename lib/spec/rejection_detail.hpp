// Unchecked versions of spec/rejection.hpp for the Monte Carlo loops, which validate their
// inputs once and then call these millions of times. Same draws, same order, no validation.
#pragma once

#include "spec/rejection.hpp"

namespace kvlab::spec::detail {

/// A draw from residual_distribution(p, q) (p itself when p - q has no positive entry).
std::size_t sample_residual(Dist p, Dist q, Rng& rng);

Verdict accept_or_resample(Dist p, Dist q, std::size_t x, Rng& rng, const AcceptRule& rule);

StepOutcome verify_draft(std::span<const Dist> target, std::span<const Dist> draft,
                         std::span<const std::size_t> drafts, Rng& rng, const AcceptRule& rule);

}  // namespace kvlab::spec::detail
