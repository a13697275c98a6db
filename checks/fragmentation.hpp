// fragmentation: options, injectable parts, what it measures, and its testable steps
// (fragmentation.cpp); tests/checks/fragmentation_test.cpp injects an allocator that loses blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/kv_memory.hpp"
#include "framework/spec.hpp"
#include "io/catalogue.hpp"
#include "serve/simulator.hpp"
#include "serve/trace.hpp"

namespace kvlab::checks::fragmentation {

struct FragmentationOptions {
  std::int64_t requests = 200;     ///< --requests (--long: 2000)
  std::int64_t kv_tokens = 32768;  ///< --kv-tokens: KV memory in token slots (16 GiB of llama-2-7b's cache)
  std::int64_t block = 16;         ///< --block: paged block size, tokens
  double rate = 0.0;               ///< --rate: Poisson arrivals/s; 0 = all queued at t = 0 (memory-bound)
  std::string model = "llama-2-7b", gpu = "a100-80gb";
  bool long_run = false;
};

struct FragmentationParts {
  /// The allocators (serve::make_kv_memory); a test swaps in one that loses blocks.
  std::function<std::unique_ptr<serve::KvMemory>(serve::KvAllocator, std::uint64_t, std::uint64_t, std::uint64_t)>
      make_memory = serve::make_kv_memory;
  /// The largest batch at final length (serve::requests_that_fit).
  std::function<std::uint64_t(serve::KvAllocator, const std::vector<std::uint64_t>&, std::uint64_t, std::uint64_t,
                              std::uint64_t)>
      requests_that_fit = serve::requests_that_fit;
};

/// One allocator's simulation of the trace, and what the check counts over its steps.
struct AllocatorRun {
  serve::KvAllocator kind = serve::KvAllocator::paged;
  serve::SimResult sim;
  serve::SimSummary sum;
  double util_rule = 0.0;         ///< the check's ∫ stored dt / ∫ held dt, held from the allocator's rule
  double util_floor = 0.0;        ///< Σ stored / Σ (stored + (block − 1)·running), over the steps
  std::uint64_t rule_mismatch = 0;  ///< steps where held slots differ from the rule
  std::uint64_t conservation = 0;   ///< steps with held + free ≠ capacity, + 1 if the pool is not whole at the end
  std::uint64_t waste_max = 0;      ///< largest empty slots of one sequence
  std::uint64_t external = 0;       ///< steps blocked by holes
  std::uint64_t max_batch = 0;      ///< largest running batch
};

/// What fragmentation measured: the trace, three simulations of it, and the largest batch each
/// allocator fits at final length (by the library and by the check's own prefix sums).
struct FragmentationMeasured {
  FragmentationOptions options;
  std::uint64_t seed = 0;
  ModelSpec model;                  ///< as loaded (its name and cache size for the table)
  double kv_bytes_per_token = 0;    ///< the engine's, bf16
  serve::TraceStats stats;
  std::uint64_t max_len = 0;        ///< L: the trace's longest request, the max-length reservation
  std::vector<std::uint64_t> lengths;  ///< each request's final length, prompt + output
  std::vector<AllocatorRun> runs;      ///< max-length, exact, paged
  std::vector<std::uint64_t> fit_check, fit_library;  ///< largest batch at final length, same order
};

/// Generates the trace and serves it with each allocator (`parts` or the library's). Throws
/// InputError naming --model, --gpu or --kv-tokens.
FragmentationMeasured measure_fragmentation(const FragmentationOptions& o, const RunContext& ctx,
                                            const FragmentationParts& parts = {});
/// The verdict rows: bookkeeping and bounds (exact), utilization against the check's own rule
/// (E13 on max-length), their order, and the largest batches (the paged / max-length ratio
/// against the course's 2–4×).
std::vector<Expectation> judge_fragmentation(const FragmentationMeasured& m);

/// The check as data (registered as `fragmentation`).
const CheckDef<FragmentationOptions, FragmentationMeasured>& fragmentation_check();

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_fragmentation(const FragmentationOptions& o, const RunContext& ctx, const FragmentationParts& parts = {});

}  // namespace kvlab::checks::fragmentation

namespace kvlab::checks {
using namespace fragmentation;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
