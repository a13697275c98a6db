#include "cost/kv_cache.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/layers.hpp"

namespace kvlab {

CacheDtype parse_cache_dtype(const std::string& s) {
  for (CacheDtype d : all_cache_dtypes())
    if (s == cache_dtype_name(d)) return d;
  throw InputError("kv-dtype: must be one of fp32, fp16, bf16, fp8, int8, int4 (got '" +
                   s.substr(0, 40) + "')");
}

const char* cache_dtype_name(CacheDtype d) {
  switch (d) {
    case CacheDtype::fp32: return "fp32";
    case CacheDtype::fp16: return "fp16";
    case CacheDtype::bf16: return "bf16";
    case CacheDtype::fp8: return "fp8";
    case CacheDtype::int8: return "int8";
    case CacheDtype::int4: return "int4";
  }
  return "?";
}

std::uint64_t cache_dtype_bits(CacheDtype d) {
  switch (d) {
    case CacheDtype::fp32: return 32;
    case CacheDtype::fp16:
    case CacheDtype::bf16: return 16;
    case CacheDtype::fp8:
    case CacheDtype::int8: return 8;
    case CacheDtype::int4: return 4;
  }
  return 0;
}

std::vector<CacheDtype> all_cache_dtypes() {
  return {CacheDtype::fp32, CacheDtype::fp16, CacheDtype::bf16,
          CacheDtype::fp8,  CacheDtype::int8, CacheDtype::int4};
}

KvLayout kv_layout(const ModelSpec& m, std::optional<std::uint64_t> kv_heads) {
  KvLayout l;
  l.n_layer = m.n_layer;
  if (m.is_mla()) {
    if (kv_heads)
      throw InputError(fmt::format(
          "kv-heads: {} uses multi-head latent attention (MLA): each layer caches one latent "
          "(kv_lora_rank = {}) and one shared RoPE key (qk_rope_head_dim = {}) per token, not "
          "per-head K/V, so there is no K/V head count to override",
          m.name, *m.kv_lora_rank, *m.qk_rope_head_dim));
    l.mla = true;
    l.latent_dim = *m.kv_lora_rank;
    l.rope_dim = *m.qk_rope_head_dim;
    l.elements_per_layer = checked_add(l.latent_dim, l.rope_dim, "MLA elements per layer");
    return l;
  }
  if (m.n_head == 0 || !m.has_attention()) {  // Mamba and kin: nothing cached per token
    if (kv_heads)
      throw InputError(fmt::format("kv-heads: {} has no attention layer, so there is no K/V head "
                                   "count to override", m.name));
    return l;
  }
  l.kv_heads = kv_heads.value_or(m.n_kv_head);
  if (l.kv_heads == 0 || m.n_head % l.kv_heads != 0)
    throw InputError(fmt::format("kv-heads: must divide num_attention_heads = {} of {} (got {})",
                                 m.n_head, m.name, l.kv_heads));
  l.head_dim = m.head_dim;
  // 2: one K and one V per K/V head (004 §1.4).
  l.elements_per_layer = checked_mul(2, checked_mul(l.kv_heads, l.head_dim, "K/V heads × head_dim"),
                                     "K+V elements per layer");
  return l;
}

KvCacheSize kv_cache_size(const ModelSpec& m, const KvQuery& q) {
  if (q.batch == 0) throw InputError("batch: must be >= 1 sequence (got 0)");
  if (q.ctx == 0) throw InputError("ctx: must be >= 1 cached position (got 0)");
  KvCacheSize s;
  s.layout = kv_layout(m, q.kv_heads);
  std::uint64_t attention_layers = 0;
  for (std::uint64_t i = 0; i < m.n_layer; ++i)
    attention_layers += i >= m.layers.size() || m.layers[i].attention != LayerAttention::none;
  s.elements_per_token = checked_mul(attention_layers, s.layout.elements_per_layer,
                                     "KV elements per token (attention layers × 2·K/V heads·head_dim, or × (kv_lora_rank + qk_rope_head_dim) for MLA)");
  s.bits_per_token = checked_mul(s.elements_per_token, cache_dtype_bits(q.dtype), "KV bits per token");
  s.bytes_per_token = static_cast<double>(s.bits_per_token) / 8.0;
  s.tokens = checked_mul(q.batch, q.ctx, "batch x ctx (cached tokens)");
  s.total_bits_if_all_full = checked_mul(s.tokens, s.bits_per_token,
                             fmt::format("KV-cache size in bits (batch {} x ctx {} x {} bits per token)",
                                         q.batch, q.ctx, s.bits_per_token));
  s.total_bytes_if_all_full = s.total_bits_if_all_full / 8 + (s.total_bits_if_all_full % 8 != 0 ? 1 : 0);
  const KvHeld held = kv_held(m, q);
  s.total_bits = held.total_bits;
  s.total_bytes = held.total_bytes;
  return s;
}

std::uint64_t kv_bytes_per_token_16bit(const ModelSpec& m) {
  KvQuery q;
  q.batch = 1;
  q.ctx = 1;
  q.dtype = CacheDtype::bf16;
  return kv_cache_size(m, q).total_bytes;
}

std::vector<KvTensor> kv_cache_tensors(const ModelSpec& m, const KvQuery& q) {
  const KvLayout l = kv_layout(m, q.kv_heads);
  std::vector<KvTensor> out;
  out.reserve(2 * l.n_layer);
  for (std::uint64_t layer = 0; layer < l.n_layer; ++layer) {
    // This layer's own entry: a window or chunk bounds what a rolling cache keeps.
    const LayerSpec spec = layer < m.layers.size() ? m.layers[layer] : LayerSpec{};
    if (spec.attention == LayerAttention::none) continue;
    const std::uint64_t ctx = spec.attention == LayerAttention::full || l.mla
                                  ? q.ctx : std::min(q.ctx, spec.span);
    if (l.mla) {
      out.push_back({layer, "c_kv", {q.batch, ctx, l.latent_dim}});
      out.push_back({layer, "k_rope", {q.batch, ctx, l.rope_dim}});
    } else {
      out.push_back({layer, "K", {q.batch, l.kv_heads, ctx, l.head_dim}});
      out.push_back({layer, "V", {q.batch, l.kv_heads, ctx, l.head_dim}});
    }
  }
  return out;
}

std::uint64_t count_elements(const std::vector<KvTensor>& tensors) {
  std::uint64_t total = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = 1;
    for (std::uint64_t d : t.shape) n = checked_mul(n, d, "elements of cache tensor " + t.name);
    total = checked_add(total, n, "elements of the KV cache");
  }
  return total;
}

double weight_bytes(double n_params, double bytes_per_param) {
  require_finite_range("params", n_params, 1.0, 1e15);
  require_finite_range("weight-bytes", bytes_per_param, 1.0 / 64, 64.0);
  return n_params * bytes_per_param;
}

}  // namespace kvlab
