// cache-shape (000 [b] of §A.2; 000 §2.1, §4.2): options and the testable entry point. See cache_shape.cpp.
#pragma once

#include <functional>

#include "cost/kv_cache.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct CacheShapeOptions {
  int heads = 16;    ///< H query heads; D = H·d_head
  int head_dim = 8;  ///< d_head (the MLA variant: d_c = 4·d_head, d_r = d_head / 2 rounded up to even)
  int groups = 2;    ///< G, K/V heads of the GQA variant (divides H)
  int layers = 2;    ///< transformer blocks
  int batch = 2;     ///< sequences, one cache each
  int ctx = 24;      ///< tokens run through each sequence
};

/// The size formula under test: kvlab's kv_cache_size (cost/kv_cache.hpp).
using KvSizeFormula = std::function<KvCacheSize(const ModelSpec& m, const KvQuery& q)>;

/// Injectable parts; empty: kv_cache_size. Unit tests pass a formula that forgets K+V's factor 2,
/// one that counts query heads instead of K/V heads, one that doubles MLA's latent.
struct CacheShapeParts {
  KvSizeFormula formula;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_cache_shape(const CacheShapeOptions& o, const RunContext& ctx, const CacheShapeParts& parts = {});

}  // namespace kvlab::checks
