// A discrete-event serving simulator: a trace of requests (serve/trace.hpp) served by one engine
// whose steps cost what the roofline says (serve/step_time.hpp), with KV memory accounted by one
// of three allocators (serve/kv_memory.hpp). Simulated time is deterministic: it is not timing.
//
// Schedulers (000 §3.2–3.3; 003 part 6):
//   static      static batching: when the engine is idle it takes up to max_batch waiting
//               requests (FCFS, as many as memory holds at their final length), prefills them in
//               one step, then decodes until the longest is done. Finished members stay in the
//               batch as padding (decoded and discarded, at their final context) and every
//               response is returned when the batch ends; nobody joins a running batch.
//   continuous  iteration-level scheduling (Orca, Yu et al., OSDI'22): before every step,
//               finished requests have left and waiting ones join (FCFS, up to max_batch, while
//               memory admits their prompt); a joining request's whole prompt is prefilled in its
//               first step, together with the others' decodes; a response returns at its last token.
//   chunked     continuous + chunked prefill (Sarathi-Serve, arXiv 2403.02310): every step runs
//               all decodes and at most `prefill_chunk` prompt tokens, split FCFS over the
//               requests still prefilling (000 §3.2: a 4096-token prompt in 4 chunks × 1024).
//               (Sarathi's token budget also counts the decodes; kvlab's chunk counts prompt
//               tokens only, the course's wording.)
// Tokens: the step that completes a prompt emits the request's first token; each decode step
// emits one more. A request of O output tokens is done after its O-th token and caches
// prompt + O − 1 positions.
// Memory: contiguous allocators reserve at admission (max_len or prompt + output); paged reserves
// the prompt's blocks at admission and one more block when a decode crosses a block boundary.
// When the pool has no block for a decode, the most recently admitted request is preempted
// (vLLM's recompute mode, arXiv 2309.06180 §4.5): its blocks are freed, it goes back to the front
// of the queue, and on readmission it prefills prompt + the tokens it had emitted, then goes on.
// Static batching reserves every member's final length at admission with any allocator (a static
// batch cannot preempt).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/kv_memory.hpp"
#include "serve/step_time.hpp"
#include "serve/trace.hpp"

namespace kvlab::serve {

enum class Policy { static_batching, continuous, chunked };
/// "static", "continuous", "chunked".
const char* policy_name(Policy p);

/// A request still prefilling, as the chunker sees it: `done` of `target` positions computed.
struct PendingPrefill {
  std::size_t request = 0;  ///< index into the trace
  std::uint64_t done = 0;
  std::uint64_t target = 0;
};
/// A chunk the chunker plans: positions [start, start + tokens) of `request`'s prompt.
struct ChunkPlan {
  std::size_t request = 0;
  std::uint64_t start = 0;
  std::uint64_t tokens = 0;
};
/// Plans one step's prefill: given the pending prefills in admission order and the prompt-token
/// budget (UINT64_MAX: no limit), which chunks to compute. After the step each planned request's
/// progress is start + tokens. A 0-token chunk does nothing.
using Chunker = std::function<std::vector<ChunkPlan>(const std::vector<PendingPrefill>&, std::uint64_t budget)>;

/// The default chunker: FCFS, each pending request gets min(remaining, budget left).
std::vector<ChunkPlan> fcfs_chunker(const std::vector<PendingPrefill>& pending, std::uint64_t budget);

struct SimConfig {
  Policy policy = Policy::continuous;
  std::uint64_t max_batch = 64;        ///< running requests at most (static: the batch size)
  std::uint64_t prefill_chunk = 1024;  ///< chunked: prompt tokens per step
  KvAllocator allocator = KvAllocator::paged;
  std::uint64_t kv_tokens = 0;         ///< KV memory in token slots (>= max_len)
  std::uint64_t block = 16;            ///< paged: slots per block
  std::uint64_t max_len = 2048;        ///< max_length: slots per request; every request fits in it
  std::uint64_t max_steps = 20'000'000;  ///< a guard against a scheduler that never finishes
};

/// The injectable parts of a simulation (tests replace them with broken ones).
struct SimParts {
  std::function<std::unique_ptr<KvMemory>(KvAllocator, std::uint64_t, std::uint64_t, std::uint64_t)>
      make_memory = make_kv_memory;
  Chunker chunker = fcfs_chunker;
  /// Called with the fraction of requests done, at most ~100 times (a progress bar); may be empty.
  std::function<void(double)> progress;
};

/// What happened to one request. Times in simulated seconds; −1 where it never happened.
struct RequestRecord {
  std::uint64_t id = 0;
  double arrival_s = 0.0;
  std::uint64_t prompt_tokens = 0, output_tokens = 0;
  double admitted_s = -1.0;     ///< first admission
  double first_token_s = -1.0;  ///< end of the step that completed its prompt
  double last_token_s = -1.0;
  double returned_s = -1.0;     ///< when its response returns (static: the batch's end)
  double max_gap_s = 0.0;       ///< longest wait between two of its tokens
  std::uint64_t tokens_emitted = 0;
  std::uint64_t prefill_tokens = 0;  ///< prompt positions computed (recompute included)
  std::uint64_t prefill_chunks = 0;  ///< non-empty chunks that computed them
  std::uint64_t preemptions = 0;
  /// Prompt positions computed beyond the prompt because of preemptions: progress discarded, plus
  /// the emitted tokens the last re-prefill covers. prefill_tokens = prompt + this, exactly.
  std::uint64_t recomputed_tokens = 0;
};

/// One engine step. Memory figures are after the step.
struct StepRecord {
  double start_s = 0.0, duration_s = 0.0;
  std::uint64_t running_before = 0;  ///< unfinished requests in the batch before admission
  std::uint64_t admitted = 0, running = 0, waiting = 0;
  std::uint64_t decodes = 0;         ///< tokens decoded (padding included)
  std::uint64_t padding = 0;         ///< static: finished members decoded and discarded
  std::uint64_t prefill_tokens = 0, prefill_chunks = 0;
  std::uint64_t stored_tokens = 0;   ///< Σ cached positions of the batch's requests
  std::uint64_t held_slots = 0;      ///< the allocator's count
  std::uint64_t held_by_rule = 0;    ///< the simulator's count from the allocator's rule
  std::uint64_t free_slots = 0, capacity_slots = 0, largest_free_run = 0;
  std::uint64_t waste_max = 0;       ///< max over the batch of (slots it holds − positions cached)
  bool external_block = false;       ///< admission failed though enough slots were free (holes)
};

struct SimResult {
  std::vector<RequestRecord> requests;  ///< in trace order
  std::vector<StepRecord> steps;
  std::vector<double> gaps_s;           ///< every inter-token gap of every request
  double makespan_s = 0.0;              ///< end of the last step
  double busy_s = 0.0;                  ///< Σ step durations
  std::uint64_t preemptions = 0;
  std::uint64_t final_free_slots = 0, final_capacity_slots = 0;  ///< the pool after the last request
};

/// Serves `trace` under `cfg` (rules at the top of this file). Throws InputError naming "kv-tokens"
/// or "block" for memory that cannot hold one longest request, "max-len" when a request is longer
/// than cfg.max_len, "max-batch" for 0; std::logic_error when the parts break the simulation
/// (a step with no work, more steps than cfg.max_steps, a chunk past the prompt).
SimResult simulate(const std::vector<Request>& trace, const SimConfig& cfg, const StepTimeModel& model,
                   const SimParts& parts = {});

/// The nearest-rank quantile: the smallest x with at least ⌈q·n⌉ values <= x (q in (0, 1]).
/// NaN for an empty list.
double quantile(std::vector<double> values, double q);

/// Figures of a SimResult. Times in simulated seconds; a mean or quantile over no samples is 0
/// (e.g. TPOT when every output is one token).
struct SimSummary {
  double throughput_tok_s = 0.0;  ///< tokens emitted / makespan
  double requests_per_s = 0.0;
  double ttft_mean_s = 0, ttft_p50_s = 0, ttft_p99_s = 0;     ///< first token − arrival
  double tpot_mean_s = 0, tpot_p50_s = 0, tpot_p99_s = 0;     ///< (last − first)/(O − 1), O >= 2
  double itl_mean_s = 0, itl_p50_s = 0, itl_p99_s = 0, itl_max_s = 0;  ///< pooled inter-token gaps
  double latency_mean_s = 0, latency_p50_s = 0, latency_p99_s = 0;     ///< returned − arrival
  double utilization = 0.0;       ///< ∫ stored dt / ∫ held dt (KV slots holding a token's state)
  double mean_batch = 0.0;        ///< ∫ running dt / ∫ dt over the steps
  std::uint64_t max_batch = 0;
  double busy_fraction = 0.0;     ///< busy / makespan (<= 1)
  std::uint64_t tokens_emitted = 0, prefill_tokens = 0;
};
SimSummary summarize(const SimResult& r);

}  // namespace kvlab::serve
