// cla (003 part 2, Q3; 004 §2.7): options, what it measures, and its testable steps. See cla.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cache/kv_cache.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::cla {

struct ClaOptions {
  int layers = 4;    ///< n_layer
  int share = 2;     ///< adjacent layers per K/V projection and cache layer (cla_share)
  int prefill = 8;   ///< prompt tokens in one forward
  int decode = 12;   ///< tokens then decoded one at a time
};

/// Makes the cache the CLA model decodes with: (cache layers, width, max_len) -> cache.
template <class T>
using ClaCacheMaker = std::function<std::unique_ptr<KVCache<T>>(int n_layer, int width, int max_len)>;

/// Injectable pieces; the unit tests pass broken caches to show the check fails.
struct ClaParts {
  ClaCacheMaker<double> cache_f64;  ///< empty: PreallocCache
  ClaCacheMaker<float> cache_f32;
};

/// What cla measured: counts from the CLA model's real cache and weights, the same for the model
/// without CLA, and the largest logit difference of the cached decode against one full forward.
struct ClaMeasured {
  ClaOptions options;
  RunContext context;                     ///< seed, dtype and device of the run
  std::uint64_t stored = 0;               ///< positions the CLA cache wrote
  std::uint64_t held = 0;                 ///< positions it holds, summed over its layers
  std::uint64_t base_stored = 0;          ///< positions the cache of the model without CLA wrote
  std::uint64_t bytes = 0, base_bytes = 0;    ///< K and V bytes of those positions
  std::uint64_t params = 0, base_params = 0;  ///< K/V parameters counted from the weights
  std::vector<int> cache_layer;           ///< the cache layer each layer reads
  double max_abs_diff = 0;                ///< max |Δlogits|, cached decode vs full forward
  double logit_scale = 0;                 ///< max(1, max |logit| of the full forward)
};

/// Runs both models at ctx.dtype, the CLA one decoding through the cache `parts` makes.
ClaMeasured measure_cla(const ClaOptions& o, const RunContext& ctx, const ClaParts& parts = {});
/// The verdict rows: positions stored and K/V parameters against ceil(l/s) (exact counts), their
/// ratios to the model without CLA (the cache's the headline), and decode = full forward within
/// rounding.
std::vector<Expectation> judge_cla(const ClaMeasured& m);

/// The check as data (registered as `cla`).
const CheckDef<ClaOptions, ClaMeasured>& cla_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_cla(const ClaOptions& o, const RunContext& ctx, const ClaParts& parts = {});

}  // namespace kvlab::checks::cla

namespace kvlab::checks {
using namespace cla;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
