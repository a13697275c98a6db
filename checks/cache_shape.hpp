// cache-shape (000 [b] of §A.2; 000 §2.1, §4.2): options, what it measures,
// and its testable steps. See cache_shape.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cost/kv_cache.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::cache_shape {

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

/// One variant's caches as read off their buffers, and what the formula says for its shape.
struct CacheVariantMeasured {
  int n_kv = 0;                  ///< K/V heads: H (MHA), G (GQA), 1 (MQA); 0: MLA
  std::uint64_t bytes = 0;       ///< Σ sequences, layers: elements held · sizeof(float)
  int rows = 0, width = 0, second_width = 0;  ///< layer 0, sequence 0: rows, K (c_KV) and V (k_R) widths
  std::uint64_t formula_bytes = 0;  ///< the formula's total bytes for the same shape (CacheShapeParts::formula)
  double worst_tensor_diff = 0;     ///< largest |elements held − formula tensor| over layers × tensors
};

/// What cache-shape measured: MHA, GQA, MQA and MLA, in that order.
struct CacheShapeMeasured {
  CacheShapeOptions options;
  std::uint64_t seed = 0;
  std::vector<CacheVariantMeasured> variants;
};

/// Runs --batch sequences through each variant's mini-GPT and reads its caches. `parts.formula`
/// replaces kv_cache_size.
CacheShapeMeasured measure_cache_shape(const CacheShapeOptions& o, const RunContext& ctx,
                                       const CacheShapeParts& parts = {});
/// Per variant: bytes = formula, tensors = formula, a token's width; MHA/GQA = H/G, MHA/MQA = H. All exact.
std::vector<Expectation> judge_cache_shape(const CacheShapeMeasured& m);

/// The check as data (registered as `cache-shape`).
const CheckDef<CacheShapeOptions, CacheShapeMeasured>& cache_shape_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_cache_shape(const CacheShapeOptions& o, const RunContext& ctx, const CacheShapeParts& parts = {});

}  // namespace kvlab::checks::cache_shape

namespace kvlab::checks {
using namespace cache_shape;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
