// mla-decoupled (000 §4.4.2, §6.3): options, what it measures, and its
// testable steps. See mla_decoupled.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/mla.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::mla_decoupled {

struct MlaDecoupledOptions {
  int prefill = 8;   ///< prompt tokens of the incremental run
  int decode = 8;    ///< tokens then decoded one at a time (absorbed path)
  int pairs = 32;    ///< random (t, s, h_t, h_s) draws for the score split
};

struct MlaDecoupledParts {
  /// The absorbed weights of one layer; empty: kvlab::absorb. Tests pass a broken one.
  std::function<MlaAbsorbed<double>(const MlaWeights<double>&, const MlaConfig&)> absorb;
};

/// One head of one draw of the score split.
struct ScoreSplitDraw {
  double mag = 0;    ///< Σ|terms| bound: ‖c_Q‖‖W_UQ,i‖_F‖W_UK,i‖_F‖c_KV‖ + ‖q_R,i‖‖k_R‖
  double error = 0;  ///< |[q_C; q_R]·[k_C; k_R] − (c_Q W̃_QK,i c_KVᵀ + q_R,i·k_R)|
};

/// What mla-decoupled measured on the MLA mini-GPT.
struct MlaDecoupledMeasured {
  MlaDecoupledOptions options;
  std::uint64_t seed = 0;
  MlaConfig config;                  ///< the mini-GPT (2 layers, D 64, 8 heads × d_h 8, d_c 32, d_q 24, d_r 4)
  std::vector<ScoreSplitDraw> split; ///< --pairs draws × heads
  double diff = 0;                   ///< max |Δlogits|, absorbed cached decode vs one full naive forward
  double max_logit = 0;              ///< max |logit| of the full forward
  std::uint64_t cache_elements = 0;  ///< elements the decode cache wrote (all layers, all tokens)
};

/// Measures the score split over --pairs draws and cached absorbed decode against one naive forward,
/// with `parts`' absorption (kvlab::absorb when empty).
MlaDecoupledMeasured measure_mla_decoupled(const MlaDecoupledOptions& o, const RunContext& ctx,
                                           const MlaDecoupledParts& parts = {});
/// The split and the logits within float64 rounding bounds; d_c + d_r cached per token per layer, exactly.
std::vector<Expectation> judge_mla_decoupled(const MlaDecoupledMeasured& m);

/// The check as data (registered as `mla-decoupled`).
const CheckDef<MlaDecoupledOptions, MlaDecoupledMeasured>& mla_decoupled_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_mla_decoupled(const MlaDecoupledOptions& o, const RunContext& ctx, const MlaDecoupledParts& parts = {});

}  // namespace kvlab::checks::mla_decoupled

namespace kvlab::checks {
using namespace mla_decoupled;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
