// kv-quant (000 §4.5; 003 part 4): options and the testable entry point. See kv_quant.cpp.
#pragma once

#include <functional>
#include <memory>

#include "quant/quant_cache.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct KvQuantOptions {
  int tokens = 128;            ///< T positions written to each cache
  int kv_heads = 2;            ///< K/V heads (the query heads are as many: MHA)
  int head_dim = 64;           ///< even, >= 8; width = kv_heads · head_dim channels
  int queries = 8;             ///< decode queries attending over the T positions
  int group_size = 128;        ///< G of the judged rows (>= 8); the tables also run 32, 64, 128
  int outlier_channels = 4;    ///< key channels given a large magnitude in the outlier set
  double outlier_scale = 20;   ///< their offset ± (KIVI's large-magnitude channels) on N(0, 1), >= 8
};

/// The library parts kv-quant uses; unit tests replace them with broken ones.
struct KvQuantParts {
  /// A one-layer cache of `width` channels for up to max_len positions; empty: QuantKVCache.
  std::function<std::unique_ptr<QuantKVCache<double>>(int width, int max_len, const QuantConfig&)> make_cache;
};

/// Runs the check. Throws InputError naming the option on bad input.
Result run_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts = {});

}  // namespace kvlab::checks
