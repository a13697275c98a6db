// sliding-window (004 §2.7, §1.6; 003 part 2): options and the testable entry point.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cache/kv_cache.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option on bad input.
Result run_sliding_window(const SlidingWindowOptions& o, const RunContext& ctx, const SlidingWindowParts& parts = {});

}  // namespace kvlab::checks
