// prefix-cache (000 §3.4; 003 part 6): options, what it measures, and its testable steps. See
// prefix_cache.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/paged.hpp"
#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::prefix_cache {

struct PrefixCacheOptions {
  int requests = 8;        ///< requests that share the system prompt
  int system_tokens = 40;  ///< the shared system prompt (2.5 blocks of 16: the last block diverges mid-block)
  int user_tokens = 8;     ///< each request's own text after it
  int decode = 4;          ///< tokens decoded per request
  int block_size = 16;
};

/// The injectable piece: the pool's deliberate bugs (unit tests pass a broken one).
struct PrefixCacheParts {
  PagedFaults faults;
};

/// One serving of every request through one pool, prefix caching on or off.
struct PrefixServing {
  std::vector<int> reused;                ///< per request: prompt tokens attached from the cache
  std::vector<std::vector<int>> tables;   ///< per request: block table after decoding
  std::vector<int> shared_blocks;         ///< per request: table entries with ref count > 1
  PoolStats stats;                        ///< the pool's counters at the end
  int blocks_in_use = 0;                  ///< after decoding
  int computed_tokens = 0;                ///< tokens that went through a forward
  std::vector<std::string> audit_problems;  ///< after decoding, then after freeing
  int blocks_free_at_end = 0;             ///< free + evictable after freeing every request
};

/// What prefix-cache measured: the requests, what an ideal prefix cache reuses (computed from the
/// token lists alone, cache/prefix.hpp: the independent reference), both servings and the largest
/// logit difference between them.
struct PrefixCacheMeasured {
  PrefixCacheOptions options;
  RunContext context;
  ModelConfig config;
  std::vector<std::string> names;   ///< per request, in arrival order
  std::size_t miss = 0;             ///< index of the request with another system prompt
  int prompt = 0;                   ///< prompt tokens per request (system + own)
  int num_blocks = 0;               ///< the pool: what the run without caching needs
  std::vector<int> want_reuse;      ///< per request, the reference's reuse
  int want_saved = 0, want_hits = 0, want_cow = 0, want_blocks_on = 0, want_blocks_off = 0;
  PrefixServing on, off;
  double max_abs_diff = 0.0;        ///< max |Δlogits|, caching on vs off (NaN-aware)
  double logit_scale = 1.0;         ///< max |logit| without caching (at least 1)
};

/// Serves the requests with and without prefix caching. Throws InputError on out-of-range options
/// or a --weights model the pool cannot hold.
PrefixCacheMeasured measure_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx,
                                         const PrefixCacheParts& parts = {});
/// The verdict rows: reuse, hits, copies and block counts exactly against the token-list
/// reference; the logits within 2·n·u·max|logit|; audits clean.
std::vector<Expectation> judge_prefix_cache(const PrefixCacheMeasured& m);

/// The check as data (registered as `prefix-cache`).
const CheckDef<PrefixCacheOptions, PrefixCacheMeasured>& prefix_cache_check();

/// Runs the check (validate, measure, judge, present). Throws InputError on out-of-range options.
Result run_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx, const PrefixCacheParts& parts = {});

}  // namespace kvlab::checks::prefix_cache

namespace kvlab::checks {
using namespace prefix_cache;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
