// Roofline of one decode step: B sequences each append one token after ctx cached positions
// (004 §1.5, group 5; 000 §3.1).
//
//   FLOPs     = 2·N·B                      every weight does one multiply-add per sequence
//             + 4·B·ctx·L·H·head_dim       QKᵀ and AV: 2·ctx·head_dim each, per head, per layer
//               (MLA, absorbed form of 000 §4.3.3: 2·B·ctx·L·H·(d_c + d_r) + 2·B·ctx·L·H·d_c)
//   bytes     = N · bytes/param            the weights, read once per step
//             + B · ctx · KV bytes/token   each sequence reads its own cache (kv_cache.hpp)
//   intensity = FLOPs / bytes              FLOP/B
//   ridge     = peak bf16 FLOP/s / bandwidth B/s
//   time      = max(bytes / bandwidth, FLOPs / peak);  tokens/s = B / time
//   bound     = memory when bytes / bandwidth >= FLOPs / peak, else compute
//
// The peak is the GPU's dense BF16 tensor rate (the course's 312 TFLOP/s for the A100), whatever
// the weight or cache dtype. Activations, norms, softmax and the LM head beyond 2·N are ignored,
// as in the course.
#pragma once

#include <cstdint>

#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"

namespace kvlab {

/// What limits a decode step.
enum class Bound { memory, compute };
/// "memory" or "compute".
const char* bound_name(Bound b);

/// The ridge point of `g`: bf16_flops_per_s / bandwidth_bytes_per_s, FLOP/B (A100-80GB: 153.0).
double ridge_flops_per_byte(const GpuSpec& g);

/// One decode step to cost.
struct DecodeQuery {
  double n_params = 0.0;         ///< N, parameters read per step (e.g. 7e9, or num_parameters)
  double bytes_per_param = 2.0;  ///< 2 for bf16/fp16 weights, 1 for int8, 0.5 for int4
  KvQuery kv;                    ///< batch B, context ctx, cache dtype, K/V head override
};

/// The roofline of a decode step (formulas at the top of this file). Units in the names.
struct DecodeStep {
  double flops_weights = 0.0;    ///< 2·N·B
  double flops_attention = 0.0;  ///< 4·B·ctx·L·H·head_dim (MLA: see top)
  double flops = 0.0;            ///< total FLOPs
  double weight_bytes = 0.0;     ///< N · bytes/param
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

/// The attention FLOPs of one sequence at context `ctx` (one new query against ctx keys),
/// exact: 4·ctx·L·H·head_dim, or the MLA form. Throws InputError when it overflows 64 bits.
std::uint64_t attention_flops_per_sequence(const ModelSpec& m, std::uint64_t ctx);

/// Costs a decode step of `m` on `g`. Throws InputError for a bad query (batch or ctx 0,
/// params or bytes/param not finite and positive, sizes over 64 bits, bad kv-heads).
DecodeStep decode_step(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q);

/// Where decode turns compute-bound as the batch grows at fixed ctx. Intensity is
///   I(B) = B·(2N + a) / (W + B·k),  a = attention FLOPs per sequence, k = KV bytes per sequence,
/// which rises towards I(∞) = (2N + a) / k; it reaches the ridge r at B* = r·W / (2N + a − r·k)
/// when 2N + a > r·k, and never otherwise, because the KV bytes grow with the batch as fast as
/// the FLOPs do.
struct ComputeBoundBatch {
  bool reachable = false;       ///< whether any batch makes the step compute-bound
  double batch = 0.0;           ///< B* (real); meaningful when reachable
  std::uint64_t min_batch = 0;  ///< ceil(B*): smallest integer batch with I(B) >= r; 0 when unreachable
  double intensity_limit = 0.0; ///< I(∞), FLOP/B
};

/// Solves I(B) = ridge for `m` on `g` at the query's ctx, dtype and parameters (its batch is
/// ignored). Same errors as decode_step.
ComputeBoundBatch compute_bound_batch(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q);

}  // namespace kvlab
