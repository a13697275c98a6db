#include "serve/step_time.hpp"

#include <algorithm>

#include "cost/roofline.hpp"

namespace kvlab::serve {

StepTimeModel::StepTimeModel(const ModelSpec& m, const GpuSpec& g, double n_params,
                             double bytes_per_param, CacheDtype cache_dtype)
    : n_params_(n_params),
      weight_bytes_(kvlab::weight_bytes(n_params, bytes_per_param)),
      attn_per_pair_(static_cast<double>(attention_flops_per_sequence(m, 1))),
      kv_per_token_(kv_cache_size(m, KvQuery{1, 1, cache_dtype, std::nullopt}).bytes_per_token),
      peak_(g.bf16_flops_per_s),
      bandwidth_(g.bandwidth_bytes_per_s) {}

StepTime StepTimeModel::cost(const StepWork& w) const {
  double tokens = 0.0, pairs = 0.0, kv_read = 0.0;
  for (const PrefillChunk& c : w.prefill) {
    if (c.tokens == 0) continue;  // an empty chunk contributes nothing
    const double n = static_cast<double>(c.tokens), s = static_cast<double>(c.start);
    tokens += n;
    pairs += n * s + n * (n + 1.0) / 2.0;
    kv_read += s;
  }
  for (std::uint64_t ctx : w.decode_ctx) {
    tokens += 1.0;
    pairs += static_cast<double>(ctx);
    kv_read += static_cast<double>(ctx);
  }
  StepTime t;
  if (tokens == 0.0) return t;
  t.flops = 2.0 * n_params_ * tokens + attn_per_pair_ * pairs;
  t.bytes = weight_bytes_ + kv_per_token_ * kv_read;
  const RooflineTime r = roofline_time(t.flops, t.bytes, peak_, bandwidth_);
  t.time_compute_s = r.compute_s, t.time_memory_s = r.memory_s, t.time_s = r.time_s;
  return t;
}

}  // namespace kvlab::serve
