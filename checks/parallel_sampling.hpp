// parallel-sampling (000 §5.2): options, what it measures, and its testable steps. See
// parallel_sampling.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/paged.hpp"
#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::parallel_sampling {

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

/// What parallel-sampling measured: the pool's counters after decoding every sample, the blocks
/// all tables share, the audits, and the largest logit difference against each sample's tokens
/// run alone through a contiguous cache (with what its rounding bound needs).
struct ParallelSamplingMeasured {
  ParallelSamplingOptions options;
  RunContext context;
  ModelConfig config;                     ///< the model the samples ran on
  int blocks_after_fork = 0;              ///< in use after the prefill and the forks
  int blocks_in_use = 0;                  ///< in use after decoding every sample
  int blocks_common = 0;                  ///< blocks every sample's table holds
  std::uint64_t cow_copies = 0;           ///< copy-on-write copies made
  std::vector<std::string> running_problems, end_problems;  ///< audit problems while running, after freeing
  int blocks_free_at_end = 0;             ///< free + evictable after freeing every sample
  double max_abs_diff = 0.0;              ///< max |Δlogits|, paged against contiguous (NaN-aware)
  double logit_scale = 1.0;               ///< max |logit| (at least 1), the rounding bound's scale
  std::vector<std::vector<int>> tables;   ///< each sample's block table
  std::vector<std::vector<int>> sampled;  ///< each sample's new tokens
};

/// Prefills, forks, samples and compares. Throws InputError on out-of-range options or a --weights
/// model the pool cannot hold (bidirectional, sliding window, CLA, too short a block_size).
ParallelSamplingMeasured measure_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx,
                                                   const ParallelSamplingParts& parts = {});
/// The verdict rows: block counts and copies exact (integer bookkeeping), the logits within the
/// float rounding bound 2·n·u·max|logit|.
std::vector<Expectation> judge_parallel_sampling(const ParallelSamplingMeasured& m);

/// The check as data (registered as `parallel-sampling`).
const CheckDef<ParallelSamplingOptions, ParallelSamplingMeasured>& parallel_sampling_check();

/// Runs the check (validate, measure, judge, present). Throws InputError on out-of-range options.
Result run_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx,
                             const ParallelSamplingParts& parts = {});

}  // namespace kvlab::checks::parallel_sampling

namespace kvlab::checks {
using namespace parallel_sampling;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
