// spec-wallclock: options, injectable parts and the pure run function (see spec_wallclock.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

/// The self-drafts measured: the target's own weights in int8 or int4, or its first blocks only;
/// and, in the long-context case (--long-context), the target itself reading only a window of its
/// own KV cache, the attention sinks and the recent positions (000 §8.5; model/fast_gpt.hpp,
/// FastGpt::extend_window).
enum class DraftKind { int8, int4, layer_skip, window };

/// Short name of a draft kind for tables and metrics: "int8", "int4", "layer-skip", "window".
std::string draft_name(DraftKind k);

struct SpecWallclockOptions {
  std::vector<int> ks{1, 2, 4, 8};        ///< draft lengths K, 1 to 8
  int new_tokens = 32;                    ///< tokens generated per run, 8 to 256
  int repeats = 2;                        ///< interleaved repeats of every run, 1 to 10
  int skip_layers = 2;                    ///< blocks the layer-skip draft keeps, 1 to layers − 1
  int d_model = 640;                      ///< the target's shape (139 MB: memory-bound, ≥ 4× a 32 MB LLC)
  int layers = 6;
  int vocab = 8192;
  bool quick = false;                     ///< d 512, K 2 and 4; 24 tokens; 2 repeats (a tiny model under sanitizers)
  /// The long-context case (000 §8.5): a small target (d 256 × 4 layers, 4 MHA heads, vocab 4096)
  /// that holds `context` cached positions, whose KV cache then outweighs its weights, with the
  /// window self-draft (attention sinks `sink` + the `recent` latest positions). Off by default.
  bool long_context = false;
  int context = 4096;                     ///< cached positions before the prompt, 256 to 32768
  int sink = 4;                           ///< the window draft's attention sinks, 0 to 1024
  int recent = 252;                       ///< the window draft's recent positions, 1 to context − sink − 1
};

/// One speculative run's outcome (spec/loop.hpp's statistics) and its wall-clock.
struct SpecTiming {
  double seconds = 0.0;
  std::int64_t steps = 0, emitted = 0, accepted = 0, evaluated = 0, draft_forwards = 0;
  bool same_tokens = true;  ///< the output equals the plain greedy decoding of the same repeat
};

/// What the check times; empty members: the fast path on this machine (model/fast_gpt.hpp). A
/// unit test injects a synthetic machine, and a broken one to show the verdict fails.
struct SpecWallclockParts {
  /// Builds the target and the drafts for `config` (called once, before any timing).
  std::function<void(const ModelConfig& config, int skip_layers)> build;
  /// Seconds of the decode phase of the plain greedy decoding of `n` new tokens by the target
  /// alone, per n tokens: the prompt's prefill is left out (it gives the first token; the n − 1
  /// decode steps' seconds are scaled by n / (n − 1)).
  std::function<double(int n)> time_baseline;
  /// One greedy speculative run of `n` new tokens with draft `kind` and K = `k`; its seconds leave
  /// out the prefill of the prompt (all but its last token) by the target and by the draft.
  std::function<SpecTiming(DraftKind kind, int k, int n)> time_spec;
  /// Seconds of one forward of `rows` new tokens at the runs' mid context: the target's
  /// (rows = 1: a decode step; rows = K + 1: the verify step) or a draft's (rows = 1).
  std::function<double(int rows)> time_target;
  std::function<double(DraftKind kind)> time_draft;
  /// Weight bytes each streams per step (target, then draft).
  std::function<double()> target_bytes;
  std::function<double(DraftKind kind)> draft_bytes;
};

/// Runs the check. Throws InputError for options out of range or over the work budget.
/// `long_parts`: what the long-context case times (opts.long_context), the same members for the
/// long-context target and its window draft (DraftKind::window; build gets that target's config
/// with skip_layers 0; time_target and time_draft at the runs' mid context after the cached
/// prefix); empty members: the fast path on this machine. A test that injects `parts` and sets
/// long_context injects `long_parts` too (std::invalid_argument otherwise).
Result run_spec_wallclock(const SpecWallclockOptions& opts, const RunContext& ctx,
                          const SpecWallclockParts& parts = {}, const SpecWallclockParts& long_parts = {});

}  // namespace kvlab::checks
