// kv-invariance — 004 §1.2 (group 1): past K and V never change.
//
// Claim: in a causal model, appending a token leaves the K and V of every earlier position, in
// every layer, unchanged — not "close", bit-identical. Run a 12-token and a 13-token prefix of the
// same sequence through a two-layer mini-GPT and compare the first 12 positions' K and V.
// Expected: max |ΔK|, |ΔV| = 0 exactly (tolerance 0: the course's proof by induction says equal,
// and kvlab computes every position in a fixed summation order, so equal means the same bits).
//
//   kvlab kv-invariance [--tokens 12] [--layers 2] [--kv-heads 8] [--positional learned|rope]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/kv_invariance.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::kv_invariance {
namespace {

// Largest sizes accepted: the two forwards then take under a second on a 2-core machine.
constexpr int kMaxTokens = 512;
constexpr int kMaxLayers = 12;

// The model of the options (or of the --weights file), with room for --tokens + 1 positions.
template <class T>
MiniGPT<T> invariance_model(const KvInvarianceOptions& o, const RunContext& ctx) {
  ModelConfig base;
  base.n_layer = o.layers;
  base.n_kv_head = o.kv_heads;
  base.block_size = std::max(64, o.tokens + 1);
  base.positional = parse_positional(o.positional);
  base.causal = o.causal;
  const int need = o.tokens + 1;
  return check_model<T>(
      base, ctx, "kv-invariance",
      {{"causal", [](const ModelConfig& c) { return c.causal; },
        "true (a bidirectional model has no KV cache; the bidirectional check shows why)"},
       {"block_size", [need](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= need; },
        fmt::format(">= --tokens + 1 = {} with learned positions", need)}});
}

template <class T>
KvInvarianceMeasured measure_host(const KvInvarianceOptions& o, const RunContext& ctx) {
  const MiniGPT<T> model = invariance_model<T>(o, ctx);
  KvInvarianceMeasured m{.options = o, .context = ctx, .config = model.config()};
  const auto ids = random_tokens(ctx.seed + 1, o.tokens + 1, m.config.vocab_size);
  auto short_cache = model.make_cache(CacheKind::prealloc, o.tokens);
  auto long_cache = model.make_cache(CacheKind::prealloc, o.tokens + 1);
  model.forward(std::span(ids).first(o.tokens), 0, *short_cache);
  model.forward(std::span(ids), 0, *long_cache);
  for (int l = 0; l < m.config.n_kv_layer(); ++l) {  // cache layers (CLA shares one per group)
    const auto k_short = short_cache->keys(l), v_short = short_cache->values(l);
    const auto k_long = long_cache->keys(l).topRows(o.tokens), v_long = long_cache->values(l).topRows(o.tokens);
    KvLayerDiff d{.layer = l, .dk = static_cast<double>(max_abs(k_short - k_long)),
                  .dv = static_cast<double>(max_abs(v_short - v_long)), .max_k = static_cast<double>(max_abs(k_short))};
    m.max_dk = nan_max(m.max_dk, d.dk);
    m.max_dv = nan_max(m.max_dv, d.dv);
    m.layers.push_back(d);
  }
  return m;
}

// --device cuda: the same two prefills on the device (model/device_gpt.hpp), plus the cache
// itself: the device cache's rows 0..n-1 before and after token n is appended.
KvInvarianceMeasured measure_device(const KvInvarianceOptions& o, const RunContext& ctx) {
  if (!o.causal) throw InputError("--device cuda: the device runs causal models only; use --device cpu");
  const MiniGPT<float> model = invariance_model<float>(o, ctx);
  KvInvarianceMeasured m{.options = o, .context = ctx, .config = model.config()};
  const ModelConfig& cfg = m.config;
  const auto ids = random_tokens(ctx.seed + 1, o.tokens + 1, cfg.vocab_size);
  const auto ops = device_ops(ctx);
  gpu::DeviceGpt shorter(model, *ops, {.max_ctx = o.tokens + 1});
  gpu::DeviceGpt longer(model, *ops, {.max_ctx = o.tokens + 1});
  shorter.forward(0, std::span(ids).first(o.tokens));
  longer.forward(0, std::span(ids));
  std::vector<Mat<float>> k_before, v_before;
  for (int l = 0; l < cfg.n_layer; ++l) {
    k_before.push_back(shorter.keys(l, 0));
    v_before.push_back(shorter.values(l, 0));
  }
  shorter.forward(0, std::span(ids).subspan(static_cast<std::size_t>(o.tokens), 1));  // token n into the cache
  double prefill_diff = 0, max_k = 1;
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto n = static_cast<Eigen::Index>(o.tokens);
    KvLayerDiff d{.layer = l, .dk = max_abs_diff(k_before[l], longer.keys(l, 0).topRows(n)),
                  .dv = max_abs_diff(v_before[l], longer.values(l, 0).topRows(n)), .max_k = static_cast<double>(max_abs(k_before[l])),
                  .append_dk = max_abs_diff(k_before[l], shorter.keys(l, 0).topRows(n)),
                  .append_dv = max_abs_diff(v_before[l], shorter.values(l, 0).topRows(n))};
    prefill_diff = worst(prefill_diff, worst(d.dk, d.dv));
    m.append_diff = worst(m.append_diff, worst(d.append_dk, d.append_dv));
    max_k = worst(max_k, d.max_k);
    m.layers.push_back(d);
  }
  m.max_dk = m.max_dv = prefill_diff;
  m.bound = rounding_bound(cfg, Dtype::f32, max_k);
  m.device_note = device_note(*ops);
  return m;
}

std::string model_line(const KvInvarianceMeasured& m, bool device) {
  const ModelConfig& cfg = m.config;
  const RunContext& ctx = m.context;
  const char* positions = cfg.positional == Positional::rope ? "rope" : "learned";
  if (device)
    return fmt::format("model: {}{} layers, d_model {}, {} heads, {} KV heads, {} positions, seed {}",
                       ctx.weights.empty() ? "" : ctx.weights + " (--weights), ", cfg.n_layer, cfg.d_model, cfg.n_head,
                       cfg.n_kv_head, positions, ctx.seed);
  return fmt::format(
      "model: {}{} layers, d_model {}, {} heads, {} KV heads, {} positions, {} mask, {} on {}, seed {}",
      ctx.weights.empty() ? "" : ctx.weights + " (--weights: --layers, --kv-heads and --positional do not "
                                               "apply), ",
      cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_kv_head, positions, cfg.causal ? "causal" : "bidirectional",
      dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed);
}

void present(const KvInvarianceMeasured& m, Result& r) {
  const int n = m.options.tokens;
  if (m.context.device == Device::cuda) {
    Table per_layer{"K/V of the first positions on the device: prefill of n vs n + 1 tokens, and the cache before "
                    "vs after token n is appended",
                    {"layer", "positions compared", "max |ΔK| prefill", "max |ΔV| prefill", "max |ΔK| append",
                     "max |ΔV| append", "max |K|"}, {}};
    for (const KvLayerDiff& d : m.layers)
      per_layer.rows.push_back({std::int64_t{d.layer}, std::int64_t{n}, d.dk, d.dv, d.append_dk, d.append_dv, d.max_k});
    r.metric("max_abs_diff", m.max_dk);
    r.metric("max_abs_diff_append", m.append_diff);
    r.tables.push_back(std::move(per_layer));
    r.notes.push_back(model_line(m, true));
    r.notes.push_back(m.device_note);
    return;
  }
  Table per_layer{"K/V of the first positions: prefix of n vs n + 1 tokens",
                  {"layer", "positions compared", "max |ΔK|", "max |ΔV|", "max |K|"}, {}};
  for (const KvLayerDiff& d : m.layers)
    per_layer.rows.push_back({std::int64_t{d.layer}, std::int64_t{n}, d.dk, d.dv, d.max_k});
  r.metric("max_abs_diff", nan_max(m.max_dk, m.max_dv));
  r.metric("max_abs_diff_k", m.max_dk);
  r.metric("max_abs_diff_v", m.max_dv);
  r.tables.push_back(std::move(per_layer));
  r.notes.push_back(model_line(m, false));
  r.notes.push_back("Why: position j's K and V depend only on tokens 0..j (proof by induction over layers, "
                    "004 §1.2), so token n cannot change them. Under a bidirectional mask (BERT) it can.");
}

}  // namespace

KvInvarianceMeasured measure_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx) {
  if (ctx.device == Device::cuda) return measure_device(o, ctx);
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_host<T>(o, ctx); });
}

std::vector<Expectation> judge_kv_invariance(const KvInvarianceMeasured& m) {
  const int n = m.options.tokens;
  const ModelConfig& cfg = m.config;
  const Stated exactly_zero{"恰好是 0 (exactly 0)", 0, 0};
  if (m.context.device == Device::cuda) {
    Expectation prefill{
        .quantity = fmt::format("max |ΔK|, |ΔV| over {} layers, first {} positions: prefill of {} vs {} tokens",
                                cfg.n_layer, n, n, n + 1),
        .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = m.bound,
        .why = fmt::format("float32 rounding 2·n·u·max(1, |K|), n = {}: the GPU's GEMM library may block a {}-row "
                           "and a {}-row product differently (design.md numerics)",
                           reduction_length(cfg), n, n + 1),
        .measured = m.max_dk, .stated = exactly_zero};
    Expectation append{
        .quantity = fmt::format("max |ΔK|, |ΔV| of positions 0..{} in the device cache, before vs after appending "
                                "token {}", n - 1, n),
        .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = 0,
        .why = "exactly equal: an append writes one new slot and nothing else", .measured = m.append_diff};
    return {prefill, append};
  }
  const std::string why = "exactly equal: fixed summation order per position (design.md numerics)";
  const auto row = [&](const char* which, double measured) {
    return Expectation{.quantity = fmt::format("max |Δ{}| over {} layers, first {} positions", which,
                                               cfg.n_kv_layer(), n),
                       .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = 0, .why = why,
                       .measured = measured, .stated = exactly_zero};
  };
  return {row("K", m.max_dk), row("V", m.max_dv)};
}

const CheckDef<KvInvarianceOptions, KvInvarianceMeasured>& kv_invariance_check() {
  static const CheckDef<KvInvarianceOptions, KvInvarianceMeasured> def{
      .spec = {.name = "kv-invariance",
               .order = 10,
               .source = "004 §1.2 (group 1)",
               .summary = "past K/V never change: n vs n+1 tokens, max diff exactly 0",
               .claim_zh = "过去 token 的 K/V 不会因后续 token 而改变：n 与 n+1 个 token 时的最大差恰为 0（004 §1.2）",
               .description =
                   "Runs an n-token and an (n+1)-token prefix of one seeded sequence through a mini-GPT and\n"
                   "compares the cached K and V of the first n positions in every layer. The course's\n"
                   "induction proof says they are equal; kvlab expects exactly 0, not 'small'.",
               .derivation =
                   "Induction over the layers of a causal model.\n"
                   "Layer 1: k_i = x_i W_K and v_i = x_i W_V depend only on token i and its position, so appending\n"
                   "token t+1 leaves k_1..k_t and v_1..v_t as they were.\n"
                   "Layer l: the input h_i at position i is computed from positions j <= i of layer l-1 (the causal\n"
                   "mask hides j > i); by the induction hypothesis those did not change, so neither do h_i,\n"
                   "k_i = h_i W_K and v_i = h_i W_V.\n"
                   "Hence every past position's K and V, in every layer, are fixed once computed: they can be cached,\n"
                   "and the check expects max |K_13 - K_12| over the first 12 positions to be exactly 0.\n"
                   "With a bidirectional mask the step for layer l fails (position i attends to j > i): that is why\n"
                   "BERT has no KV cache.\n"
                   "Source: 004 §1.2.\n",
               .traits = {.dtype = true, .weights = true, .cuda = true}},
      .options = {{"--tokens", &KvInvarianceOptions::tokens, Allowed::integers(1, kMaxTokens),
                   "Shorter prefix length n (the other is n + 1)"},
                  {"--layers", &KvInvarianceOptions::layers, Allowed::integers(1, kMaxLayers), "Number of layers"},
                  {"--kv-heads", &KvInvarianceOptions::kv_heads, Allowed::integers(1, 8),
                   "K/V heads (divisor of 8: 8 MHA, 2 GQA, 1 MQA)"},
                  {"--positional", &KvInvarianceOptions::positional, Allowed::one_of({"learned", "rope"}),
                   "learned or rope"}},
      .constraints =
          [](const KvInvarianceOptions& o) {
            if (8 % o.kv_heads != 0)
              throw InputError(
                  fmt::format("--kv-heads: must divide the 8 query heads: 1, 2, 4 or 8 (got {})", o.kv_heads));
          },
      .measure = measure_kv_invariance,
      .judge = judge_kv_invariance,
      .present = present,
      .claim =
          [](const KvInvarianceMeasured& m) {
            return fmt::format("Appending token {} leaves the K and V of positions 0..{} unchanged in every layer: "
                               "max |ΔK|, |ΔV| is exactly 0.",
                               m.options.tokens, m.options.tokens - 1);
          },
      .cuda_gap =
          [](const KvInvarianceOptions& o, const RunContext& ctx) {
            return o.causal ? weights_device_gap(ctx) : "a bidirectional model has no KV cache on the device";
          }};
  return def;
}

Result run_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx) {
  return run_check(kv_invariance_check(), o, ctx);
}

KVLAB_REGISTER_SPEC(kv_invariance_check);

}  // namespace kvlab::checks::kv_invariance
