// mla-cache (000 §4.3.2, §4.4.3, sanity [c]): options, what it measures, and its testable
// steps. See mla_cache.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/catalogue.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::mla_cache {

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

/// What mla-cache measured: the models as loaded, the elements their caches hold per token per
/// layer (counted from the cache tensors), the closed forms from their shapes, and the mini-GPT's
/// real latent cache.
struct MlaCacheMeasured {
  MlaCacheOptions options;
  std::uint64_t seed = 0;
  ModelSpec mla, gqa;                    ///< as loaded (--mla-model, --gqa-model)
  std::uint64_t mla_n = 0, gqa_n = 0;    ///< counted elements per token per layer
  std::uint64_t mha_n = 0;               ///< counted: the GQA model's shape, every head its own K/V
  std::uint64_t gqa_formula = 0;         ///< 2·n_kv·head_dim of the GQA model
  std::uint64_t mha_formula = 0;         ///< 2·H·head_dim of the GQA model
  std::uint64_t gqa_model_n = 0, mla_model_n = 0;  ///< closed forms × layers: elements per token, whole model
  std::uint64_t mha_own = 0;             ///< 2·H·d_head of the MLA model's own shape; 0 without qk_nope_head_dim
  int mini_prefill = 0;                  ///< mini-GPT tokens prefilled (naive path); the rest decoded absorbed
  int mini_q_lora_rank = 0;              ///< the mini-GPT's query latent (for the note)
  std::uint64_t mini_written = 0;        ///< elements its LatentCache stored
};

/// Loads both models, counts their caches (`parts` or the library's) and runs the mini-GPT.
/// Throws InputError naming --mla-model or --gqa-model.
MlaCacheMeasured measure_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts = {});
/// The verdict rows: counts against the closed forms (exact), their ratios (one rounding a side)
/// with the document's ≈ figures (E20 on 64×), and the mini-GPT's elements written (exact).
std::vector<Expectation> judge_mla_cache(const MlaCacheMeasured& m);

/// The check as data (registered as `mla-cache`).
const CheckDef<MlaCacheOptions, MlaCacheMeasured>& mla_cache_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts = {});

}  // namespace kvlab::checks::mla_cache

namespace kvlab::checks {
using namespace mla_cache;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
