// cat-vs-prealloc (004 §3.1, group 8): options, what it measures, and its testable steps.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cache/kv_cache.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::cat_vs_prealloc {

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

/// What cat-vs-prealloc measured: each cache's counters and its median time.
struct CatVsPreallocMeasured {
  CatVsPreallocOptions options;
  RunContext context;
  CacheStats concat, prealloc;                 ///< of the first run (every run counts the same)
  double concat_seconds = 0, prealloc_seconds = 0;  ///< median over --repeats (shown, never judged)
};

/// Appends --tokens positions to each cache, --repeats times.
CatVsPreallocMeasured measure_cat_vs_prealloc(const CatVsPreallocOptions& o, const RunContext& ctx,
                                              const CatVsPreallocParts& parts = {});
/// n(n+1)/2 and n positions moved (exact), and their ratio to half an ulp; the course's figures at 4096.
std::vector<Expectation> judge_cat_vs_prealloc(const CatVsPreallocMeasured& m);

/// The check as data (registered as `cat-vs-prealloc`).
const CheckDef<CatVsPreallocOptions, CatVsPreallocMeasured>& cat_vs_prealloc_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_cat_vs_prealloc(const CatVsPreallocOptions& o, const RunContext& ctx,
                           const CatVsPreallocParts& parts = {});

}  // namespace kvlab::checks::cat_vs_prealloc

namespace kvlab::checks {
using namespace cat_vs_prealloc;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
