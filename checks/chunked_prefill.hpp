// chunked-prefill: options, injectable parts and the pure run function (chunked_prefill.cpp),
// declared for tests/test_serve.cpp, which injects a chunker that drops a chunk.
#pragma once

#include <cstdint>
#include <string>

#include "serve/simulator.hpp"
#include "framework/check.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_chunked_prefill(const ChunkedPrefillOptions& o, const RunContext& ctx,
                           const ChunkedPrefillParts& parts = {});

}  // namespace kvlab::checks
