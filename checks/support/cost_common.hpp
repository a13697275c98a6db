// Helpers shared by the cost checks (kv-size, roofline): naming the option an input error came
// from, resolving --model / --config to a ModelSpec, describing an attention layout, and turning
// exact byte counts into table cells. No arithmetic of the claims lives here.
#pragma once

#include "framework/options.hpp"

#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "cost/layers.hpp"
#include "io/catalogue.hpp"
#include "report/result.hpp"

namespace kvlab::checks {

/// Runs `f`; an InputError it throws is rethrown with `option` in front, so that the one-line
/// error names the option the student typed ("--config: /tmp: is a directory; ...").
template <class F>
auto with_option(const std::string& option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InputError& e) {
    throw InputError(option + ": " + e.what());
  }
}

/// Accepts a decimal integer in [1, 2^63 - 1] (batch, context): IntRange with the widest bound.
inline Validator PositiveCount() { return IntRange(1, std::numeric_limits<std::int64_t>::max()); }

/// Loads a model by catalogue name or by config path; the functions are the checks' injectable
/// loaders. Throws InputError naming --model or --config; both given is an error too.
inline ModelSpec resolve_model(const std::optional<std::string>& model,
                               const std::optional<std::string>& config,
                               const std::function<ModelSpec(const std::string&)>& load_model,
                               const std::function<ModelSpec(const std::string&)>& read_config) {
  if (model && config) throw InputError("--model, --config: give one of them, not both");
  if (model) return with_option("--model", [&] { return load_model(*model); });
  if (config) return with_option("--config", [&] { return read_config(*config); });
  throw InputError("--model, --config: one of them is required here");
}

/// "MHA (32 K/V heads = 32 query heads)", "GQA (8 K/V heads for 64 query heads)",
/// "MQA (1 K/V head for 71 query heads)" or "MLA (latent 512 + RoPE key 64 per layer)".
inline std::string attention_kind(const ModelSpec& m, const KvLayout& l) {
  if (l.elements_per_layer == 0) return "no attention layer (nothing cached per token)";
  if (l.mla) return fmt::format("MLA (latent {} + RoPE key {} per layer)", l.latent_dim, l.rope_dim);
  if (l.kv_heads == m.n_head) return fmt::format("MHA ({} K/V heads = query heads)", l.kv_heads);
  if (l.kv_heads == 1) return fmt::format("MQA (1 K/V head for {} query heads)", m.n_head);
  return fmt::format("GQA ({} K/V heads for {} query heads)", l.kv_heads, m.n_head);
}

/// Positions a sequence's cache holds at `ctx`, counted layer by layer from the config's layer
/// list, independently of cost/layers.hpp's groups: a sliding window or a chunk keeps
/// min(ctx, span), an attention-free layer nothing, every other attention layer ctx.
struct HeldByLayer {
  std::uint64_t attention_layers = 0;  ///< layers that cache something per token
  std::uint64_t positions = 0;         ///< Σ over those layers of the positions held
};
inline HeldByLayer held_by_layer(const ModelSpec& m, std::uint64_t ctx) {
  HeldByLayer h;
  for (std::uint64_t i = 0; i < m.n_layer; ++i) {
    const LayerSpec l = i < m.layers.size() ? m.layers[i] : LayerSpec{};
    if (l.attention == LayerAttention::none) continue;
    ++h.attention_layers;
    const bool windowed = !m.is_mla() && l.attention != LayerAttention::full;
    h.positions = checked_add(h.positions, windowed ? std::min(ctx, l.span) : ctx, "positions held");
  }
  return h;
}

/// "12 × sliding 128 (128 held), 12 × full (4096 held)": the layer groups of cost/layers.hpp
/// and the positions each holds at `ctx`, for the step tables of roofline and max-batch.
inline std::string layer_groups_text(const ModelSpec& m, std::uint64_t ctx) {
  std::string out;
  for (const LayerGroup& g : layer_groups(m)) {
    std::string kind = layer_kind_name(g.kind);
    if (g.kind == LayerKind::sliding || g.kind == LayerKind::chunked) kind += fmt::format(" {}", g.span);
    if (g.kind == LayerKind::none) kind += " (" + g.mixer + ")";
    out += fmt::format("{}{} × {} ({} held)", out.empty() ? "" : ", ", g.count, kind, positions_held(g, ctx));
  }
  return out;
}

/// An exact count as a table cell: an integer cell when it fits in int64, else its digits.
inline Cell count_cell(std::uint64_t v) {
  if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v);
  return std::to_string(v);
}

/// Sizes the cache of `m` for `kv` once before the library does, so that an overflow is an
/// InputError naming its cause: `where` ("--model NAME" or "--config PATH", whose fields make one
/// token's cache too large to count) or --batch × --ctx (the whole batch's cache). A bad K/V head
/// override stays the library's "kv-heads: ..." error. Returns one token's size.
inline KvCacheSize require_cache_fits(const ModelSpec& m, const KvQuery& kv, const std::string& where) {
  kv_layout(m, kv.kv_heads);
  const KvCacheSize one =
      with_option(where, [&] { return kv_cache_size(m, KvQuery{1, 1, kv.dtype, kv.kv_heads}); });
  const std::uint64_t tokens = checked_mul(kv.batch, kv.ctx, "--batch × --ctx (cached tokens)");
  checked_mul(tokens, one.bits_per_token,
              fmt::format("--batch × --ctx × KV bits per token ({} × {} × {})", kv.batch, kv.ctx,
                          one.bits_per_token));
  return one;
}

/// "--config PATH" or "--model NAME" for error lines, with bytes outside printable ASCII as '?'
/// and at most 200 characters of the path or name.
inline std::string model_origin(const std::optional<std::string>& model,
                                const std::optional<std::string>& config) {
  const std::string& raw = config ? *config : model.value_or("");
  std::string shown;
  for (unsigned char ch : raw.substr(0, 200))
    shown += (ch >= 0x20 && ch < 0x7f) ? static_cast<char>(ch) : '?';
  return (config ? "--config " : "--model ") + shown;
}

/// A checked int64 option value as the library's uint64, >= 1; InputError naming `option`.
inline std::uint64_t positive_count(const std::string& option, std::int64_t v) {
  if (v < 1) throw InputError(fmt::format("{}: must be >= 1 (got {})", option, v));
  return static_cast<std::uint64_t>(v);
}

}  // namespace kvlab::checks
