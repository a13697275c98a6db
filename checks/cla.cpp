// cla — 003 part 2, Q3; 004 §2.7: cross-layer attention halves the KV cache and the K/V weights,
// and a CLA model's cached decode still equals its full forward.
//
// Claim (003 part 2): CLA lets different layers share the same KV cache; Q3: the layers share the
// K/V projection weights as well, not only the stored blocks; 004 §2.7: adjacent layers can share
// one cache. kvlab's CLA (ModelConfig::cla_share = s): the first layer of each group of s adjacent
// layers projects K and V from its own input; every layer of the group attends to that one cache
// layer. With l layers: ceil(l/s) cache layers and ceil(l/s) K/V projections.
//
// Expected (defaults l = 4, s = 2):
//   - positions stored by the real cache after N tokens = ceil(l/s)·N, exactly (a count), and the
//     ratio to the same model without CLA (its real cache) = ceil(l/s)/l = 1/2, exactly;
//   - K/V parameters (W_k, W_v, b_k, b_v), counted from the weights = ceil(l/s)·2·(d·w + w),
//     w = n_kv_head·head_dim, exactly; ratio to the model without CLA = 1/2;
//   - prefill then decode one token at a time: max |Δlogits| against one full forward
//     = 0 ± 2·n·u·max|logit| (float rounding, support/model_setup.hpp).
//
//   kvlab cla [--layers 4] [--share 2] [--prefill 8] [--decode 12]
#include "checks/cla.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::cla {
namespace {

constexpr int kMaxLayers = 12, kMaxTokens = 256;

// K/V parameters of a model, counted from its weights.
template <class T>
std::uint64_t kv_parameters(const MiniGPT<T>& m) {
  std::uint64_t n = 0;
  for (const auto& b : m.weights().blocks)
    n += static_cast<std::uint64_t>(b.w_k.size() + b.w_v.size() + b.b_k.size() + b.b_v.size());
  return n;
}

/// The mini-GPT with CLA: o.layers layers, o.share per K/V, 2 K/V heads, RoPE.
ModelConfig cla_config(const ClaOptions& o) {
  ModelConfig cfg;
  cfg.n_layer = o.layers;
  cfg.n_kv_head = 2;
  cfg.block_size = std::max(64, o.prefill + o.decode);
  cfg.positional = Positional::rope;
  cfg.cla_share = o.share;
  return cfg;
}

std::uint64_t groups(const ClaOptions& o) { return static_cast<std::uint64_t>((o.layers + o.share - 1) / o.share); }

template <class T>
ClaMeasured measure_impl(const ClaOptions& o, const RunContext& ctx, const ClaCacheMaker<T>& make) {
  const int N = o.prefill + o.decode;
  const ModelConfig cfg = cla_config(o);
  ModelConfig base_cfg = cfg;  // the same model without CLA
  base_cfg.cla_share = 1;
  const MiniGPT<T> model(cfg, ctx.seed), baseline(base_cfg, ctx.seed);
  const auto ids = random_tokens(ctx.seed + 1, N, cfg.vocab_size);

  // Full forward (reference: a fresh PreallocCache, one call).
  auto full_cache = model.make_cache(CacheKind::prealloc, N);
  const Mat<T> full = model.forward(ids, 0, *full_cache);
  // Incremental: prefill, then one token at a time through the cache under test.
  auto cache = make(cfg.n_kv_layer(), cfg.kv_width(), N);
  Mat<T> inc(N, cfg.vocab_size);
  inc.topRows(o.prefill) = model.forward(std::span(ids).first(o.prefill), 0, *cache);
  for (int p = o.prefill; p < N; ++p) inc.row(p) = model.forward(std::span(ids).subspan(p, 1), p, *cache);
  // The baseline's real cache, after the same tokens.
  auto base_cache = baseline.make_cache(CacheKind::prealloc, N);
  baseline.forward(ids, 0, *base_cache);

  ClaMeasured m{.options = o, .context = ctx};
  m.stored = cache->stats().positions_written;
  m.base_stored = base_cache->stats().positions_written;
  for (int l = 0; l < cache->n_layer(); ++l) m.held += static_cast<std::uint64_t>(cache->length(l));
  const auto elem = static_cast<std::uint64_t>(sizeof(T)), w = static_cast<std::uint64_t>(cfg.kv_width());
  m.bytes = checked_mul(m.stored, 2 * w * elem, "cache bytes");
  m.base_bytes = checked_mul(m.base_stored, 2 * w * elem, "cache bytes");
  m.params = kv_parameters(model);
  m.base_params = kv_parameters(baseline);
  for (int l = 0; l < o.layers; ++l) m.cache_layer.push_back(cfg.kv_layer(l));
  m.max_abs_diff = static_cast<double>(max_abs(inc - full));
  m.logit_scale = std::max(1.0, static_cast<double>(max_abs(full)));
  return m;
}

void present(const ClaMeasured& m, Result& r) {
  const ClaOptions& o = m.options;
  const RunContext& ctx = m.context;
  r.metric_exact("cache_positions_cla", m.stored);
  r.metric_exact("cache_positions_held_cla", m.held);
  r.metric_exact("cache_positions_baseline", m.base_stored);
  r.metric_exact("cache_bytes_cla", m.bytes);
  r.metric_exact("cache_bytes_baseline", m.base_bytes);
  r.metric_exact("kv_params_cla", m.params);
  r.metric_exact("kv_params_baseline", m.base_params);
  r.metric("max_abs_diff", m.max_abs_diff);
  r.metric("rounding_bound", rounding_bound(cla_config(o), ctx.dtype, m.logit_scale));

  Table layers{"which cache layer each layer reads", {"layer", "projects K/V", "cache layer read"}, {}};
  for (int l = 0; l < o.layers; ++l)
    layers.rows.push_back({std::int64_t{l}, std::string(l % o.share == 0 ? "yes" : "no (reuses)"),
                           std::int64_t{m.cache_layer[static_cast<std::size_t>(l)]}});
  Table cmp{"CLA vs the same model without CLA", {"model", "cache layers", "positions stored", "cache bytes", "K/V parameters"}, {}};
  cmp.rows.push_back({std::string("without CLA"), std::int64_t{o.layers}, static_cast<std::int64_t>(m.base_stored),
                      static_cast<std::int64_t>(m.base_bytes), static_cast<std::int64_t>(m.base_params)});
  cmp.rows.push_back({fmt::format("CLA, {} layers per K/V", o.share), static_cast<std::int64_t>(groups(o)),
                      static_cast<std::int64_t>(m.stored), static_cast<std::int64_t>(m.bytes),
                      static_cast<std::int64_t>(m.params)});
  r.tables.push_back(std::move(cmp));
  r.tables.push_back(std::move(layers));
  r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model 64, 8 query heads, 2 KV heads, RoPE, {} on {}, seed {}. "
                                "In a group only the first layer projects K/V, from its own input; the others "
                                "attend to those K/V with their own queries (Brandon et al. 2024, CLA2 for s = 2).",
                                o.layers, dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed));
}

}  // namespace

ClaMeasured measure_cla(const ClaOptions& o, const RunContext& ctx, const ClaParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() {
    ClaCacheMaker<T> maker;
    if constexpr (std::is_same_v<T, double>) maker = parts.cache_f64;
    else maker = parts.cache_f32;
    if (!maker) maker = [](int n, int w, int len) { return make_cache<T>(CacheKind::prealloc, n, w, len); };
    return measure_impl<T>(o, ctx, maker);
  });
}

std::vector<Expectation> judge_cla(const ClaMeasured& m) {
  const ClaOptions& o = m.options;
  const ModelConfig cfg = cla_config(o);
  const int N = o.prefill + o.decode;
  const std::uint64_t g = groups(o), d = static_cast<std::uint64_t>(cfg.d_model),
                      w = static_cast<std::uint64_t>(cfg.kv_width());
  const std::string ratio_why = "exact: a ratio of two counts, each divided once";
  std::vector<Expectation> rows;
  rows.push_back({.quantity = fmt::format("positions stored by the CLA cache ({} layers, {} per K/V), {} tokens",
                                          o.layers, o.share, N),
                  .source = "003 part 2; 004 §2.7", .unit = "positions",
                  .expected = static_cast<double>(g * static_cast<std::uint64_t>(N)), .tolerance = 0,
                  .why = fmt::format("exact: a count; ceil({}/{})·{} = {}·{}", o.layers, o.share, N, g, N),
                  .measured = static_cast<double>(m.stored)});
  rows.push_back({.quantity = "CLA cache bytes / the same model's cache without CLA", .source = "003 part 2; 004 §2.7",
                  .expected = static_cast<double>(g) / o.layers, .tolerance = 0, .why = ratio_why,
                  .measured = static_cast<double>(m.bytes) / static_cast<double>(m.base_bytes),
                  .document = "不同层之间共享相同的 KV Cache (003 part 2)"});
  rows.back().headline = true;  // the saving the claim is about
  rows.push_back({.quantity = "K/V projection parameters (W_k, W_v, b_k, b_v), counted from the weights",
                  .source = "003 Q3", .unit = "parameters", .expected = static_cast<double>(g * 2 * (d * w + w)),
                  .tolerance = 0, .why = fmt::format("exact: ceil(l/s)·2·(d·w + w) = {}·2·({}·{} + {})", g, d, w, w),
                  .measured = static_cast<double>(m.params),
                  .document = "连权重也一起共享 (003 Q3: one K/V projection per layer pair)"});
  rows.push_back({.quantity = "K/V parameters / the same model's without CLA", .source = "003 Q3",
                  .expected = static_cast<double>(g) / o.layers, .tolerance = 0, .why = ratio_why,
                  .measured = static_cast<double>(m.params) / static_cast<double>(m.base_params)});
  const Dtype dtype = m.context.dtype;
  rows.push_back({.quantity = fmt::format("max |Δlogits| CLA: prefill {} + decode {} through the shared cache vs one "
                                          "full forward", o.prefill, o.decode),
                  .source = "003 part 2; 004 §1.3", .expected = 0,
                  .tolerance = rounding_bound(cfg, dtype, m.logit_scale),
                  .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})",
                                     reduction_length(cfg), unit_roundoff(dtype), dtype_name(dtype)),
                  .measured = m.max_abs_diff});
  return rows;
}

const CheckDef<ClaOptions, ClaMeasured>& cla_check() {
  static const CheckDef<ClaOptions, ClaMeasured> def{
      .spec = {.name = "cla",
               .order = 160,
               .source = "003 part 2, Q3; 004 §2.7",
               .summary = "cross-layer attention: cache and K/V weights ÷ 2; decode = full",
               .claim_zh = "跨层注意力（CLA）：缓存与 K/V 权重减半；解码与完整计算一致",
               .description =
                   "Builds a mini-GPT whose adjacent layers share one K/V projection and one cache layer\n"
                   "(CLA), counts the positions its real cache stores and the K/V parameters against the\n"
                   "formula and the same model without CLA, and compares its cached decode with its full\n"
                   "forward.",
               .derivation =
                   "A KV cache stores, per token, K and V for every layer: 2·l·w elements (w = n_kv·d_h).\n"
                   "CLA lets a group of s adjacent layers use one K/V: the group's first layer projects\n"
                   "K, V from its input and caches them, the other s − 1 layers attend to them with their\n"
                   "own queries. Cache layers and K/V projections: ceil(l/s); for pairs (s = 2) both halve.\n"
                   "The cached decode stays exact: every cached K/V depends only on earlier positions, as\n"
                   "in 004 §1.2, so decode = full forward up to rounding.\n"
                   "Source: 003 part 2, Q3 (weights shared too); 004 §2.7.\n",
               .traits = {.dtype = true,
                          .weights_refusal = "it compares one seeded model with and without cross-layer K/V sharing "
                                             "(cla_share), and a file holds one model whose layers were not trained "
                                             "to share K/V"}},
      .options = {{"--layers", &ClaOptions::layers, Allowed::integers(1, kMaxLayers), "Layers of the mini-GPT"},
                  {"--share", &ClaOptions::share, Allowed::integers(1, kMaxLayers),
                   "Adjacent layers per K/V (<= --layers)"},
                  {"--prefill", &ClaOptions::prefill, Allowed::integers(1, kMaxTokens), "Prompt tokens"},
                  {"--decode", &ClaOptions::decode, Allowed::integers(0, kMaxTokens), "Tokens decoded one at a time"}},
      .constraints =
          [](const ClaOptions& o) {
            if (o.share > o.layers)
              throw InputError(fmt::format("--share: must be in [1, --layers = {}] (got {})", o.layers, o.share));
          },
      .measure = [](const ClaOptions& o, const RunContext& ctx) { return measure_cla(o, ctx); },
      .judge = judge_cla,
      .present = present,
      .claim =
          [](const ClaMeasured& m) {
            const ClaOptions& o = m.options;
            return fmt::format("Cross-layer attention with {} layers per K/V: the {}-layer model stores ceil({}/{}) "
                               "cache layers and as many K/V projections (÷{} for layer pairs), and its cached decode "
                               "equals its full forward.", o.share, o.layers, o.layers, o.share, o.share);
          }};
  return def;
}

Result run_cla(const ClaOptions& o, const RunContext& ctx, const ClaParts& parts) {
  return run_check(cla_check(), o, ctx, [&parts](const ClaOptions& opts, const RunContext& c) {
    return measure_cla(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(cla_check);

}  // namespace kvlab::checks::cla
