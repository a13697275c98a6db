// cat-vs-prealloc (004 §3.1, group 8): options and the testable entry point.
#pragma once

#include <functional>
#include <memory>

#include "cache/kv_cache.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

struct CatVsPreallocOptions {
  int tokens = 4096;     ///< tokens generated (appended one at a time)
  int kv_heads = 1;      ///< width of a position = kv_heads * head_dim (for the timing)
  int head_dim = 16;
  int repeats = 1;       ///< timing: median of this many runs (1: keeps kvlab all quick)
};

/// The two caches under test, made for (n_layer = 1, width, max_len). Unit tests substitute
/// broken ones to show the check fails.
struct CatVsPreallocParts {
  std::function<std::unique_ptr<KVCache<double>>(int width, int max_len)> concat;
  std::function<std::unique_ptr<KVCache<double>>(int width, int max_len)> prealloc;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_cat_vs_prealloc(const CatVsPreallocOptions& o, const RunContext& ctx,
                           const CatVsPreallocParts& parts = {});

}  // namespace kvlab::checks
