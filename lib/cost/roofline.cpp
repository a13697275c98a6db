#include "cost/roofline.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace kvlab {

const char* bound_name(Bound b) { return b == Bound::memory ? "memory" : "compute"; }

double ridge_flops_per_byte(const GpuSpec& g) { return g.bf16_flops_per_s / g.bandwidth_bytes_per_s; }

std::uint64_t attention_flops_per_sequence(const ModelSpec& m, std::uint64_t ctx) {
  const std::string what = "attention FLOPs per sequence";
  const std::uint64_t per_pos_layer_head = [&] {
    if (m.is_mla()) {
      // Absorbed MLA: scores over the latent plus the RoPE key (d_c + d_r), AV over the latent.
      return checked_add(checked_mul(2, checked_add(*m.kv_lora_rank, *m.qk_rope_head_dim, what), what),
                         checked_mul(2, *m.kv_lora_rank, what), what);
    }
    return checked_mul(4, m.head_dim, what);  // QKᵀ and AV: 2·head_dim each
  }();
  return checked_mul(checked_mul(checked_mul(ctx, m.n_layer, what), m.n_head, what),
                     per_pos_layer_head, what);
}

DecodeStep decode_step(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  DecodeStep s;
  const double b = static_cast<double>(q.kv.batch);
  s.weight_bytes = weight_bytes(q.n_params, q.bytes_per_param);  // validates both
  s.kv_bytes = kv_cache_size(m, q.kv).total_bytes;                 // validates batch, ctx, heads
  s.flops_weights = 2.0 * q.n_params * b;
  s.flops_attention = b * static_cast<double>(attention_flops_per_sequence(m, q.kv.ctx));
  s.flops = s.flops_weights + s.flops_attention;
  s.bytes = s.weight_bytes + static_cast<double>(s.kv_bytes);
  s.intensity = s.flops / s.bytes;
  s.ridge = ridge_flops_per_byte(g);
  s.time_memory_s = s.bytes / g.bandwidth_bytes_per_s;
  s.time_compute_s = s.flops / g.bf16_flops_per_s;
  s.bound = s.time_memory_s >= s.time_compute_s ? Bound::memory : Bound::compute;
  s.time_s = std::max(s.time_memory_s, s.time_compute_s);
  s.tokens_per_s = b / s.time_s;
  return s;
}

ComputeBoundBatch compute_bound_batch(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  DecodeQuery one = q;
  one.kv.batch = 1;
  const DecodeStep s1 = decode_step(m, g, one);  // per-sequence FLOPs and KV bytes at B = 1
  const double flops_per_seq = s1.flops;         // 2N + a
  const double kv_per_seq = static_cast<double>(s1.kv_bytes);
  const double r = s1.ridge;
  ComputeBoundBatch out;
  out.intensity_limit = flops_per_seq / kv_per_seq;
  const double denom = flops_per_seq - r * kv_per_seq;
  if (!(denom > 0.0)) return out;
  out.reachable = true;
  out.batch = r * s1.weight_bytes / denom;
  // A B* beyond 2^63 is reachable only on paper; min_batch stays 0 rather than wrapping.
  if (out.batch < 9.2e18) out.min_batch = static_cast<std::uint64_t>(std::max(1.0, std::ceil(out.batch)));
  return out;
}

}  // namespace kvlab
