// Speculative sampling's verification: the rejection-sampling step for one draft position and
// the verification of a whole draft of K tokens with its correction or bonus token
// (000 §7.1 steps 3-5, §7.6 part 3; Leviathan et al. 2023, Algorithm 1; Chen et al. 2023,
// Algorithm 2).
//
// Every draw comes from the caller's seeded Rng, in a fixed order (draft token, acceptance
// uniform, replacement), so a seed replays a run exactly.
#pragma once

#include <cstddef>
#include <span>

#include "core/rng.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"

namespace kvlab::spec {

/// The token one position emits, and whether it is the draft's token (accepted) or a
/// replacement drawn from the residual (rejected).
struct Verdict {
  std::size_t token = 0;
  bool accepted = false;
};

/// Verifies a given draft token x: accept with probability rule(p, q, x) (one uniform from rng),
/// else draw the replacement from the residual max(0, p - q) / sum (residual_distribution's
/// definition, including its alpha = 1 case). Validates p, q and x < V (InputError).
Verdict accept_or_resample(Dist p, Dist q, std::size_t x, Rng& rng,
                           const AcceptRule& rule = exact_accept_probability);

/// One rejection-sampling step: draw x ~ q, then accept_or_resample. With the exact rule the
/// emitted token is distributed exactly as p and `accepted` is true with probability
/// acceptance_rate(p, q) (000 §7.2-7.3). Validates p and q (InputError).
Verdict rejection_step(Dist p, Dist q, Rng& rng, const AcceptRule& rule = exact_accept_probability);

/// The outcome of verifying a K-token draft: how many drafts were accepted (0..K) and the token
/// that follows them (the replacement at the first rejection, or the bonus token when all K were
/// accepted). The step emits accepted + 1 tokens: drafts[0 .. accepted), then `next`.
struct StepOutcome {
  std::size_t accepted = 0;
  std::size_t next = 0;
  bool bonus = false;  ///< true when all K drafts were accepted and `next` was drawn from target[K]
  std::size_t emitted() const { return accepted + 1; }
};

/// Verifies a draft the way 000 §7.6 does after the target's one forward: position i (0-based)
/// checks drafts[i] against target[i] and draft[i]; the first rejection stops the step with a
/// replacement from the residual of (target[i], draft[i]); if all K pass, the bonus token is drawn
/// from target[K].
/// Shapes: target [K + 1][V] (the target's distributions after the prefix and each draft token),
/// draft [K][V], drafts [K] token ids. K = 0 is allowed (the step is one plain target sample).
/// Throws InputError when the counts do not match (target.size() != K + 1, draft.size() != K) or
/// a token id is >= V. The distributions are not re-validated here (O(K V) per step in a
/// decoding loop); callers validate what they build (validate_distribution).
StepOutcome verify_draft(std::span<const Dist> target, std::span<const Dist> draft,
                         std::span<const std::size_t> drafts, Rng& rng,
                         const AcceptRule& rule = exact_accept_probability);

}  // namespace kvlab::spec
