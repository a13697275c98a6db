// gqa-meanpool (004 §2.4, group 6; 003 Q6): options and the testable entry point. See gqa_meanpool.cpp.
#pragma once

#include <functional>

#include "model/gpt.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

struct GqaMeanpoolOptions {
  int tokens = 16;  ///< positions of the sequence the outputs are compared on
};

/// MHA model → GQA model with n_kv_head K/V heads (as kvlab::mean_pool_kv_heads).
using Pooler = std::function<MiniGPT<double>(const MiniGPT<double>& mha, int n_kv_head)>;

/// Injectable parts; empty: kvlab::mean_pool_kv_heads (float64 runs only; f32 always uses the
/// library). Unit tests pass one that pools the tiled groups (heads g, g + G, ...) to show the
/// check fails.
struct GqaMeanpoolParts {
  Pooler pool_f64;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx, const GqaMeanpoolParts& parts = {});

}  // namespace kvlab::checks
