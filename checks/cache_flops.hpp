// cache-flops (004 §1.1 group 3, §0.1, §1.5): options, what it measures, and its testable steps.
// See cache_flops.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "framework/spec.hpp"

namespace kvlab::checks::cache_flops {

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

/// One instrumented generation step: the cumulative layer FLOPs after t tokens at width d,
/// counted in the mini-GPT's loops and given by the formulas.
struct FlopCount {
  int d = 0;
  int t = 0;
  std::uint64_t naive_counted = 0, naive_formula = 0;
  std::uint64_t cached_counted = 0, cached_formula = 0;
};

/// One row of the table at the document's width: cumulative FLOPs after t tokens.
struct FlopSweepRow {
  int t = 0;
  std::uint64_t naive = 0, cached = 0;
};

/// What cache-flops measured: integer FLOP counts only.
struct CacheFlopsMeasured {
  CacheFlopsOptions options;
  std::uint64_t seed = 0;          ///< of the instrumented model (the counts do not depend on it)
  std::vector<FlopCount> counted;  ///< d = 16, 32, 64 × t = 1..count_tokens, in that order
  std::vector<FlopSweepRow> sweep; ///< t = 1, 2, 4, .. up to max_tokens (and max_tokens), at d
  std::uint64_t naive_2048 = 0, cached_2048 = 0;  ///< the formulas at d = 4096, T = 2048 (004 §1.5)
};

/// Counts the instrumented generations and evaluates the formulas (`parts` or the library's).
/// Throws InputError on out-of-range options.
CacheFlopsMeasured measure_cache_flops(const CacheFlopsOptions& o, const RunContext& ctx,
                                       const CacheFlopsParts& parts = {});
/// The verdict rows: counted ≠ formula for the naive and the cached run (counts, exact), and the
/// orders of magnitude saved at d = 4096, T = 2048 (3, exact).
std::vector<Expectation> judge_cache_flops(const CacheFlopsMeasured& m);

/// The check as data (registered as `cache-flops`).
const CheckDef<CacheFlopsOptions, CacheFlopsMeasured>& cache_flops_check();

/// Runs the check with `parts` (validate, measure, judge, present). Throws InputError on
/// out-of-range options.
Result run_cache_flops(const CacheFlopsOptions& o, const RunContext& ctx, const CacheFlopsParts& parts = {});

}  // namespace kvlab::checks::cache_flops

namespace kvlab::checks {
using namespace cache_flops;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
