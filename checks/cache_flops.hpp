// cache-flops (004 §1.1 group 3, §0.1, §1.5): options and the testable entry point. See cache_flops.cpp.
#pragma once

#include <cstdint>
#include <functional>

#include "framework/check.hpp"

namespace kvlab::checks {

struct CacheFlopsOptions {
  int d = 4096;             ///< width of the table (the document's d)
  int max_tokens = 4096;    ///< the table's T runs over powers of two up to this
  int count_tokens = 16;    ///< T of the instrumented runs (at d = 16, 32, 64)
};

/// Cumulative FLOPs of generating T tokens through one layer of width d (as naive_generation_flops).
using FlopFormula = std::function<std::uint64_t(std::uint64_t T, std::uint64_t d)>;

/// Injectable parts; empty: the library's naive_generation_flops and cached_generation_flops.
/// Unit tests pass formulas with a wrong term (the non-causal 4t²d attention count) to show the
/// check fails.
struct CacheFlopsParts {
  FlopFormula naive;
  FlopFormula cached;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_cache_flops(const CacheFlopsOptions& o, const RunContext& ctx, const CacheFlopsParts& parts = {});

}  // namespace kvlab::checks
