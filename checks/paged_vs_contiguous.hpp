// paged-vs-contiguous (000 §5.2): options and the testable entry point.
#pragma once

#include "cache/paged.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct PagedVsContiguousOptions {
  int prefill = 8;       ///< prompt tokens of each sequence
  int decode = 24;       ///< tokens then decoded one at a time
  int block_size = 16;   ///< the middle block size; 1 and prefill + decode + 1 are always run
  int kv_heads = 2;      ///< K/V heads of 8 query heads (GQA by default)
};

/// The injectable piece: the pool's deliberate bugs (unit tests pass a broken one).
struct PagedVsContiguousParts {
  PagedFaults faults;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                               const PagedVsContiguousParts& parts = {});

}  // namespace kvlab::checks
