// mla-absorb (000 §4.3.3): options, what it measures, and its testable steps.
// See mla_absorb.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/mla.hpp"
#include "io/catalogue.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::mla_absorb {

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

/// What mla-absorb measured: the mini-GPT's two paths, and the closed form at --model's shapes.
struct MlaAbsorbMeasured {
  MlaAbsorbOptions options;
  RunContext context;       ///< seed, dtype and device of the run
  MlaConfig config;         ///< the mini-GPT both paths ran
  double diff = 0;          ///< max |Δlogits|, naive vs absorbed
  double max_logit = 0;     ///< max |logit| of the naive path (the bound's scale is max(1, this))
  MlaCounts naive_step, absorbed_step;  ///< the last decode step, counted in mla_attention (empty: --decode 0)
  ModelSpec model;          ///< --model, as loaded
  MlaStepFlops real;        ///< mla_decode_step_formula at --model's shapes and --ctx
};

/// Checks --model (an MLA model from the catalogue or a config.json whose exact counts fit) and
/// --ctx against it. Throws InputError naming the option.
ModelSpec mla_absorb_model(const MlaAbsorbOptions& o);

/// Runs the mini-GPT both ways (`parts`' absorption, kvlab::absorb when empty) and evaluates the
/// closed form at --model's shapes. Throws InputError on a --model it cannot evaluate.
MlaAbsorbMeasured measure_mla_absorb(const MlaAbsorbOptions& o, const RunContext& ctx, const MlaAbsorbParts& parts = {});
/// Logits equal within 2·n·u·max(1, |logit|); the last decode step's counts equal the closed form.
std::vector<Expectation> judge_mla_absorb(const MlaAbsorbMeasured& m);

/// The check as data (registered as `mla-absorb`).
const CheckDef<MlaAbsorbOptions, MlaAbsorbMeasured>& mla_absorb_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_mla_absorb(const MlaAbsorbOptions& o, const RunContext& ctx, const MlaAbsorbParts& parts = {});

}  // namespace kvlab::checks::mla_absorb

namespace kvlab::checks {
using namespace mla_absorb;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
