// prefix-cache (000 §3.4; 003 part 6): options and the testable entry point.
#pragma once

#include "cache/paged.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError on out-of-range options.
Result run_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx, const PrefixCacheParts& parts = {});

}  // namespace kvlab::checks
