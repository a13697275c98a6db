// gqa-meanpool (004 §2.4, group 6; 003 Q6): options and the testable entry point. See gqa_meanpool.cpp.
#pragma once

#include <functional>
#include <string>

#include "model/gpt.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct GqaMeanpoolOptions {
  int tokens = 16;  ///< positions of the sequence the outputs are compared on
  /// Trained mode (checks/gqa_meanpool_trained.hpp): the committed target, or this file.
  std::string trained_weights;
  std::string fortunes;   ///< fortunes directory; empty: /usr/share/games/fortunes
  int windows = 4;        ///< validation windows of the trained mode (--long: at least 64)
  bool long_run = false;  ///< trained mode: 64 windows and uptraining (~5% of the steps)
};

/// MHA model → GQA model with n_kv_head K/V heads (as kvlab::mean_pool_kv_heads).
using Pooler = std::function<MiniGPT<double>(const MiniGPT<double>& mha, int n_kv_head)>;

/// Injectable parts; empty: kvlab::mean_pool_kv_heads (float64 runs only; f32 always uses the
/// library). Unit tests pass one that pools the tiled groups (heads g, g + G, ...) to show the
/// check fails.
struct GqaMeanpoolParts {
  Pooler pool_f64;
  /// The trained mode's float32 pooler; empty: kvlab::mean_pool_kv_heads.
  std::function<MiniGPT<float>(const MiniGPT<float>&, int)> pool_f32;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx, const GqaMeanpoolParts& parts = {});

}  // namespace kvlab::checks
