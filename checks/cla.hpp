// cla (003 part 2, Q3; 004 §2.7): options and the testable entry point.
#pragma once

#include <functional>
#include <memory>

#include "cache/kv_cache.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option on bad input.
Result run_cla(const ClaOptions& o, const RunContext& ctx, const ClaParts& parts = {});

}  // namespace kvlab::checks
