#include "cost/capacity.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

BatchCapacity batch_capacity(const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n_params,
                             double bytes_per_param, std::uint64_t ctx, CacheDtype dtype,
                             std::optional<double> kv_budget_bytes) {
  if (gpus == 0) throw InputError("gpus: must be >= 1 (got 0)");
  BatchCapacity c;
  c.memory_bytes = static_cast<double>(gpus) * static_cast<double>(g.memory_bytes);
  c.weight_bytes = weight_bytes(n_params, bytes_per_param);
  c.left_bytes = c.memory_bytes - c.weight_bytes;
  if (c.left_bytes <= 0)
    throw InputError(fmt::format("weights: {:.4g} GB of weights leave no room for a KV cache in the {:.4g} GB of {} × {}",
                                 c.weight_bytes / kGB, c.memory_bytes / kGB, gpus, g.name));
  if (kv_budget_bytes) {
    if (!std::isfinite(*kv_budget_bytes) || *kv_budget_bytes < 0 || *kv_budget_bytes > c.left_bytes)
      throw InputError(fmt::format("kv-budget: must be in [0, {:.6g}] GB, the memory left after the weights (got {:.6g} GB)",
                                   c.left_bytes / kGB, *kv_budget_bytes / kGB));
    c.kv_budget_bytes = *kv_budget_bytes;
  } else {
    c.kv_budget_bytes = c.left_bytes;
  }
  c.kv_bytes_per_sequence = kv_cache_size(m, KvQuery{1, ctx, dtype, std::nullopt}).total_bytes;
  c.max_batch = static_cast<std::uint64_t>(std::floor(c.kv_budget_bytes / static_cast<double>(c.kv_bytes_per_sequence)));
  return c;
}

}  // namespace kvlab
