#include "cost/tensor_parallel.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

TensorParallelShare tensor_parallel_share(const ModelSpec& m, std::uint64_t devices) {
  if (devices == 0) throw InputError("--tp: must be >= 1 (got 0)");
  if (m.n_head % devices != 0)
    throw InputError(fmt::format("--tp: must divide the {} query heads of {} (got {})", m.n_head, m.name, devices));
  TensorParallelShare s;
  s.devices = devices;
  s.per_device = m;
  s.query_heads = m.n_head / devices;
  s.weight_fraction = 1.0 / static_cast<double>(devices);
  s.per_device.n_head = s.query_heads;
  if (!m.has_attention()) return s;  // attention-free (Mamba): no heads to split, no K/V
  if (m.is_mla()) {
    s.kv_heads = 0;
    s.kv_replicas = devices;  // the latent and the RoPE key are cached whole on every device
    return s;
  }
  if (m.n_kv_head % devices == 0) {
    s.kv_heads = m.n_kv_head / devices;
  } else if (devices % m.n_kv_head == 0) {
    s.kv_heads = 1;
    s.kv_replicas = devices / m.n_kv_head;
  } else {
    throw InputError(fmt::format("--tp: must divide the {} K/V heads of {} or be a multiple of them (got {})",
                                 m.n_kv_head, m.name, devices));
  }
  s.per_device.n_kv_head = s.kv_heads;
  // The reference is 2·L·n_kv·head_dim·2 bytes: per device, n_kv becomes kv_heads (exact).
  // A reference not divisible by n_kv cannot be one: it is dropped rather than rounded.
  if (m.kv_bytes_per_token_16bit && *m.kv_bytes_per_token_16bit % m.n_kv_head == 0)
    s.per_device.kv_bytes_per_token_16bit = *m.kv_bytes_per_token_16bit / m.n_kv_head * s.kv_heads;
  else
    s.per_device.kv_bytes_per_token_16bit.reset();
  return s;
}

}  // namespace kvlab
