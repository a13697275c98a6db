// greedy-generate (004 §3.5 test 2; 004 §1.6): options, what it measures, and its testable
// steps. See greedy_generate.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/generate.hpp"
#include "framework/spec.hpp"
#include "model/config.hpp"

namespace kvlab::checks::greedy_generate {

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

/// What greedy-generate measured: both generators' tokens and forward calls, and their comparison.
struct GreedyGenerateMeasured {
  GreedyGenerateOptions options;
  RunContext context;            ///< seed, dtype, device and --weights of the run
  ModelConfig config;            ///< the model that ran (the options' or the --weights file's)
  bool on_device = false;        ///< both generators ran on the device operations
  bool bytes = false;            ///< a byte-level --weights model: the prompt is text, the output shown as text
  std::vector<int> prompt;
  std::vector<int> naive, cached;  ///< prompt + generated ids; naive: the prompt only if it failed
  std::vector<ForwardCall> naive_calls, cached_calls;  ///< what each generator fed the model
  OpCount naive_count, cached_count;                    ///< count_schedule of each
  double differing = 0;          ///< generated tokens that differ (NaN when a generator failed)
  std::int64_t first_diff = -1;  ///< step of the first differing token; -1: none
  std::int64_t reprefills = 0;   ///< fresh caches of the cached generator after its first call
  std::string naive_error, cached_error;  ///< what a failing generator threw; "" when it ran
  std::string device_note;       ///< the device path: which device ran it
};

/// Builds the model, runs both generators (on the host at ctx.dtype, or on the device) and
/// compares their tokens. Throws InputError on a --weights file that cannot run it.
GreedyGenerateMeasured measure_greedy_generate(const GreedyGenerateOptions& o, const RunContext& ctx,
                                               const GreedyGenerateParts& parts = {});
/// Differing tokens exactly 0; re-prefills exactly one per step past block_size.
std::vector<Expectation> judge_greedy_generate(const GreedyGenerateMeasured& m);

/// The check as data (registered as `greedy-generate`).
const CheckDef<GreedyGenerateOptions, GreedyGenerateMeasured>& greedy_generate_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_greedy_generate(const GreedyGenerateOptions& o, const RunContext& ctx,
                           const GreedyGenerateParts& parts = {});

}  // namespace kvlab::checks::greedy_generate

namespace kvlab::checks {
using namespace greedy_generate;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
