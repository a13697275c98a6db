// mla-absorb (000 §4.3.3): options and the testable entry point. See mla_absorb.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "model/mla.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct MlaAbsorbOptions {
  int prefill = 8;          ///< prompt tokens (one forward)
  int decode = 8;           ///< tokens then decoded one at a time
  int layers = 2;
  int kv_lora_rank = 32;    ///< d_c
  int q_lora_rank = 24;     ///< d_q; 0: no query latent
  int rope_head_dim = 4;    ///< d_r (even)
  std::string model = "deepseek-v2";  ///< MLA model whose shapes the FLOP formula is evaluated at
  std::int64_t ctx = 4096;  ///< cached positions for that evaluation
};

/// Computes the absorbed weights of one layer; tests pass broken ones (W_UV not folded, W_UK
/// not transposed) to show the check fails.
template <class T>
using AbsorbFn = std::function<MlaAbsorbed<T>(const MlaWeights<T>&, const MlaConfig&)>;

struct MlaAbsorbParts {
  AbsorbFn<double> absorb_f64;  ///< empty: kvlab::absorb
  AbsorbFn<float> absorb_f32;
};

/// Multiply-add FLOPs of one MLA layer for one decoded token with S cached positions (counting
/// the new one), by formula; the same quantity mla_attention counts as it runs.
struct MlaStepFlops {
  std::uint64_t naive = 0, absorbed = 0;
  std::uint64_t naive_weights = 0, absorbed_weights = 0;  ///< weight elements read
};
MlaStepFlops mla_decode_step_formula(std::uint64_t D, std::uint64_t H, std::uint64_t dh, std::uint64_t dc,
                                     std::uint64_t dq, bool q_latent, std::uint64_t dr, std::uint64_t S);

/// Longest chain of summed terms a logit of the MLA mini-GPT `c` passes through over both paths,
/// with S cached positions: the n of the rounding bound 2·n·u·max(1, |logit|).
double mla_reduction_length(const MlaConfig& c, int S);

/// Runs the check. Throws InputError naming the option on bad input.
Result run_mla_absorb(const MlaAbsorbOptions& o, const RunContext& ctx, const MlaAbsorbParts& parts = {});

}  // namespace kvlab::checks
