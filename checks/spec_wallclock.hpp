// spec-wallclock (000 §7.4, §8.6, §9.2): options, injectable parts, what it measures and the
// testable entry points. See spec_wallclock.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::spec_wallclock {

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
  bool quick = false;                     ///< d 512, K 2 and 4, 24 tokens where not given (a tiny model under sanitizers)
  /// The long-context case (000 §8.5): a small target (d 256 × 4 layers, 4 MHA heads, vocab 4096)
  /// that holds `context` cached positions, whose KV cache then outweighs its weights, with the
  /// window self-draft (attention sinks `sink` + the `recent` latest positions). Off by default;
  /// the three sizes are refused without it, and take the values below when not given.
  bool long_context = false;
  std::optional<int> context;             ///< cached positions before the prompt, 256 to 32768; 4096
  std::optional<int> sink;                ///< the window draft's attention sinks, 0 to 1024; 4
  std::optional<int> recent;              ///< the window draft's recent positions, 1 to context − sink − 1; 252
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

/// One (draft, K) of the sweep: every repeat's times and the speculative runs' summed statistics,
/// and what follows from them. Seconds; speedups and costs are ratios to the target alone.
struct SpecWallclockRow {
  DraftKind kind{};
  int k = 0;
  std::vector<double> speedups;         ///< per repeat: its plain decoding / its speculative run
  std::vector<double> base_s, spec_s;   ///< per repeat, seconds
  std::int64_t steps = 0, emitted = 0, accepted = 0, evaluated = 0, draft_forwards = 0, same = 0, runs = 0;
  double alpha = 0;      ///< accepted / evaluated draft tokens
  double tau = 0;        ///< tokens per step τ̄ (emitted / steps)
  double etau = 0;       ///< E[τ] = (1 − α^{K+1})/(1 − α)
  double f = 0;          ///< draft forwards per step
  double c = 0;          ///< draft step / target step, best of the pairs on each side
  double verify = 0;     ///< verify forward of K + 1 tokens / target step
  double predicted = 0;  ///< τ̄ / (verify + f·c)
  double measured = 0;   ///< best plain decoding / best speculative run
  double lo = 0, hi = 0; ///< range of the repeats' own speedups
};

/// One draft's bytes and measured cost ratio c (every back-to-back pair's ratio behind it).
struct DraftCost {
  DraftKind kind{};
  double bytes = 0, c = 0;
  std::vector<double> pairs;  ///< per pair: draft step / target step
};

/// The long-context case (shown, not judged): its target, the window draft's rows per K, and the
/// bytes of one step at the runs' mid context.
struct SpecWallclockLong {
  ModelConfig config;
  std::vector<SpecWallclockRow> rows;
  std::vector<double> c_pairs, plain;  ///< per pair: draft step / target step; every plain decoding's seconds
  double weight_bytes = 0, kv_target = 0, kv_draft = 0, c = 0;
  int mid_ctx = 0;
};

/// What spec-wallclock measured: the options as run (--quick applied, the long-context sizes
/// resolved, K sorted), the target's config, one row per draft kind and K, the drafts' costs, every
/// plain decoding's seconds, and the machine it ran on (`cpu`: /proc/cpuinfo's model name, or "").
struct SpecWallclockMeasured {
  SpecWallclockOptions options;
  ModelConfig config;
  bool real = true;  ///< timed this machine (false: injected parts)
  std::vector<SpecWallclockRow> rows;
  std::vector<DraftCost> drafts;
  std::vector<double> plain;
  double target_bytes = 0;
  std::optional<SpecWallclockLong> long_case;
  double load_start = 0, load_end = 0;  ///< the 1-minute load average at the start and the end
  std::string cpu;
};

/// Times every draft and K with `parts` (empty members: this machine's fast path, after the work
/// budget: InputError when over it). `long_parts`: the same for the long-context case's target
/// and its window draft (build gets that target's config with skip_layers 0); a test that injects
/// `parts` and sets long_context injects `long_parts` too (std::invalid_argument otherwise).
SpecWallclockMeasured measure_spec_wallclock(const SpecWallclockOptions& o, const RunContext& ctx,
                                             const SpecWallclockParts& parts = {},
                                             const SpecWallclockParts& long_parts = {});
/// The verdict rows at the best (draft, K) by measured speedup (a NaN speedup is never the best;
/// all NaN: the first row, which fails): measured ≥ 1× (capped at 1), measured equal to the
/// prediction within max(15%, the repeats' range), the repeats' spread at most 50% of the
/// measured speedup, and the plain decodings within 25% of each other.
std::vector<Expectation> judge_spec_wallclock(const SpecWallclockMeasured& m);

/// The check as data (registered as `spec-wallclock`, a benchmark).
const CheckDef<SpecWallclockOptions, SpecWallclockMeasured>& spec_wallclock_check();

/// Runs the check. Throws InputError for options out of range or over the work budget.
Result run_spec_wallclock(const SpecWallclockOptions& opts, const RunContext& ctx,
                          const SpecWallclockParts& parts = {}, const SpecWallclockParts& long_parts = {});

}  // namespace kvlab::checks::spec_wallclock

namespace kvlab::checks {
using namespace spec_wallclock;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
