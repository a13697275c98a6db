// paged-cache (000 §5.3, §6.2, sanity [f]): options and the testable entry point.
#pragma once

#include "cache/paged.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct PagedCacheOptions {
  int block_size = 16;   ///< positions per block (the document's 16)
  int num_blocks = 64;   ///< blocks in the pool; at least 35 so that blocks 12, 7, 34, 19, 5 exist
};

/// The injectable piece: the pool's deliberate bugs (unit tests pass a broken one).
struct PagedCacheParts {
  PagedFaults faults;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_paged_cache(const PagedCacheOptions& o, const RunContext& ctx, const PagedCacheParts& parts = {});

}  // namespace kvlab::checks
