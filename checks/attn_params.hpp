// attn-params (000 §4.2): options, what it measures, and its testable steps.
// See attn_params.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/config.hpp"
#include "model/gpt.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::attn_params {

struct AttnParamsOptions {
  int heads = 16;     ///< H query heads; D = H·d_head
  int head_dim = 8;   ///< d_head
  int groups = 2;     ///< G, K/V heads of the GQA variant (divides H)
  int layers = 2;     ///< transformer blocks of each mini-GPT
};

/// Builds the mini-GPT whose K/V projections are counted.
using AttnModelBuilder = std::function<MiniGPT<double>(const ModelConfig& config, std::uint64_t seed)>;

/// Injectable parts; empty: MiniGPT<double>(config, seed). Unit tests pass a builder that ignores
/// n_kv_head (every variant is MHA) to show the check fails.
struct AttnParamsParts {
  AttnModelBuilder build;
};

/// K+V projection parameters of `model` in `layer`: the elements of w_k and w_v (biases apart).
std::uint64_t kv_projection_params(const MiniGPT<double>& model, int layer);

/// One variant's mini-GPT, as counted.
struct AttnVariantMeasured {
  int n_kv = 0;                           ///< K/V heads it was built with: H, 1 or G
  std::vector<std::uint64_t> per_layer;   ///< kv_projection_params of each layer
  std::int64_t w_k_rows = 0, w_k_cols = 0;  ///< layer 0's w_k shape
  std::uint64_t kv_biases = 0;            ///< layer 0's K and V bias elements (shown, not judged)
};

/// What attn-params counted: MHA, MQA and GQA, in that order.
struct AttnParamsMeasured {
  AttnParamsOptions options;
  std::uint64_t seed = 0;
  std::vector<AttnVariantMeasured> variants;
};

/// Builds the three mini-GPTs (through `parts.build`) and counts their K and V projections.
AttnParamsMeasured measure_attn_params(const AttnParamsOptions& o, const RunContext& ctx,
                                       const AttnParamsParts& parts = {});
/// Per variant: layer 0 = its formula, every layer = its formula; MHA/MQA = H, MHA/GQA = H/G. All exact.
std::vector<Expectation> judge_attn_params(const AttnParamsMeasured& m);

/// The check as data (registered as `attn-params`).
const CheckDef<AttnParamsOptions, AttnParamsMeasured>& attn_params_check();

/// Runs the check. Throws InputError on out-of-range options (G must divide H).
Result run_attn_params(const AttnParamsOptions& o, const RunContext& ctx, const AttnParamsParts& parts = {});

}  // namespace kvlab::checks::attn_params

namespace kvlab::checks {
using namespace attn_params;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
