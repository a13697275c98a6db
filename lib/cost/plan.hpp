// `kvlab plan`: will a model serve on a device at a context and batch, and how fast at best?
//
// Per device (tensor parallelism over T devices: cost/tensor_parallel.hpp), all bytes decimal:
//   weights     = N · bytes/param / T                 (every parameter resident, every expert of an MoE)
//   KV          = the cache held at (ctx, batch) for this device's K/V heads, by layer kind
//   budget      = u · memory                          u = --memory-utilization, vLLM's
//                 gpu_memory_utilization (default 0.9): the share of the device's memory the engine
//                 may take for weights, activations and the KV cache; the rest is left to others
//   fits        = weights + KV <= budget              (activations not counted: a lower bound)
//   max batch   = floor((budget − weights) / KV of one sequence at ctx)   0 when the weights do not fit
//   decode      = the roofline of one decode step at max batch with ctx cached (cost/roofline.hpp):
//                 tokens/s <= max batch / max(bytes / bandwidth, FLOPs / peak)
//   prefill     = time to first token of max batch prompts of ctx tokens, at least
//                 max(FLOPs / peak, bytes / bandwidth) with FLOPs = 2·N_used·B·ctx/T + the causal
//                 attention of every prompt position against the ones before it, bytes = the
//                 weights once + the KV cache written
// The same decode and prefill bounds are given at the requested batch too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/kv_cache.hpp"
#include "cost/roofline.hpp"
#include "cost/tensor_parallel.hpp"
#include "io/catalogue.hpp"

namespace kvlab {

/// What to plan for.
struct PlanQuery {
  std::uint64_t ctx = 4096;               ///< tokens cached per sequence, >= 1
  std::uint64_t batch = 1;                ///< sequences, >= 1
  CacheDtype kv_dtype = CacheDtype::bf16;
  CacheDtype weights_dtype = CacheDtype::bf16;  ///< bytes/param = bits / 8
  std::uint64_t tp = 1;                   ///< tensor-parallel devices T
  double memory_utilization = 0.9;        ///< u in (0, 1]
  std::optional<double> params;           ///< N override (a config.json has no num_parameters)
  std::optional<double> active_params;    ///< MoE N_active override
};

/// The KV bytes held by the layers of one kind.
struct PlanKvKind {
  std::string kind;             ///< "full", "sliding", "chunked", "mla", "none"
  std::uint64_t layers = 0;     ///< layers of that kind
  std::uint64_t bits = 0;       ///< held per device at (ctx, batch), exact
  std::uint64_t bytes = 0;      ///< ceil(bits / 8)
  std::uint64_t bits_per_sequence = 0;   ///< held per device by one sequence at ctx
  std::uint64_t bytes_per_sequence = 0;  ///< ceil(bits_per_sequence / 8)
};

/// The KV cache of `m` (one device's view: cost/tensor_parallel.hpp) at (ctx, batch) by layer
/// kind, exact. The one place plan sizes the cache. Throws InputError for a size over 64 bits.
std::vector<PlanKvKind> plan_kv_by_kind(const ModelSpec& m, std::uint64_t ctx, std::uint64_t batch,
                                        CacheDtype dtype);

/// A prefill bound: B prompts of ctx tokens.
struct PrefillBound {
  double flops = 0.0;     ///< per device
  double bytes = 0.0;     ///< weights read once + KV written, per device
  double time_s = 0.0;    ///< max(flops / peak, bytes / bandwidth); 0 for batch 0
  Bound bound = Bound::compute;
};

/// The answer, per device.
struct Plan {
  std::string model;
  std::string gpu;
  PlanQuery query;
  TensorParallelShare share;
  double n_params = 0.0;              ///< N, all parameters of the model
  std::string params_from;            ///< "num_parameters" or "--params"
  std::optional<double> active_params;  ///< MoE: N_active
  double bytes_per_param = 2.0;
  double weights_bytes = 0.0;         ///< N · bytes/param / T
  std::vector<PlanKvKind> kv;         ///< by layer kind
  std::uint64_t kv_bytes = 0;         ///< ceil(sum of kv[].bits / 8)
  std::uint64_t kv_bytes_per_sequence = 0;  ///< ceil(sum of kv[].bits_per_sequence / 8)
  double memory_bytes = 0.0;          ///< one device
  double budget_bytes = 0.0;          ///< u · memory
  bool fits = false;                  ///< weights + KV <= budget
  std::uint64_t max_batch = 0;        ///< largest batch at ctx within the budget
  bool max_batch_unbounded = false;   ///< no per-token cache: memory does not limit the batch
  std::optional<DecodeStep> decode_at_max;   ///< absent when max_batch is 0
  PrefillBound prefill_at_max;
  std::optional<DecodeStep> decode_at_batch;  ///< the requested batch (whether or not it fits)
  PrefillBound prefill_at_batch;
  std::vector<std::string> notes;
  /// The model's layout warnings (ModelSpec::warnings): figures built on fields kvlab does not
  /// interpret, named so that no answer is silently trusted.
  std::vector<std::string> warnings;
};

/// Plans `m` on `g` (memory_bytes must be the device's, >= 1) for `q` (formulas at the top).
/// Throws InputError naming the flag: --tp (cost/tensor_parallel.hpp), --params (missing from the
/// model and not given, or out of [1, 1e15]), --active-params (a mixture of experts without it, or
/// outside [N·k/E, N]), --memory-utilization (outside (0, 1]), --ctx/--batch (sizes over 64 bits).
Plan make_plan(const ModelSpec& m, const GpuSpec& g, const PlanQuery& q);

}  // namespace kvlab
