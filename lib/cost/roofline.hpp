// Roofline of one decode step: B sequences each append one token after ctx cached positions
// (004 §1.5, group 5; 000 §3.1).
//
//   FLOPs     = 2·N_used·B                 every weight a token uses does one multiply-add
//             + 4·B·ctx·L·H·head_dim       QKᵀ and AV: 2·ctx·head_dim each, per head, per layer
//               (MLA, absorbed form of 000 §4.3.3: 2·B·ctx·L·H·(d_c + d_r) + 2·B·ctx·L·H·d_c)
//   bytes     = N_read · bytes/param       the weights the step touches, each read once
//             + B · ctx · KV bytes/token   each sequence reads its own cache (kv_cache.hpp)
//   intensity = FLOPs / bytes              FLOP/B
//   ridge     = peak bf16 FLOP/s / bandwidth B/s
//   time      = max(bytes / bandwidth, FLOPs / peak);  tokens/s = B / time
//   bound     = memory when bytes / bandwidth >= FLOPs / peak, else compute
//
// Dense model: N_used = N_read = N, the parameter count.
//
// Mixture of experts (kvlab's own model; the course has none). The model holds N = S + E·P_e
// parameters and a token uses N_active = S + k·P_e of them: S shared ones (embeddings, attention,
// norms, routers, shared experts, dense layers), read by every step, and k of the E routed experts
// of each MoE layer, P_e being one routed expert's parameters summed over the MoE layers. N,
// N_active, E and k give the split:
//     P_e = (N − N_active) / (E − k),   S = N_active − k·P_e.
// Assumptions: routed experts of equal size, the same E and k in every MoE layer, routing uniform
// and independent across the batch's tokens (an expert is among a token's k with probability
// k/E). The batch then touches, on average,
//     D(B) = E·(1 − (1 − k/E)^B)   distinct experts per MoE layer   (D(1) = k, D(B) → E),
// and the step reads N_read = S + D(B)·P_e parameters: N_active at batch 1, tending to N. FLOPs use
// N_used = N_active. Without E and k (the catalogue has them for mixtral-8x7b only) only bounds
// hold, N_active <= N_read <= min(N, B·N_active) (all tokens share their experts / no two share
// one); the step is then costed at the upper bound, worst-case routing, and says so.
//
// The peak is the GPU's dense BF16 tensor rate (the course's 312 TFLOP/s for the A100), whatever
// the weight or cache dtype. Activations, norms, softmax and the LM head beyond 2·N are ignored,
// as in the course.
#pragma once

#include <cstdint>
#include <optional>

#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"

namespace kvlab {

/// What limits a decode step.
enum class Bound { memory, compute };
/// "memory" or "compute".
const char* bound_name(Bound b);

/// A step's time on the roofline, the one place the library writes it: memory time = bytes /
/// bandwidth, compute time = FLOPs / peak (seconds), the step time their max, the bound memory when
/// the memory time is at least the compute time. Inputs: FLOPs, bytes, FLOP/s, B/s (positive rates).
struct RooflineTime {
  double memory_s = 0.0, compute_s = 0.0, time_s = 0.0;
  Bound bound = Bound::memory;
};
RooflineTime roofline_time(double flops, double bytes, double peak_flops_per_s, double bandwidth_bytes_per_s);

/// The ridge point of `g`: bf16_flops_per_s / bandwidth_bytes_per_s, FLOP/B (A100-80GB: 153.0).
double ridge_flops_per_byte(const GpuSpec& g);

/// The mixture-of-experts figures that decide what a decode step reads (model at the top).
struct MoeQuery {
  double active_params = 0.0;                      ///< N_active, parameters one token uses, in [1, N]
  std::optional<std::uint64_t> experts;            ///< E routed experts per MoE layer; absent: unknown
  std::optional<std::uint64_t> experts_per_token;  ///< k, 1 <= k <= E; present exactly when E is
};

/// One decode step to cost.
struct DecodeQuery {
  double n_params = 0.0;         ///< N, all parameters (every expert of an MoE), e.g. 7e9
  double bytes_per_param = 2.0;  ///< 2 for bf16/fp16 weights, 1 for int8, 0.5 for int4
  KvQuery kv;                    ///< batch B, context ctx, cache dtype, K/V head override
  std::optional<MoeQuery> moe;   ///< absent: a dense model, every parameter read and used
};

/// How the weights of one decode step are counted (model at the top of this file).
enum class WeightModel {
  dense,           ///< N read, N used
  moe_uniform,     ///< MoE with E and k: N_read = S + D(B)·P_e, expected under uniform routing
  moe_worst_case,  ///< MoE without E and k: N_read = min(N, B·N_active), the upper bound
};
/// "dense", "MoE, uniform routing" or "MoE, worst-case routing".
const char* weight_model_name(WeightModel w);

/// The parameters a decode step reads and uses. Counts in parameters (not bytes).
struct WeightRead {
  WeightModel model = WeightModel::dense;
  double params_used = 0.0;        ///< per token: N (dense) or N_active (MoE); FLOPs = 2·this·B
  double params_read = 0.0;        ///< N_read, the figure the step is costed at
  double params_read_low = 0.0;    ///< a lower bound on N_read: N_active (all tokens share experts)
  double params_read_high = 0.0;   ///< an upper bound: S + min(E, B·k)·P_e, or min(N, B·N_active)
  double shared_params = 0.0;      ///< S (moe_uniform only; 0 otherwise)
  double params_per_expert = 0.0;  ///< P_e (moe_uniform only; 0 otherwise)
  double experts_touched = 0.0;    ///< D(B), distinct routed experts per MoE layer (moe_uniform only)
};

/// The weights a decode step of `batch` sequences reads and uses, for N = `n_params` and `moe`
/// (formulas at the top of this file). Throws InputError naming "params" (not finite or outside
/// [1, 1e15]), "active-params" (outside [1, N], or below N·k/E, which would make S negative),
/// "experts-per-token" (only one of E and k, k of 0 or k > E) or "batch" (0).
WeightRead weight_read(double n_params, const std::optional<MoeQuery>& moe, std::uint64_t batch);

/// The roofline of a decode step (formulas at the top of this file). Units in the names.
struct DecodeStep {
  WeightRead weights;            ///< parameters read and used (dense: both N)
  double flops_weights = 0.0;    ///< 2·N_used·B
  double flops_attention = 0.0;  ///< 4·B·ctx·L·H·head_dim (MLA: see top)
  double flops = 0.0;            ///< total FLOPs
  double weight_bytes = 0.0;     ///< N_read · bytes/param
  std::uint64_t kv_bytes = 0;    ///< B · ctx · KV bytes/token, exact
  double bytes = 0.0;            ///< weight_bytes + kv_bytes
  double intensity = 0.0;        ///< FLOP/B
  double ridge = 0.0;            ///< FLOP/B of the GPU
  double time_memory_s = 0.0;    ///< bytes / bandwidth
  double time_compute_s = 0.0;   ///< FLOPs / peak
  double time_s = 0.0;           ///< max of the two
  double tokens_per_s = 0.0;     ///< B / time_s
  Bound bound = Bound::memory;
};

/// The attention FLOPs of one sequence at context `ctx` (one new query against the positions each
/// layer holds: ctx, or min(ctx, W) / min(ctx, C) in a window or chunk, none in an attention-free
/// layer; cost/layers.hpp), exact: 4·Σ positions·H·head_dim (4·ctx·L·H·head_dim when every layer
/// attends fully), or the MLA form. Throws InputError when it overflows 64 bits; the
/// message starts "attention FLOPs per sequence".
std::uint64_t attention_flops_per_sequence(const ModelSpec& m, std::uint64_t ctx);

/// Costs a decode step of `m` on `g`. Throws InputError for a bad query: what weight_read and
/// weight_bytes reject, batch or ctx 0, sizes over 64 bits, bad kv-heads.
DecodeStep decode_step(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q);

/// Where decode turns compute-bound as the batch grows at fixed ctx. Intensity is
///   I(B) = B·(2·N_used + a) / (W(B) + B·k),  a = attention FLOPs per sequence, k = KV bytes per
/// sequence, W(B) = N_read(B)·bytes/param. Dense: W is constant and I reaches the ridge r at
/// B* = r·W / (2N + a − r·k). MoE: W(B) is concave with W(0) >= 0, so I still rises with B and B*
/// is found by bisection. Either way I tends to I(∞) = (2·N_used + a) / k and reaches r only when
/// 2·N_used + a > r·k: the KV bytes grow with the batch as fast as the FLOPs do.
struct ComputeBoundBatch {
  bool reachable = false;       ///< whether any batch makes the step compute-bound
  double batch = 0.0;           ///< B* (real); meaningful when reachable
  std::uint64_t min_batch = 0;  ///< smallest integer batch with I(B) >= r; 0 when unreachable
  double intensity_limit = 0.0; ///< I(∞), FLOP/B; +inf for a model that caches nothing per token (Mamba)
};

/// Solves I(B) = ridge for `m` on `g` at the query's ctx, dtype, parameters and MoE figures (its
/// batch is ignored). Same errors as decode_step.
ComputeBoundBatch compute_bound_batch(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q);

}  // namespace kvlab
