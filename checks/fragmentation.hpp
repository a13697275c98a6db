// fragmentation: options, injectable parts and the pure run function (fragmentation.cpp), declared
// for tests/test_serve.cpp, which injects an allocator that loses blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "serve/kv_memory.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option for invalid options.
Result run_fragmentation(const FragmentationOptions& o, const RunContext& ctx, const FragmentationParts& parts = {});

}  // namespace kvlab::checks
