#include "cost/layers.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::full: return "full";
    case LayerKind::sliding: return "sliding";
    case LayerKind::chunked: return "chunked";
    case LayerKind::mla: return "mla";
    case LayerKind::none: return "none";
  }
  return "?";
}

std::uint64_t LayerGroup::elements_per_layer() const {
  switch (kind) {
    case LayerKind::full:
    case LayerKind::sliding:
    case LayerKind::chunked:
      // 2: one K and one V per K/V head (004 §1.4).
      return checked_mul(2, checked_mul(n_kv_head, head_dim, "K/V heads × head_dim"),
                         "K+V elements per layer");
    case LayerKind::mla: return checked_add(latent_dim, rope_dim, "MLA elements per layer");
    case LayerKind::none: return 0;
  }
  return 0;
}

std::vector<LayerGroup> layer_groups(const ModelSpec& m, std::optional<std::uint64_t> kv_heads) {
  const KvLayout l = kv_layout(m, kv_heads);  // validates the override, MLA's fields
  std::vector<LayerGroup> groups;
  for (std::uint64_t i = 0; i < m.n_layer; ++i) {
    const LayerSpec spec = i < m.layers.size() ? m.layers[i] : LayerSpec{};
    LayerGroup g;
    g.mixer = spec.mixer;
    if (spec.attention == LayerAttention::none) {
      g.kind = LayerKind::none;
    } else if (l.mla) {
      // MLA models (DeepSeek-V2/V3) attend fully on every attention layer.
      g.kind = LayerKind::mla;
      g.latent_dim = l.latent_dim;
      g.rope_dim = l.rope_dim;
    } else {
      g.kind = spec.attention == LayerAttention::sliding   ? LayerKind::sliding
               : spec.attention == LayerAttention::chunked ? LayerKind::chunked
                                                           : LayerKind::full;
      g.span = g.kind == LayerKind::full ? 0 : spec.span;
      g.n_kv_head = l.kv_heads;
      g.head_dim = l.head_dim;
    }
    auto same = std::find_if(groups.begin(), groups.end(), [&](const LayerGroup& o) {
      return o.kind == g.kind && o.span == g.span && o.n_kv_head == g.n_kv_head &&
             o.head_dim == g.head_dim && o.latent_dim == g.latent_dim &&
             o.rope_dim == g.rope_dim && o.mixer == g.mixer;
    });
    if (same == groups.end()) {
      groups.push_back(std::move(g));
      same = groups.end() - 1;
    }
    ++same->count;
    same->layers.push_back(i);
  }
  return groups;
}

std::uint64_t positions_held(const LayerGroup& g, std::uint64_t ctx) {
  switch (g.kind) {
    case LayerKind::full:
    case LayerKind::mla: return ctx;
    case LayerKind::sliding:
    case LayerKind::chunked: return std::min(ctx, g.span);
    case LayerKind::none: return 0;
  }
  return ctx;
}

KvHeld kv_held(const ModelSpec& m, const KvQuery& q) {
  if (q.batch == 0) throw InputError("batch: must be >= 1 sequence (got 0)");
  if (q.ctx == 0) throw InputError("ctx: must be >= 1 cached position (got 0)");
  KvHeld h;
  const std::uint64_t bits = cache_dtype_bits(q.dtype);
  for (LayerGroup& g : layer_groups(m, q.kv_heads)) {
    GroupKv k;
    k.positions = positions_held(g, q.ctx);
    k.bits_per_token = checked_mul(checked_mul(g.count, g.elements_per_layer(), "KV elements per token"),
                                   bits, "KV bits per token");
    const std::uint64_t per_seq = checked_mul(k.bits_per_token, q.batch, "KV bits per position");
    k.total_bits = checked_mul(per_seq, k.positions,
                               fmt::format("KV-cache size in bits (batch {} x {} positions x {} bits)",
                                           q.batch, k.positions, k.bits_per_token));
    k.total_bits_if_full = checked_mul(per_seq, q.ctx,
                                       fmt::format("KV-cache size in bits (batch {} x ctx {} x {} bits)",
                                                   q.batch, q.ctx, k.bits_per_token));
    h.total_bits = checked_add(h.total_bits, k.total_bits, "KV-cache size in bits");
    h.total_bits_if_full = checked_add(h.total_bits_if_full, k.total_bits_if_full,
                                       "KV-cache size in bits, every position cached");
    k.group = std::move(g);
    h.groups.push_back(std::move(k));
  }
  h.total_bytes = h.total_bits / 8 + (h.total_bits % 8 != 0 ? 1 : 0);
  h.total_bytes_if_full = h.total_bits_if_full / 8 + (h.total_bits_if_full % 8 != 0 ? 1 : 0);
  return h;
}

std::string layer_list_text(const std::vector<std::uint64_t>& layers) {
  if (layers.empty()) return "";
  if (layers.size() >= 4) {
    const std::uint64_t step = layers[1] - layers[0];
    bool progression = step > 1;
    for (std::size_t i = 2; progression && i < layers.size(); ++i)
      progression = layers[i] - layers[i - 1] == step;
    if (progression)
      return fmt::format("{}, {}, ..., {} (every {})", layers[0], layers[1], layers.back(), step);
  }
  std::string out;
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", layers[i]) : fmt::format("{}-{}", layers[i], layers[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace kvlab
