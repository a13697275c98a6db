// Speculative decoding end to end over two mini-GPTs (000 §7.6; Leviathan et al. 2023,
// Algorithm 1; Chen et al. 2023, Algorithm 2): a draft proposes K tokens one forward at a time,
// the target scores all K + 1 positions in one forward, rejection sampling (spec/rejection)
// accepts a prefix and emits a replacement or a bonus token, and both KV caches are rolled back
// to the accepted prefix by truncate().
//
// Invariant (000 §7.6): at the top of every step, each cache holds every token of the sequence but
// the last: cache length = sequence length − 1. The loop asserts it (InvariantError).
//
// Sampler pipeline (000 §7.5): logits → (temperature) → (top-k) → (top-p) → the processed
// distribution p̃ (target) or q̃ (draft), in float64. Temperature 0 is greedy: the one-hot on the
// argmax (lowest id on ties); the loop is then deterministic and emits exactly the target's greedy
// decoding.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "model/sequence_model.hpp"
#include "spec/acceptance.hpp"

namespace kvlab::spec {

/// How logits become a distribution. temperature 0 = greedy (one-hot argmax); top_k 0 = off;
/// top_p 1 = off.
struct SamplerConfig {
  double temperature = 1.0;  ///< [0, 1e6], finite
  int top_k = 0;             ///< keep the k most likely tokens (ties broken by lower id); 0 = all
  double top_p = 1.0;        ///< keep the smallest most-likely prefix with mass >= top_p; (0, 1]
};

/// Throws InputError naming `field`.temperature / top_k / top_p when out of range.
void validate_sampler(const std::string& field, const SamplerConfig& s);

/// The processed distribution of one row of logits (shape [V], float64, sums to 1 to rounding).
/// No validation (call validate_sampler once). Throws NonFiniteError (core/finite.hpp) for a NaN
/// or ±inf logit: greedy would otherwise pick token 0 whatever the model said.
std::vector<double> process_logits(std::span<const double> logits, const SamplerConfig& s);

/// The cache-length invariant of 000 §7.6 broken: a bug in the loop, not in the input.
class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// What one step saw, for observers (SpecConfig::on_step): the processed distributions the
/// verifier used and its outcome. Spans valid only during the call.
struct StepTrace {
  std::span<const std::vector<double>> target;  ///< p̃ rows, shape [K + 1][V]
  std::span<const std::vector<double>> draft;   ///< q̃ rows given to the verifier, shape [K][V]
  std::span<const std::size_t> drafts;          ///< d_1 .. d_K, shape [K]
  std::size_t accepted = 0;                     ///< drafts accepted (0 .. K)
  bool bonus = false;                           ///< all K accepted and a bonus token emitted
};

struct SpecConfig {
  int k = 4;                 ///< draft tokens per step, >= 1
  int max_new_tokens = 16;   ///< tokens to emit (overshoot of the last step is cut)
  SamplerConfig target_sampler;
  SamplerConfig draft_sampler;
  /// Called after each step's verification (spec-speedup and spec-sampler read the per-position
  /// acceptance probabilities from it); empty = not called. Must not throw.
  std::function<void(const StepTrace&)> on_step;
};

/// Deliberate bugs, for the unit tests that show the checks catch them. All off by default.
struct SpecFaults {
  bool skip_draft_truncate = false;   ///< leave rejected drafts in the draft cache
  bool skip_target_truncate = false;  ///< leave rejected drafts in the target cache
  bool skip_bonus_feed = false;       ///< after a bonus, do not feed d_K to the draft
  bool bonus_from_last_draft_row = false;  ///< draw the bonus from target row K − 1, not K
  /// Propose greedily (argmax) but give the verifier the draft's temperature-1 softmax as q
  /// (the biased sampler of a greedy draft given its soft q); the correct q of a greedy draft is its one-hot.
  bool soft_q_for_greedy_draft = false;
  /// When all K drafts are accepted, emit only them and drop the bonus token (the caches are rolled
  /// back to match): a step then emits at most K tokens, E[τ] = (1 − α^K)/(1 − α).
  bool drop_bonus = false;
};

/// Per-run statistics.
struct SpecStats {
  std::int64_t steps = 0;
  std::int64_t drafted = 0;        ///< draft tokens proposed (K per step)
  std::int64_t evaluated = 0;      ///< draft positions verified (accepted + the first rejected)
  std::int64_t accepted = 0;       ///< draft tokens accepted
  std::int64_t bonus = 0;          ///< steps that ended with a bonus token
  std::int64_t emitted = 0;        ///< tokens emitted before the overshoot was cut
  std::int64_t draft_forwards = 0;   ///< draft forward calls after the prefill
  std::int64_t target_forwards = 0;  ///< target forward calls after the prefill
  double seconds_draft = 0.0, seconds_target = 0.0;  ///< wall-clock in the forwards
  /// Observed per-position acceptance rate: accepted / evaluated (α under the i.i.d. model).
  double alpha_observed() const {
    return evaluated > 0 ? static_cast<double>(accepted) / static_cast<double>(evaluated) : 0.0;
  }
  /// Tokens emitted per step (E[τ]'s estimate).
  double tokens_per_step() const {
    return steps > 0 ? static_cast<double>(emitted) / static_cast<double>(steps) : 0.0;
  }
  /// Adds `o` field by field (every count and both seconds): the total over several runs.
  SpecStats& operator+=(const SpecStats& o) {
    steps += o.steps, drafted += o.drafted, evaluated += o.evaluated, accepted += o.accepted;
    bonus += o.bonus, emitted += o.emitted;
    draft_forwards += o.draft_forwards, target_forwards += o.target_forwards;
    seconds_draft += o.seconds_draft, seconds_target += o.seconds_target;
    return *this;
  }
};

struct SpecRun {
  std::vector<int> tokens;  ///< the max_new_tokens new tokens (prompt not included)
  SpecStats stats;
};

/// Runs the loop. Both models must share the vocabulary (InputError naming "vocab_size" with both
/// sizes otherwise); the prompt must be non-empty with ids in the vocabulary (InputError
/// "prompt"); prompt length + max_new_tokens + k − 1 must fit both block_sizes (InputError naming
/// "max_new_tokens"); k >= 1 and max_new_tokens >= 1 (InputError naming them). Draws from `rng` in
/// a fixed order (draft tokens, then the verifier's uniforms and replacement). Throws
/// InvariantError when a cache length differs from sequence length − 1 at the top of a step.
template <class T>
SpecRun speculative_decode(const MiniGPT<T>& target, const MiniGPT<T>& draft,
                           std::span<const int> prompt, const SpecConfig& config, Rng& rng,
                           const SpecFaults& faults = {});

/// The same loop on any model with its cache (model/sequence_model.hpp; e.g. the device's
/// gpu::DeviceSequence). Both must start empty (std::invalid_argument otherwise) and hold
/// prompt length + max_new_tokens + k positions. Same errors as above.
template <class T>
SpecRun speculative_decode(SequenceModel<T>& target, SequenceModel<T>& draft, std::span<const int> prompt,
                           const SpecConfig& config, Rng& rng, const SpecFaults& faults = {});

/// Plain autoregressive decoding from one model with its KV cache: n new tokens, each drawn from
/// process_logits(last row, sampler) (greedy at temperature 0). Same input errors.
template <class T>
std::vector<int> autoregressive_decode(const MiniGPT<T>& model, std::span<const int> prompt,
                                       int max_new_tokens, const SamplerConfig& sampler, Rng& rng);
/// The same on any model with its cache, which must start empty (std::invalid_argument).
template <class T>
std::vector<int> autoregressive_decode(SequenceModel<T>& model, std::span<const int> prompt, int max_new_tokens,
                                       const SamplerConfig& sampler, Rng& rng);

}  // namespace kvlab::spec
