// rope-breaks-absorb (000 §4.4.1): options, what it measures, and its
// testable steps. See rope_breaks_absorb.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "checks/rope_relative.hpp"
#include "framework/spec.hpp"
#include "model/mla.hpp"

namespace kvlab::checks::rope_breaks_absorb {

struct RopeBreaksAbsorbOptions {
  int max_delta = 64;       ///< relative offsets s − t = 1 .. max_delta compared with 0
  int pairs = 32;           ///< random (t, s, c_Q, c_KV) draws for the score identity
  double theta = 10000.0;   ///< RoPE base
};

struct RopeBreaksAbsorbParts {
  RopeFn rope;  ///< empty: kvlab::apply_rope; a rope that does not rotate must make the check fail
};

/// One head of one draw of the score identity.
struct AbsorbIdentityDraw {
  int t = 0, s = 0;    ///< query and key positions
  double mag = 0;      ///< √2‖c_Q‖‖W_UQ,i‖_F‖W_UK,i‖_F‖c_KV‖: bounds Σ|terms| of either nesting
  double error = 0;    ///< |(R_t q_C,i)·(R_s k_C,i) − c_Q W_UQ,i R_(s−t) W_UK,iᵀ c_KVᵀ|
};

/// One offset Δ: how far M_i(Δ) = W_UQ,i R_Δ W_UK,iᵀ moved from M_i(0), over the heads.
struct AbsorbOffset {
  int delta = 0;
  double relative = 0;  ///< max_i ‖M_i(Δ) − M_i(0)‖_F / ‖M_i(0)‖_F
  double entry = 0;     ///< max entry |M_i(Δ) − M_i(0)|
};

/// What rope-breaks-absorb measured on layer 0 of the MLA mini-GPT.
struct RopeBreaksAbsorbMeasured {
  RopeBreaksAbsorbOptions options;
  std::uint64_t seed = 0;
  MlaConfig config;                        ///< the mini-GPT whose up-projections were used
  std::vector<AbsorbIdentityDraw> draws;   ///< --pairs draws × heads
  double row_a = 0, row_b = 0;             ///< largest row norms of W_UQ,i and W_UK,i over heads
  std::vector<AbsorbOffset> offsets;       ///< Δ = 1 .. --max-delta
};

/// Measures the score identity over --pairs draws and M_i(Δ) for every offset, through `parts`'
/// RoPE (kvlab::apply_rope when empty).
RopeBreaksAbsorbMeasured measure_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                                                     const RopeBreaksAbsorbParts& parts = {});
/// The identity within its float64 bound; the count of offsets whose M_i(Δ) moved beyond the
/// rounding threshold = --max-delta, exactly.
std::vector<Expectation> judge_rope_breaks_absorb(const RopeBreaksAbsorbMeasured& m);

/// The check as data (registered as `rope-breaks-absorb`).
const CheckDef<RopeBreaksAbsorbOptions, RopeBreaksAbsorbMeasured>& rope_breaks_absorb_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                              const RopeBreaksAbsorbParts& parts = {});

}  // namespace kvlab::checks::rope_breaks_absorb

namespace kvlab::checks {
using namespace rope_breaks_absorb;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
