// sliding-window (004 §2.7, §1.6; 003 part 2): options, what it measures, and its testable steps.
// See sliding_window.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/kv_cache.hpp"
#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::sliding_window {

struct SlidingWindowOptions {
  int window = 4;       ///< W: keys p - W + 1 .. p
  int layers = 2;       ///< l: n_layer of the mini-GPT
  int tokens = 24;      ///< sequence length N (prefill + decode)
  int prefill = 6;      ///< prompt tokens in one forward (may exceed W)
  int perturb = 3;      ///< position s of the input token changed for the receptive-field probe
  std::string positional = "rope";  ///< rope (positions count on past W) or learned (N <= block_size)
};

/// Makes the cache the windowed model decodes with: (cache layers, width, window) -> cache.
template <class T>
using WindowCacheMaker = std::function<std::unique_ptr<KVCache<T>>(int n_layer, int width, int window)>;

/// Injectable pieces; the unit tests break them to show the check fails.
struct SlidingWindowParts {
  std::optional<int> model_window;   ///< the window the model under test uses; unset: --window
  WindowCacheMaker<double> cache_f64;  ///< empty: RollingCache
  WindowCacheMaker<float> cache_f32;
};

/// What sliding-window measured.
struct SlidingWindowMeasured {
  SlidingWindowOptions options;
  RunContext context;        ///< seed, dtype, device and --weights of the run
  ModelConfig config;        ///< the windowed model that ran (the options' or the --weights file's)
  double diff_before = 0;    ///< max |Δlogits| rolling vs masked full, positions 0 .. min(W, N) − 1
  double diff_after = 0;     ///< the same for positions W .. N − 1 (0 when N <= W)
  double max_logit = 0;      ///< max |logit| of the masked full forward
  int max_held = 0;          ///< positions held per cache layer, max over every step
  int element_bytes = 0;     ///< bytes of one cached number (the run's dtype)
  int ring_window = 0;       ///< a RollingCache's ring length; 0: the cache was not one
  std::uint64_t ring_bytes = 0;  ///< the ring buffers it allocated
  /// max |Δlogits| of each output position when input token --perturb changes (f64), on a window
  /// of W keys (own) and of W + 1 keys (004's convention: W previous tokens + the query).
  std::vector<double> probe_own, probe_doc;
};

/// Decodes through the rolling cache and compares with the masked full forward, then probes the
/// receptive field under both window conventions. Throws InputError on a --weights file that cannot run it.
SlidingWindowMeasured measure_sliding_window(const SlidingWindowOptions& o, const RunContext& ctx,
                                             const SlidingWindowParts& parts = {});
/// Logits within the rounding bound; positions held = min(W, N); reaches l·(W − 1) and l·W and
/// no output off the window rule, exactly.
std::vector<Expectation> judge_sliding_window(const SlidingWindowMeasured& m);

/// The check as data (registered as `sliding-window`).
const CheckDef<SlidingWindowOptions, SlidingWindowMeasured>& sliding_window_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_sliding_window(const SlidingWindowOptions& o, const RunContext& ctx, const SlidingWindowParts& parts = {});

}  // namespace kvlab::checks::sliding_window

namespace kvlab::checks {
using namespace sliding_window;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
