#include "cost/roofline.hpp"

#include "cost/layers.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"

namespace kvlab {
namespace {

/// A validated weight model: everything weight_read needs to evaluate N_read at any real batch.
struct WeightSplit {
  WeightModel model = WeightModel::dense;
  double total = 0.0;       ///< N
  double active = 0.0;      ///< N_active (N for dense)
  double experts = 0.0;     ///< E (moe_uniform)
  double per_token = 0.0;   ///< k (moe_uniform)
  double shared = 0.0;      ///< S (moe_uniform)
  double per_expert = 0.0;  ///< P_e (moe_uniform)

  /// D(B) = E·(1 − (1 − k/E)^B), as −E·expm1(B·log1p(−k/E)): no cancellation for small k/E.
  double experts_touched(double batch) const {
    if (per_token >= experts) return experts;
    return -experts * std::expm1(batch * std::log1p(-per_token / experts));
  }
  /// N_read at a real batch >= 1 (compute_bound_batch bisects on it).
  double params_read(double batch) const {
    if (batch == 1.0) return active;  // one token: exactly its k experts and the shared parameters
    switch (model) {
      case WeightModel::dense: return total;
      case WeightModel::moe_uniform: return shared + experts_touched(batch) * per_expert;
      case WeightModel::moe_worst_case: return std::min(total, batch * active);
    }
    return total;
  }
};

WeightSplit split_of(double n_params, const std::optional<MoeQuery>& moe) {
  require_finite_range("params", n_params, 1.0, 1e15);
  WeightSplit w;
  w.total = n_params;
  w.active = n_params;
  if (!moe) return w;
  const double a = moe->active_params;
  if (!std::isfinite(a) || a < 1.0 || a > n_params)
    throw InputError(fmt::format("active-params: must be a finite number in [1, params = {}] (got {})",
                                 n_params, a));
  w.active = a;
  if (moe->experts.has_value() != moe->experts_per_token.has_value())
    throw InputError("experts-per-token: give both the routed experts E and the experts per token "
                     "k, or neither");
  if (!moe->experts) {
    w.model = a < n_params ? WeightModel::moe_worst_case : WeightModel::dense;
    return w;
  }
  const std::uint64_t e = *moe->experts, k = *moe->experts_per_token;
  if (k == 0 || k > e)
    throw InputError(fmt::format("experts-per-token: must be in [1, experts = {}] (got {})", e, k));
  w.experts = static_cast<double>(e);
  w.per_token = static_cast<double>(k);
  // S >= 0 <=> N_active·E >= k·N, compared in long double (a 64-bit significand or wider); a
  // marginal case that rounds the other way leaves S within rounding of 0, clamped to 0 below.
  if (static_cast<long double>(a) * e < static_cast<long double>(n_params) * k)
    throw InputError(fmt::format("active-params: must be >= params × experts-per-token / experts = "
                                 "{} × {} / {} = {:.6g}, since every token uses its k experts and "
                                 "the shared parameters (got {})", n_params, k, e,
                                 n_params * w.per_token / w.experts, a));
  if (k == e || a == n_params) {  // every expert active: nothing is routed away
    if (a != n_params)
      throw InputError(fmt::format("active-params: with experts-per-token = experts = {}, every "
                                   "parameter is active: must equal params = {} (got {})", e, n_params, a));
    return w;  // dense
  }
  w.model = WeightModel::moe_uniform;
  w.per_expert = (n_params - a) / (w.experts - w.per_token);
  w.shared = std::max(0.0, a - w.per_token * w.per_expert);  // >= 0 up to rounding, checked above
  return w;
}

}  // namespace

const char* bound_name(Bound b) { return b == Bound::memory ? "memory" : "compute"; }

const char* weight_model_name(WeightModel w) {
  switch (w) {
    case WeightModel::dense: return "dense";
    case WeightModel::moe_uniform: return "MoE, uniform routing";
    case WeightModel::moe_worst_case: return "MoE, worst-case routing";
  }
  return "?";
}

double ridge_flops_per_byte(const GpuSpec& g) { return g.bf16_flops_per_s / g.bandwidth_bytes_per_s; }

RooflineTime roofline_time(double flops, double bytes, double peak_flops_per_s, double bandwidth_bytes_per_s) {
  RooflineTime t;
  t.memory_s = bytes / bandwidth_bytes_per_s;
  t.compute_s = flops / peak_flops_per_s;
  t.bound = t.memory_s >= t.compute_s ? Bound::memory : Bound::compute;
  t.time_s = nan_max(t.memory_s, t.compute_s);  // a NaN input stays NaN in the time, never hidden
  return t;
}

WeightRead weight_read(double n_params, const std::optional<MoeQuery>& moe, std::uint64_t batch) {
  if (batch == 0) throw InputError("batch: must be >= 1 sequence (got 0)");
  const WeightSplit w = split_of(n_params, moe);
  const double b = static_cast<double>(batch);
  WeightRead r;
  r.model = w.model;
  r.params_used = w.active;
  r.params_read = w.params_read(b);
  r.params_read_low = w.active;
  switch (w.model) {
    case WeightModel::dense:
      r.params_read_high = w.total;
      break;
    case WeightModel::moe_uniform:
      r.shared_params = w.shared;
      r.params_per_expert = w.per_expert;
      r.experts_touched = batch == 1 ? w.per_token : w.experts_touched(b);
      r.params_read_high = w.shared + std::min(w.experts, b * w.per_token) * w.per_expert;
      break;
    case WeightModel::moe_worst_case:
      r.params_read_high = r.params_read;
      break;
  }
  return r;
}

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
  // Each layer attends to the positions it holds (cost/layers.hpp): ctx, min(ctx, W) in a window,
  // min(ctx, C) in a chunk (the longest a chunk gets), none in an attention-free layer.
  std::uint64_t positions = 0;
  for (const LayerGroup& g : layer_groups(m))
    positions = checked_add(positions, checked_mul(g.count, positions_held(g, ctx), what), what);
  return checked_mul(checked_mul(positions, m.n_head, what), per_pos_layer_head, what);
}

DecodeStep decode_step(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  DecodeStep s;
  const double b = static_cast<double>(q.kv.batch);
  s.weights = weight_read(q.n_params, q.moe, q.kv.batch);          // validates params, MoE, batch
  s.weight_bytes = weight_bytes(s.weights.params_read, q.bytes_per_param);  // validates bytes/param
  s.kv_bytes = kv_cache_size(m, q.kv).total_bytes;                 // validates ctx, heads, sizes
  s.flops_weights = 2.0 * s.weights.params_used * b;
  s.flops_attention = b * static_cast<double>(attention_flops_per_sequence(m, q.kv.ctx));
  s.flops = s.flops_weights + s.flops_attention;
  s.bytes = s.weight_bytes + static_cast<double>(s.kv_bytes);
  s.intensity = s.flops / s.bytes;
  s.ridge = ridge_flops_per_byte(g);
  const RooflineTime t = roofline_time(s.flops, s.bytes, g.bf16_flops_per_s, g.bandwidth_bytes_per_s);
  s.time_memory_s = t.memory_s, s.time_compute_s = t.compute_s, s.bound = t.bound, s.time_s = t.time_s;
  s.tokens_per_s = b / s.time_s;
  return s;
}

ComputeBoundBatch compute_bound_batch(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  DecodeQuery one = q;
  one.kv.batch = 1;
  const DecodeStep s1 = decode_step(m, g, one);  // per-sequence FLOPs and KV bytes at B = 1
  const double flops_per_seq = s1.flops;         // 2·N_used + a
  const double kv_per_seq = static_cast<double>(s1.kv_bytes);
  const double r = s1.ridge;
  ComputeBoundBatch out;
  out.intensity_limit = flops_per_seq / kv_per_seq;
  const double denom = flops_per_seq - r * kv_per_seq;
  if (!(denom > 0.0)) return out;
  out.reachable = true;
  const WeightSplit w = split_of(q.n_params, q.moe);
  // I(B) >= r  <=>  h(B) = B·denom − r·W(B) >= 0. W is constant (dense) or concave with W(0) >= 0
  // (MoE), so h is convex, h(0) <= 0 and h rises past 0 exactly once.
  const auto h = [&](double batch) { return batch * denom - r * w.params_read(batch) * q.bytes_per_param; };
  if (w.model == WeightModel::dense) {
    out.batch = r * s1.weight_bytes / denom;
  } else {
    double lo = 0.0, hi = r * w.total * q.bytes_per_param / denom;  // h(hi) >= 0 since W <= N·bytes
    hi = std::max(hi, 1.0);
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (h(mid) >= 0.0 ? hi : lo) = mid;
    }
    out.batch = hi;
  }
  // A B* beyond 2^63 is reachable only on paper; min_batch stays 0 rather than wrapping.
  if (out.batch < 9.2e18) {
    std::uint64_t b = static_cast<std::uint64_t>(std::max(1.0, std::ceil(out.batch)));
    if (w.model != WeightModel::dense) {  // the bisection's last digits: settle on the integers
      while (b > 1 && h(static_cast<double>(b - 1)) >= 0.0) --b;
      while (h(static_cast<double>(b)) < 0.0) ++b;
    }
    out.min_batch = b;
  }
  return out;
}

}  // namespace kvlab
