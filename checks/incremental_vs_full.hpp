// incremental-vs-full (004 §1.3, §3.5, group 2): options and the testable entry point.
#pragma once

#include <functional>
#include <optional>
#include <memory>
#include <string>

#include "cache/kv_cache.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct IncrementalOptions {
  int prefill = 8;   ///< prompt tokens processed at once
  int decode = 12;   ///< tokens then decoded one at a time
  std::optional<int> chunk;  ///< chunk size of the chunked-prefill variant; unset: min(3, prefill)
  std::string cache = "prealloc";  ///< prealloc or concat
};

/// Makes the cache the incremental path uses: (n_layer, width, max_len) -> cache. The unit tests
/// pass a deliberately broken cache here to show the check fails.
template <class T>
using CacheMaker = std::function<std::unique_ptr<KVCache<T>>(int n_layer, int width, int max_len)>;

struct IncrementalParts {
  CacheMaker<double> cache_f64;  ///< empty: the cache named by IncrementalOptions::cache
  CacheMaker<float> cache_f32;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_incremental_vs_full(const IncrementalOptions& o, const RunContext& ctx,
                               const IncrementalParts& parts = {});

}  // namespace kvlab::checks
