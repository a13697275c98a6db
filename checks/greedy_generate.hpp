// greedy-generate (004 §3.5 test 2; 004 §1.6): options and the testable entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/generate.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct GreedyGenerateOptions {
  int prompt = 8;       ///< prompt tokens (seeded random ids)
  int new_tokens = 40;  ///< tokens generated greedily
  int block_size = 32;  ///< window of learned positions; generation runs past it by default
  int kv_heads = 8;     ///< of 8 query heads (8 MHA, 2 GQA, 1 MQA)
};

/// The injectable pieces: the cached generator's schedule and its cache. The unit tests pass a
/// schedule that re-prefills the wrong window, or a cache that loses a position.
struct GreedyGenerateParts {
  /// (prompt, n_new, block_size) -> the cached generator's calls; empty: generation_schedule.
  std::function<std::vector<ForwardCall>(std::int64_t, std::int64_t, std::optional<std::int64_t>)> cached_schedule;
  GenerationCacheMaker<double> cache_f64;  ///< empty: PreallocCache
  GenerationCacheMaker<float> cache_f32;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_greedy_generate(const GreedyGenerateOptions& o, const RunContext& ctx,
                           const GreedyGenerateParts& parts = {});

}  // namespace kvlab::checks
