// parallel-sampling (000 §5.2): options and the testable entry point.
#pragma once

#include "cache/paged.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct ParallelSamplingOptions {
  int samples = 4;      ///< n samples of one prompt
  int prompt = 40;      ///< prompt tokens (2.5 blocks of 16: the last prompt block is copied on write)
  int new_tokens = 24;  ///< tokens sampled per sample
  int block_size = 16;
};

/// The injectable piece: the pool's deliberate bugs (unit tests pass a broken one).
struct ParallelSamplingParts {
  PagedFaults faults;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx,
                             const ParallelSamplingParts& parts = {});

}  // namespace kvlab::checks
