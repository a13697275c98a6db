#include "cost/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/layers.hpp"

namespace kvlab {
namespace {

constexpr double kMaxParams = 1e15;

/// Sum over the positions i = 1..n of a prompt of the keys position i attends to in a layer of
/// `g`: i (full, MLA), min(i, W) (sliding window), ((i − 1) mod C) + 1 (chunked: causal inside
/// its chunk), 0 (attention-free).
double attended_pairs(const LayerGroup& g, std::uint64_t n) {
  const auto tri = [](double k) { return k * (k + 1.0) / 2.0; };
  const double nd = static_cast<double>(n), span = static_cast<double>(g.span);
  switch (g.kind) {
    case LayerKind::full:
    case LayerKind::mla: return tri(nd);
    case LayerKind::sliding: return n <= g.span ? tri(nd) : tri(span) + (nd - span) * span;
    case LayerKind::chunked: {
      if (g.span == 0) return tri(nd);
      const double full_chunks = static_cast<double>(n / g.span), rest = static_cast<double>(n % g.span);
      return full_chunks * tri(span) + tri(rest);
    }
    case LayerKind::none: return 0.0;
  }
  return 0.0;
}

/// Attention FLOPs of one prompt of `ctx` tokens, causal, layer group by layer group: each
/// attended (query, key) pair costs what one cached position costs a decode step in one layer
/// (attention_flops_per_sequence at ctx 1, over the attention layers).
double prefill_attention_flops(const ModelSpec& m, std::uint64_t ctx) {
  const auto groups = layer_groups(m);
  std::uint64_t attention_layers = 0;
  for (const auto& g : groups)
    if (g.kind != LayerKind::none) attention_layers += g.count;
  if (attention_layers == 0) return 0.0;
  const double per_pair = static_cast<double>(attention_flops_per_sequence(m, 1)) /
                          static_cast<double>(attention_layers);
  double pairs = 0.0;
  for (const auto& g : groups) pairs += static_cast<double>(g.count) * attended_pairs(g, ctx);
  return per_pair * pairs;
}

PrefillBound prefill_bound(const ModelSpec& m, const GpuSpec& g, double params_used, double n_params,
                           const std::optional<MoeQuery>& moe, double bytes_per_param, std::uint64_t batch,
                           std::uint64_t ctx, std::uint64_t kv_bytes) {
  PrefillBound p;
  if (batch == 0) return p;
  const std::uint64_t tokens = checked_mul(batch, ctx, "--batch × --ctx (prompt tokens)");
  const double read = weight_read(n_params, moe, tokens).params_read;
  p.flops = 2.0 * params_used * static_cast<double>(tokens) +
            static_cast<double>(batch) * prefill_attention_flops(m, ctx);
  p.bytes = read * bytes_per_param + static_cast<double>(kv_bytes);
  const RooflineTime t = roofline_time(p.flops, p.bytes, g.bf16_flops_per_s, g.bandwidth_bytes_per_s);
  p.bound = t.bound, p.time_s = t.time_s;
  return p;
}

}  // namespace

std::vector<PlanKvKind> plan_kv_by_kind(const ModelSpec& m, std::uint64_t ctx, std::uint64_t batch,
                                        CacheDtype dtype) {
  const KvHeld all = kv_held(m, KvQuery{batch, ctx, dtype, std::nullopt});
  const KvHeld one = kv_held(m, KvQuery{1, ctx, dtype, std::nullopt});
  std::vector<PlanKvKind> out;
  for (std::size_t i = 0; i < all.groups.size(); ++i) {
    const LayerGroup& g = all.groups[i].group;
    const std::string kind = layer_kind_name(g.kind);
    auto it = std::find_if(out.begin(), out.end(), [&](const PlanKvKind& k) { return k.kind == kind; });
    if (it == out.end()) it = out.insert(out.end(), PlanKvKind{kind, 0, 0, 0, 0, 0});
    it->layers += g.count;
    it->bits = checked_add(it->bits, all.groups[i].total_bits, "KV bits");
    it->bits_per_sequence = checked_add(it->bits_per_sequence, one.groups[i].total_bits, "KV bits");
  }
  for (auto& k : out) {
    k.bytes = k.bits / 8 + (k.bits % 8 != 0 ? 1 : 0);
    k.bytes_per_sequence = k.bits_per_sequence / 8 + (k.bits_per_sequence % 8 != 0 ? 1 : 0);
  }
  return out;
}

Plan make_plan(const ModelSpec& m, const GpuSpec& g, const PlanQuery& q) {
  if (!(q.memory_utilization > 0.0 && q.memory_utilization <= 1.0))
    throw InputError(fmt::format("--memory-utilization: must be in (0, 1], vLLM's gpu_memory_utilization "
                                 "(got {})", q.memory_utilization));
  if (q.ctx == 0) throw InputError("--ctx: must be >= 1 (got 0)");
  if (q.batch == 0) throw InputError("--batch: must be >= 1 (got 0)");
  Plan p;
  p.model = m.name;
  p.gpu = g.name;
  p.query = q;
  p.share = tensor_parallel_share(m, q.tp);
  const ModelSpec& md = p.share.per_device;
  const double t = static_cast<double>(q.tp);

  // Parameters: N from --params or the file; N_active for a mixture of experts.
  if (q.params) {
    require_finite_range("--params", *q.params, 1.0, kMaxParams);
    p.n_params = *q.params;
    p.params_from = "--params";
  } else if (m.num_parameters) {
    p.n_params = static_cast<double>(*m.num_parameters);
    if (p.n_params > kMaxParams)
      throw InputError(fmt::format("--params: {}'s num_parameters = {} is above {:g}; give --params",
                                   m.name, *m.num_parameters, kMaxParams));
    p.params_from = "num_parameters";
  } else {
    throw InputError(fmt::format("--params: {} has no num_parameters (a config.json does not give one); give "
                                 "the parameter count, e.g. --params 7e9", m.name));
  }
  std::optional<double> active = q.active_params;
  if (active) require_finite_range("--active-params", *active, 1.0, kMaxParams);
  else if (m.num_parameters_active && !q.params) active = static_cast<double>(*m.num_parameters_active);
  if (active && *active > p.n_params)
    throw InputError(fmt::format("--active-params: must be at most N = {:.6g} (got {:.6g})", p.n_params, *active));
  const bool routed = m.num_experts && *m.num_experts > *m.num_experts_per_tok;
  if (routed && !active)
    throw InputError(fmt::format("--active-params: {} is a mixture of experts ({} routed experts, {} per token); "
                                 "give the parameters one token uses", m.name, *m.num_experts,
                                 *m.num_experts_per_tok));
  if (routed && *active * static_cast<double>(*m.num_experts) <
                    p.n_params * static_cast<double>(*m.num_experts_per_tok))
    throw InputError(fmt::format("--active-params: N_active = {:.6g} must be at least N·k/E = {:.6g}", *active,
                                 p.n_params * static_cast<double>(*m.num_experts_per_tok) /
                                     static_cast<double>(*m.num_experts)));
  std::optional<MoeQuery> moe;
  if (active && *active < p.n_params) {
    p.active_params = active;
    moe = MoeQuery{*active / t, routed ? m.num_experts : std::nullopt,
                   routed ? m.num_experts_per_tok : std::nullopt};
  }
  const double n_dev = p.n_params / t;
  const double used_dev = moe ? moe->active_params : n_dev;

  p.bytes_per_param = static_cast<double>(cache_dtype_bits(q.weights_dtype)) / 8.0;
  p.weights_bytes = n_dev * p.bytes_per_param;

  // KV: this device's heads at (ctx, batch), and one sequence at ctx.
  checked_mul(q.batch, q.ctx, "--batch × --ctx (cached tokens)");
  p.kv = plan_kv_by_kind(md, q.ctx, q.batch, q.kv_dtype);
  std::uint64_t bits = 0, bits_per_sequence = 0;
  for (const auto& k : p.kv) {
    bits = checked_add(bits, k.bits, "KV bits");
    bits_per_sequence = checked_add(bits_per_sequence, k.bits_per_sequence, "KV bits");
  }
  p.kv_bytes = bits / 8 + (bits % 8 != 0 ? 1 : 0);
  p.kv_bytes_per_sequence = bits_per_sequence / 8 + (bits_per_sequence % 8 != 0 ? 1 : 0);

  p.memory_bytes = static_cast<double>(g.memory_bytes);
  p.budget_bytes = q.memory_utilization * p.memory_bytes;
  p.fits = p.weights_bytes + static_cast<double>(p.kv_bytes) <= p.budget_bytes;
  if (p.kv_bytes_per_sequence == 0) {
    p.max_batch_unbounded = p.weights_bytes <= p.budget_bytes;
  } else if (p.weights_bytes <= p.budget_bytes) {
    const double n = std::floor((p.budget_bytes - p.weights_bytes) / static_cast<double>(p.kv_bytes_per_sequence));
    p.max_batch = n >= 9007199254740992.0 ? std::uint64_t{1} << 53 : static_cast<std::uint64_t>(n);
  }

  const auto decode_at = [&](std::uint64_t b) {
    return decode_step(md, g, DecodeQuery{n_dev, p.bytes_per_param, KvQuery{b, q.ctx, q.kv_dtype, std::nullopt}, moe});
  };
  const auto kv_at = [&](std::uint64_t b) {
    return checked_mul(p.kv_bytes_per_sequence, b, "--batch × KV bytes per sequence");
  };
  if (p.max_batch > 0) {
    p.decode_at_max = decode_at(p.max_batch);
    p.prefill_at_max =
        prefill_bound(md, g, used_dev, n_dev, moe, p.bytes_per_param, p.max_batch, q.ctx, kv_at(p.max_batch));
  }
  p.decode_at_batch = decode_at(q.batch);
  p.prefill_at_batch = prefill_bound(md, g, used_dev, n_dev, moe, p.bytes_per_param, q.batch, q.ctx, p.kv_bytes);

  for (const auto& w : m.warnings) p.warnings.push_back(fmt::format("{}: {}", m.name, w));
  if (!m.has_attention() || std::any_of(p.kv.begin(), p.kv.end(), [](const PlanKvKind& k) { return k.kind == "none"; }))
    p.notes.push_back(fmt::format("{}: attention-free layers hold no per-token cache; their fixed per-sequence "
                                  "state is not in these figures ({}).", m.name,
                                  m.state_note.empty() ? "its size is not computed here" : m.state_note));
  if (moe)
    p.notes.push_back(fmt::format("mixture of experts: all {:.4g} parameters are resident; a token uses "
                                  "{:.4g}, and a step reads the experts its batch touches ({}).",
                                  p.n_params, *p.active_params,
                                  routed ? "expected under uniform routing" : "worst case: no E and k known"));
  if (q.tp > 1)
    p.notes.push_back(fmt::format(
        "tensor parallelism over {} devices: every figure is one device's (1/{} of the weights, {} of "
        "the {} query heads, {}); the all-reduces between devices are not costed.",
        q.tp, q.tp, p.share.query_heads, m.n_head,
        m.is_mla() ? std::string("the whole latent cache, replicated")
        : p.share.kv_replicas > 1 ? fmt::format("1 K/V head: {} heads < {} devices, each replicated on {}",
                                                m.n_kv_head, q.tp, p.share.kv_replicas)
                                  : fmt::format("{} of the {} K/V heads", p.share.kv_heads, m.n_kv_head)));
  return p;
}

}  // namespace kvlab
