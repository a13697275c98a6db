// chunked-prefill: options, injectable parts, what it measures and its testable steps
// (chunked_prefill.cpp); its test injects a chunker that drops a chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/premises.hpp"
#include "framework/spec.hpp"
#include "io/catalogue.hpp"
#include "serve/simulator.hpp"

namespace kvlab::checks::chunked_prefill {

struct ChunkedPrefillOptions {
  std::int64_t long_prompt = 4096;   ///< --long-prompt: the prompt that arrives mid-decode (000 §3.2)
  std::int64_t chunk = 1024;         ///< --chunk: prompt tokens per step when chunking
  std::int64_t decoders = 16;        ///< --decoders: requests decoding when it arrives
  std::int64_t decoder_prompt = 512;  ///< --decoder-prompt
  std::int64_t decoder_output = 256;  ///< --decoder-output
  std::string model = premises::kModel7b, gpu = premises::kGpu;
  bool long_run = false;             ///< --long: every series row
};

struct ChunkedPrefillParts {
  serve::Chunker chunker = serve::fcfs_chunker;  ///< the chunked run's chunker
};

/// One serving of the trace: the simulation and the decoders' stall while the long prompt prefills.
struct ChunkedPrefillRun {
  serve::SimResult sim;
  serve::SimSummary sum;
  double stall_s = 0.0;         ///< longest step (simulated s) between the long prompt's arrival and first token
  std::size_t stall_steps = 0;  ///< steps in that window
};

/// What chunked-prefill measured: the trace (decoders, then the long prompt arriving at `ready`)
/// served with whole-prompt prefill and with chunked prefill.
struct ChunkedPrefillMeasured {
  ChunkedPrefillOptions options;
  ModelSpec model;  ///< the catalogue model whose cache is simulated
  GpuSpec gpu;
  std::vector<serve::Request> trace;
  double ready = 0.0;  ///< simulated s when every decoder decodes in both modes: the long prompt's arrival
  ChunkedPrefillRun whole, chunked;
};

/// Simulates both runs. Throws InputError naming the option for an unknown --model/--gpu, a
/// workload that does not fit next to the weights, or decoders that finish before the prefill.
ChunkedPrefillMeasured measure_chunked_prefill(const ChunkedPrefillOptions& o, const ChunkedPrefillParts& parts = {});
/// The verdict rows: both stalls within the check's own roofline bounds (and >= 100 ms at the
/// course's figures), chunked shorter, ⌈P / chunk⌉ chunks, throughput kept, exact accounting.
std::vector<Expectation> judge_chunked_prefill(const ChunkedPrefillMeasured& m);

/// The check as data (registered as `chunked-prefill`).
const CheckDef<ChunkedPrefillOptions, ChunkedPrefillMeasured>& chunked_prefill_check();

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_chunked_prefill(const ChunkedPrefillOptions& o, const RunContext& ctx,
                           const ChunkedPrefillParts& parts = {});

}  // namespace kvlab::checks::chunked_prefill

namespace kvlab::checks {
using namespace chunked_prefill;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
