// attn-params (000 §4.2): options and the testable entry point. See attn_params.cpp.
#pragma once

#include <functional>

#include "model/config.hpp"
#include "model/gpt.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError on out-of-range options (G must divide H).
Result run_attn_params(const AttnParamsOptions& o, const RunContext& ctx, const AttnParamsParts& parts = {});

}  // namespace kvlab::checks
