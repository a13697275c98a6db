// How many sequences fit: the weights, the memory left for the KV cache and the largest batch
// (000 §2.3: 70B + 4K + GQA on 8 × A100-80GB).
//
//   memory      = gpus · memory_bytes of one GPU              (weights sharded across the GPUs)
//   weights     = N · bytes/param                             (cost/kv_cache.hpp weight_bytes)
//   left        = memory − weights
//   KV budget   = what the deployment gives the cache: left, or less after activations and the
//                 framework's own memory (000 §2.3 assumes ≈ 400 GB of ≈ 500 GB left)
//   per seq     = kv_cache_size(model, batch 1, ctx, dtype)   (cost/kv_cache.hpp), bytes
//   max batch   = floor(KV budget / per seq)                  whole sequences
//
// All bytes are decimal (GB = 1e9 B): mixing GB and GiB here is 000 §2.3's erratum (E4).
#pragma once

#include <cstdint>
#include <optional>

#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"

namespace kvlab {

/// The memory budget of one deployment and the batch it holds. Bytes are decimal bytes.
struct BatchCapacity {
  double memory_bytes = 0.0;          ///< gpus · memory_bytes
  double weight_bytes = 0.0;          ///< N · bytes/param
  double left_bytes = 0.0;            ///< memory − weights (negative: the weights do not fit)
  double kv_budget_bytes = 0.0;       ///< the budget the batch is sized against
  std::uint64_t kv_bytes_per_sequence = 0;  ///< one sequence of ctx tokens, exact
  std::uint64_t max_batch = 0;        ///< floor(budget / per sequence); 0 when nothing fits
};

/// Sizes a deployment of `m` on `gpus` × `g`: weights of n_params × bytes_per_param, each sequence
/// `ctx` tokens cached in `dtype` (the model's own K/V heads), against `kv_budget_bytes` (default:
/// all memory left after the weights). Throws InputError naming "gpus" (0), "kv-budget" (negative,
/// not finite, or above the memory left) or "weights" (they exceed the memory), plus what
/// weight_bytes and kv_cache_size throw.
BatchCapacity batch_capacity(const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n_params,
                             double bytes_per_param, std::uint64_t ctx, CacheDtype dtype,
                             std::optional<double> kv_budget_bytes = std::nullopt);

}  // namespace kvlab
