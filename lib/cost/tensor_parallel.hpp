// Tensor parallelism over T devices, as vLLM shards a decoder (Megatron-style): every device holds
// 1/T of the weights and H/T of the query heads; the K/V heads are split too, n_kv/T per device,
// and when T exceeds n_kv each device keeps one K/V head, so each head is replicated T/n_kv times
// (vLLM's QKVParallelLinear: num_kv_head_replicas = T / n_kv). An MLA model's latent cache has no
// heads to split and is replicated whole on every device (vLLM's MLA backends). Communication
// (the all-reduces) is not costed: the per-device figures are bounds.
//
// Rules (vLLM refuses the others): H % T == 0, and n_kv % T == 0 or T % n_kv == 0.
#pragma once

#include <cstdint>

#include "io/catalogue.hpp"

namespace kvlab {

/// One device's share of a model under tensor parallelism.
struct TensorParallelShare {
  std::uint64_t devices = 1;          ///< T
  ModelSpec per_device;               ///< the model as one device sees it: H/T query heads, its
                                      ///< K/V heads, kv_bytes_per_token_16bit scaled to match
  std::uint64_t query_heads = 0;      ///< H / T
  std::uint64_t kv_heads = 0;         ///< K/V heads held per device (0 for MLA)
  std::uint64_t kv_replicas = 1;      ///< devices holding each K/V head (MLA: T, the whole latent)
  double weight_fraction = 1.0;       ///< 1 / T of the parameters per device
};

/// The per-device share of `m` over `devices` GPUs (rules at the top). Throws InputError naming
/// "--tp" when devices is 0, does not divide num_attention_heads, or neither divides nor is a
/// multiple of the K/V head count.
TensorParallelShare tensor_parallel_share(const ModelSpec& m, std::uint64_t devices);

}  // namespace kvlab
