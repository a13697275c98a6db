// paged-vs-contiguous (000 §5.2): options, what it measures, and its testable steps. See
// paged_vs_contiguous.cpp.
#pragma once

#include <string>
#include <vector>

#include "cache/paged.hpp"
#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::paged_vs_contiguous {

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

/// One block size's run: both sequences through one paged pool against each alone in a contiguous
/// cache.
struct PagedRun {
  int block_size = 0;
  int blocks_per_sequence = 0;  ///< ⌈(prefill + decode) / block size⌉
  int blocks_held = -1;         ///< blocks the two sequences' tables hold (CPU; −1 on the device)
  std::vector<int> table_a;     ///< sequence A's block table (CPU)
  double max_abs_diff = 0.0;    ///< max |Δlogits| over both sequences (NaN-aware)
};

/// What paged-vs-contiguous measured, per block size, and the pool's audit (CPU).
struct PagedVsContiguousMeasured {
  PagedVsContiguousOptions options;
  RunContext context;
  ModelConfig config;
  double logit_scale = 1.0;                ///< max |logit| of the contiguous runs (at least 1)
  std::vector<PagedRun> runs;              ///< block sizes 1, --block-size, prefill + decode + 1
  std::vector<std::string> audit_problems;  ///< "block size B: problem", all block sizes (CPU)
  std::string device_note;                 ///< --device cuda: the device and its library
};

/// Runs both caches on the CPU (any --dtype) or the device (--device cuda). Throws InputError on
/// out-of-range options or a --weights model the pool cannot hold.
PagedVsContiguousMeasured measure_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                                                     const PagedVsContiguousParts& parts = {});
/// The verdict rows: per block size the logits within 2·n·u·max|logit| and (CPU) the blocks held
/// exactly; (CPU) the pool's audit clean.
std::vector<Expectation> judge_paged_vs_contiguous(const PagedVsContiguousMeasured& m);

/// The check as data (registered as `paged-vs-contiguous`).
const CheckDef<PagedVsContiguousOptions, PagedVsContiguousMeasured>& paged_vs_contiguous_check();

/// Runs the check (validate, measure, judge, present). Throws InputError on out-of-range options.
Result run_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                               const PagedVsContiguousParts& parts = {});

}  // namespace kvlab::checks::paged_vs_contiguous

namespace kvlab::checks {
using namespace paged_vs_contiguous;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
