// paged-cache (000 §5.3, §6.2, sanity [f]): options, what it measures, and its testable steps.
// See paged_cache.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/paged.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::paged_cache {

struct PagedCacheOptions {
  int block_size = 16;   ///< positions per block (the document's 16)
  int num_blocks = 64;   ///< blocks in the pool; at least 35 so that blocks 12, 7, 34, 19, 5 exist
};

/// The injectable piece: the pool's deliberate bugs (unit tests pass a broken one).
struct PagedCacheParts {
  PagedFaults faults;
};

/// The pool after one step of the replay: A's and B's tables (empty optional: no such sequence),
/// the ref counts of blocks 12, 7, 34, 19, 5, the copies so far, the blocks in use and the
/// problems its audit found.
struct PagedStep {
  std::string step;  ///< what happened, e.g. "A appends 64 tokens"
  std::optional<std::vector<int>> table_a, table_b;
  std::vector<int> refs;
  std::uint64_t cow_copies = 0;
  int blocks_in_use = 0;
  int audit_problems = 0;
};

/// What paged-cache measured while replaying 000 §5.3's example on the pool.
struct PagedCacheMeasured {
  PagedCacheOptions options;
  RunContext context;
  std::vector<int> table_a, table_b;        ///< after A's 4 blocks and B's fork + own tokens
  int shared_tokens = 0;                    ///< positions whose K lives in the same slot for A and B
  int ref_error = 0;                        ///< Σ |ref − (2, 2, 1, 1, 1)| over blocks 12, 7, 34, 19, 5
  std::uint64_t cow_on_write = 0;           ///< copies made by A's write after the rollback
  int ref7_after_write = 0;                 ///< ref count of block 7 after that write
  double mirror_diff = 0.0;                 ///< max |gathered K/V − contiguous mirror| (before and after the copy)
  bool exhausted_refused = false;           ///< append to a full pool threw PoolExhausted and changed nothing
  std::string exhausted_message;            ///< what it said
  int audit_problems = 0;                   ///< summed over the steps
  std::vector<std::string> first_problems;  ///< the first five, "step: problem"
  int blocks_free_at_end = 0;               ///< free + evictable after freeing every sequence
  std::uint64_t cow_copies = 0, blocks_allocated = 0;  ///< the pool's counters at the end
  std::vector<PagedStep> steps;
};

/// Replays the example. Throws InputError on out-of-range options.
PagedCacheMeasured measure_paged_cache(const PagedCacheOptions& o, const RunContext& ctx,
                                       const PagedCacheParts& parts = {});
/// The verdict rows: tables, shared tokens, ref counts, copies and block counts exactly (integer
/// bookkeeping); gathered K/V equal to the mirrors exactly (copies, no arithmetic); audit clean.
std::vector<Expectation> judge_paged_cache(const PagedCacheMeasured& m);

/// The check as data (registered as `paged-cache`).
const CheckDef<PagedCacheOptions, PagedCacheMeasured>& paged_cache_check();

/// Runs the check (validate, measure, judge, present). Throws InputError on out-of-range options.
Result run_paged_cache(const PagedCacheOptions& o, const RunContext& ctx, const PagedCacheParts& parts = {});

}  // namespace kvlab::checks::paged_cache

namespace kvlab::checks {
using namespace paged_cache;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
