// mla-cache (000 §4.3.2, §4.4.3, sanity [c]): options and the testable entry point. See mla_cache.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "io/catalogue.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct MlaCacheOptions {
  std::string mla_model = "deepseek-v2";  ///< catalogue name or config.json with kv_lora_rank
  std::string gqa_model = "llama-3-70b";  ///< the GQA model the document compares with
  int tokens = 16;          ///< mini-GPT: tokens run through the real MLA cache
  int layers = 2;           ///< mini-GPT layers
  int kv_lora_rank = 32;    ///< mini-GPT d_c (4 · d_h, d_h = 8)
  int rope_head_dim = 4;    ///< mini-GPT d_r (even)
};

/// The library parts mla-cache uses; unit tests replace them with wrong ones to show it fails.
struct MlaCacheParts {
  std::function<ModelSpec(const std::string&)> load_model;  ///< empty: kvlab::load_model
  /// Elements one token leaves in one layer's cache, counted from the tensors a cache for the model
  /// allocates (kv_cache_tensors); `kv_heads` overrides the K/V heads (0: the model's own).
  std::function<std::uint64_t(const ModelSpec&, std::uint64_t kv_heads)> elements_per_layer;
};

/// Runs the check. Throws InputError naming the option on bad input.
Result run_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts = {});

}  // namespace kvlab::checks
