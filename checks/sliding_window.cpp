// sliding-window — 004 §2.7, §1.6; 003 part 2: a rolling cache of W positions is exact for
// sliding-window attention, its memory stays at W, and l layers reach l·(W − 1) positions back
// with a window of W keys (the query included), l·W with W previous tokens plus the query.
//
// Claim (004 §2.7): with sliding-window attention (Mistral) each layer sees only the last W tokens,
// so the KV cache is capped at W; stacked, layer l still sees l·W back. 004 §1.6: Mistral's rolling
// cache rests on RoPE, whose positions keep counting while old K stay valid. 003 part 2: tokens
// outside the window are dropped from the cache, which stays a constant size.
//
// What kvlab runs: a mini-GPT with window W (query p sees keys p − W + 1 .. p), RoPE by default,
// prefills --prefill tokens (more than W) and decodes the rest one at a time through a RollingCache
// of W positions, which wraps around (N − 1)/W times. Expected:
//   - logits = an independent full forward with an explicit window mask (j ≤ i, i − j < W), before
//     the first wrap-around and after it: 0 ± 2·n·u·max|logit| (float rounding, model_setup.hpp);
//   - positions held per cache layer, measured on the cache after every step: max = min(W, N),
//     exactly (a full cache would hold N);
//   - receptive field: change input token s and compare every output bit for bit. Layer 1 at p reads
//     p − W + 1 .. p, so l layers read p − l·(W − 1) .. p: the outputs that change are exactly
//     s .. s + l·(W − 1) (capped at N − 1). The reach l·(W − 1) is checked exactly;
//   - 004's "l·W" is Mistral's convention (each query sees W previous tokens plus itself, W + 1
//     keys): the same probe on a model whose window holds W + 1 keys measures l·W, judged against
//     the document's figure. A convention, not an erratum.
//
//   kvlab sliding-window [--window 4] [--layers 2] [--tokens 24] [--prefill 6] [--perturb 3]
//                        [--positional rope|learned]
#include "checks/sliding_window.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "cache/rolling_cache.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "model/ops.hpp"
#include "reference/attention.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::sliding_window {
namespace {

// Largest sizes accepted: two decodes of 256 tokens through 8 layers stay well under a second.
constexpr int kMaxWindow = 64, kMaxLayers = 8, kMaxTokens = 256;

// The reference: one forward over all N tokens with full attention and an explicit window mask
// (i − W < j ≤ i): the oracle attention of lib/reference, which shares no attention or cache code
// with the model.
template <class T>
Mat<T> masked_full_forward(const MiniGPT<T>& model, const std::vector<int>& ids, int window) {
  const ModelConfig& c = model.config();
  const auto& w = model.weights();
  const int n = static_cast<int>(ids.size()), hd = c.head_dim;
  Mat<T> x(n, c.d_model);
  for (int t = 0; t < n; ++t) {
    x.row(t) = w.wte.row(ids[t]);
    if (c.positional == Positional::learned) x.row(t) += w.wpe.row(t);
  }
  Mat<T> k, v;
  for (int l = 0; l < c.n_layer; ++l) {
    const auto& b = w.blocks[l];
    const Mat<T> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
    Mat<T> q = linear(h, b.w_q, b.b_q);
    if (c.positional == Positional::rope) apply_rope(q, c.n_head, hd, 0, c.rope_theta);
    if (l % c.cla_share == 0) {
      k = linear(h, b.w_k, b.b_k);
      v = linear(h, b.w_v, b.b_v);
      if (c.positional == Positional::rope) apply_rope(k, c.n_kv_head, hd, 0, c.rope_theta);
    }
    const Mat<T> att = reference::masked_attention(q, k, v, c.n_head, c.n_kv_head, hd, [window](int i, int j) {
      return j <= i && i - j < window;  // the window mask
    });
    x += linear(att, b.w_o, b.b_o);
    Mat<T> mlp = linear(layer_norm(x, b.ln2_gain, b.ln2_bias), b.w_fc, b.b_fc);
    gelu_inplace(mlp);
    x += linear(mlp, b.w_proj, b.b_proj);
  }
  return linear(layer_norm(x, w.lnf_gain, w.lnf_bias), w.w_lm, Vec<T>::Zero(c.vocab_size).eval());
}

// Prefill then decode one token at a time through `cache`; records the positions held per layer.
template <class T>
Mat<T> rolling_decode(const MiniGPT<T>& model, const std::vector<int>& ids, int prefill, KVCache<T>& cache,
                      int* max_held) {
  const int n = static_cast<int>(ids.size());
  Mat<T> out(n, model.config().vocab_size);
  out.topRows(prefill) = model.forward(std::span(ids).first(prefill), 0, cache);
  auto note_held = [&] {
    for (int l = 0; l < cache.n_layer(); ++l) *max_held = std::max(*max_held, cache.length(l));
  };
  note_held();
  for (int p = prefill; p < n; ++p) {
    out.row(p) = model.forward(std::span(ids).subspan(p, 1), p, cache);  // RoPE at the true position p
    note_held();
  }
  return out;
}

// The model under test with window parts.model_window (else --window) + `extra` keys: a seeded
// mini-GPT, or the --weights file's model with the window applied at inference (a mask, not a
// weight: any causal model can run windowed); its layers, positions and widths replace the options'.
template <class T>
MiniGPT<T> window_model(const SlidingWindowOptions& o, const RunContext& ctx, const SlidingWindowParts& parts,
                        int extra = 0) {
  const int N = o.tokens;
  ModelConfig cfg;
  cfg.n_layer = o.layers;
  cfg.n_kv_head = 2;
  cfg.block_size = std::max(64, N);
  cfg.positional = parse_positional(o.positional);
  cfg.sliding_window = parts.model_window.value_or(o.window) + extra;
  if (ctx.weights.empty()) return MiniGPT<T>(cfg, ctx.seed);
  MiniGPT<T> m = check_model<T>(
      cfg, ctx, "sliding-window",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a sliding window is a causal mask)"},
       {"block_size", [N](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= N; },
        fmt::format(">= --tokens = {} with learned positions", N)}});
  ModelConfig c = m.config();
  c.sliding_window = parts.model_window.value_or(o.window) + extra;
  MiniGPT<T> out(c, std::move(m.weights()));
  out.set_source(m.source());  // the file's forward that overflows is still refused, naming it
  return out;
}

// Receptive field: change token --perturb and return, per output position, how far its logits
// moved (any bit counts), on a model and a cache whose window holds W + extra keys. Runs in float64
// whatever --dtype is: an influence smaller than float32's spacing (1e-7 at 8 layers × 15
// positions) would round away, and the claim is about which outputs can move.
std::vector<double> probe(const SlidingWindowMeasured& m, const SlidingWindowParts& parts, const std::vector<int>& ids,
                          int extra, const WindowCacheMaker<double>& make_cache64) {
  const SlidingWindowOptions& o = m.options;
  const ModelConfig& cfg = m.config;
  auto perturbed = ids;
  perturbed[o.perturb] = (ids[o.perturb] + 1) % cfg.vocab_size;
  const MiniGPT<double> model64 = window_model<double>(o, m.context, parts, extra);
  int unused = 0;
  auto cache_a = make_cache64(cfg.n_kv_layer(), cfg.kv_width(), o.window + extra);
  auto cache_b = make_cache64(cfg.n_kv_layer(), cfg.kv_width(), o.window + extra);
  const Mat<double> base = rolling_decode(model64, ids, o.prefill, *cache_a, &unused);
  const Mat<double> moved = rolling_decode(model64, perturbed, o.prefill, *cache_b, &unused);
  std::vector<double> diffs;
  for (int p = 0; p < o.tokens; ++p) diffs.push_back(max_abs(moved.row(p) - base.row(p)));
  return diffs;
}

template <class T>
SlidingWindowMeasured measure_impl(const SlidingWindowOptions& o, const RunContext& ctx, const SlidingWindowParts& parts,
                                   const WindowCacheMaker<T>& make_cache, const WindowCacheMaker<double>& make_cache64) {
  const int W = o.window, N = o.tokens;
  const MiniGPT<T> model = window_model<T>(o, ctx, parts);
  SlidingWindowMeasured m{.options = o, .context = ctx, .config = model.config(), .element_bytes = int(sizeof(T))};
  const ModelConfig& cfg = m.config;
  const auto ids = random_tokens(ctx.seed + 1, N, cfg.vocab_size);
  // 1. Rolling cache vs the masked full forward, before and after the first wrap-around.
  auto cache = make_cache(cfg.n_kv_layer(), cfg.kv_width(), W);
  const Mat<T> rolled = rolling_decode(model, ids, o.prefill, *cache, &m.max_held);
  const Mat<T> reference = masked_full_forward(model, ids, W);
  const int before = std::min(W, N);
  m.diff_before = static_cast<double>(max_abs(rolled.topRows(before) - reference.topRows(before)));
  m.diff_after = N > W ? static_cast<double>(max_abs(rolled.bottomRows(N - W) - reference.bottomRows(N - W))) : 0.0;
  m.max_logit = static_cast<double>(max_abs(reference));
  if (const auto* rc = dynamic_cast<const RollingCache<T>*>(cache.get()))
    m.ring_window = rc->window(), m.ring_bytes = rc->bytes_allocated();
  // 3. Receptive field under kvlab's window (W keys) and 004's (W previous tokens + the query).
  m.probe_own = probe(m, parts, ids, 0, make_cache64);
  m.probe_doc = probe(m, parts, ids, 1, make_cache64);
  return m;
}

// The farthest output a probe changed, minus --perturb (-1: none), and the outputs whose change
// disagrees with the window rule (changed ⇔ s ≤ p ≤ s + l·(keys − 1)).
struct Reach {
  int reach = -1, disagree = 0;
};

Reach reach_of(const SlidingWindowMeasured& m, const std::vector<double>& diffs, int keys) {
  const int s = m.options.perturb, span = m.config.n_layer * (keys - 1);
  Reach r;
  for (int p = 0; p < static_cast<int>(diffs.size()); ++p) {
    const bool changed = diffs[static_cast<std::size_t>(p)] != 0.0, expect_change = p >= s && p - s <= span;
    if (changed) r.reach = p - s;
    if (changed != expect_change) ++r.disagree;
  }
  return r;
}

double bound_of(const SlidingWindowMeasured& m) {
  return rounding_bound(m.config, m.context.dtype, std::max(1.0, m.max_logit));
}

// Rows 1 and 2: the logits before and after the wrap-around, and the positions held.
void judge_cache(const SlidingWindowMeasured& m, std::vector<Expectation>& rows) {
  const int W = m.options.window, N = m.options.tokens;
  const Dtype dtype = m.context.dtype;
  const std::string why_round = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})",
                                            reduction_length(m.config), unit_roundoff(dtype), dtype_name(dtype));
  rows.push_back({.quantity = fmt::format("max |Δlogits| rolling cache vs window-masked full attention, positions 0..{} "
                                          "(before the first wrap-around)", std::min(W, N) - 1),
                  .source = "004 §1.6, §2.7",
                  .expected = 0, .tolerance = bound_of(m), .why = why_round, .measured = m.diff_before});
  if (N > W)
    rows.push_back({.quantity = fmt::format("max |Δlogits| rolling cache vs window-masked full attention, positions "
                                            "{}..{} (after {} wrap-arounds, {} positions counting on to {})",
                                            W, N - 1, (N - 1) / W,
                                            m.config.positional == Positional::rope ? "RoPE" : "learned", N - 1),
                    .source = "004 §1.6, §2.7",
                    .expected = 0, .tolerance = bound_of(m), .why = why_round, .measured = m.diff_after});
  Expectation mem{.quantity = fmt::format("positions held per cache layer, max over {} tokens", N),
                  .source = "004 §2.7; 003 part 2",
                  .unit = "positions",
                  .expected = static_cast<double>(std::min(W, N)),
                  .tolerance = 0,
                  .why = "exact: a count (a full cache would hold N)",
                  .measured = static_cast<double>(m.max_held)};
  mem.document = "缓存大小封顶为 W (004 §2.7)";
  rows.push_back(mem);
}

// Row 3: the reach under both conventions, and the outputs off the window rule.
void judge_reach(const SlidingWindowMeasured& m, std::vector<Expectation>& rows) {
  const int W = m.options.window, N = m.options.tokens, s = m.options.perturb, L = m.config.n_layer;
  const Reach own = reach_of(m, m.probe_own, W), doc = reach_of(m, m.probe_doc, W + 1);
  const int reach_doc_expected = std::min(L * W, N - 1 - s);
  Expectation er{.quantity = fmt::format("reach: farthest output changed by input token {}, minus {} ({} layers, W = {} "
                                         "keys, the query included)", s, s, L, W),
                 .source = "004 §2.7",
                 .unit = "positions",
                 .expected = static_cast<double>(std::min(L * (W - 1), N - 1 - s)),
                 .tolerance = 0,
                 .why = "exact: l·(W − 1) (capped at N − 1 − s); an output outside the reach shares no "
                        "computation with token s, so it is bit-identical (probe in f64)",
                 .measured = static_cast<double>(own.reach)};
  er.arithmetic = fmt::format("each layer reaches W − 1 = {} positions back (it sees p − W + 1 .. p), so {} layers "
                              "reach {}·{} = {}", W - 1, L, L, W - 1, L * (W - 1));
  er.document = "第 l 层能间接看到 l·W 远: W previous tokens + the query (the next row)";
  Expectation ed{.quantity = fmt::format("reach under 004's convention: W = {} previous tokens + the query ({} keys), "
                                         "{} layers", W, W + 1, L),
                 .source = "004 §2.7",
                 .unit = "positions",
                 .expected = static_cast<double>(reach_doc_expected),
                 .tolerance = 0,
                 .why = "exact: l·W (capped at N − 1 − s), measured as the row above on a model and cache whose "
                        "window holds W + 1 keys",
                 .measured = static_cast<double>(doc.reach)};
  if (reach_doc_expected == L * W)
    ed.stated = Stated::parse(std::to_string(L * W), fmt::format("l·W = {}·{} (第 l 层能间接看到 l·W 远)", L, W));
  ed.arithmetic = fmt::format("W + 1 keys reach W = {} back per layer: {}·{} = {} (Mistral's mask; Mistral 7B "
                              "32·4096 = 131,072, or 32·4095 = 131,040 counting W keys with the query)",
                              W, L, W, L * W);
  rows.push_back(er);
  rows.push_back(ed);
  rows.push_back({.quantity = "outputs whose change disagrees with the window rule (changed ⇔ s ≤ p ≤ s + l·(keys − 1)), "
                              "both windows",
                  .source = "004 §2.7",
                  .unit = "positions",
                  .expected = 0,
                  .tolerance = 0,
                  .why = "exact: a count; causality and the window fix which outputs can move (probe in f64, "
                         "where every influence inside the reach is far above the rounding)",
                  .measured = static_cast<double>(own.disagree + doc.disagree)});
}

// One probe's table: the outputs around --perturb, expected and measured to change or not.
Table field_table(const SlidingWindowMeasured& m, const std::vector<double>& diffs, int keys, bool document) {
  const int s = m.options.perturb, N = m.options.tokens, span = m.config.n_layer * (keys - 1);
  const int shown_to = std::min(span, N - 1 - s);
  Table t{fmt::format("receptive field: outputs changed by input token {}, window of {} keys{}", s, keys,
                      document ? " (004's convention: W previous tokens + the query)" : ""),
          {"position", "offset from s", "expected to change", "changed", "max |Δlogits|"}, {}};
  for (int p = std::max(0, s - 1); p < N && p <= s + shown_to + 2; ++p) {
    const double d = diffs[static_cast<std::size_t>(p)];
    const bool expect_change = p >= s && p - s <= span;
    t.rows.push_back({std::int64_t{p}, std::int64_t{p - s}, std::string(expect_change ? "yes" : "no"),
                      std::string(d != 0.0 ? "yes" : "no"), d});
  }
  return t;
}

std::uint64_t cache_bytes(const SlidingWindowMeasured& m, int positions) {
  const ModelConfig& cfg = m.config;
  return checked_mul(
      checked_mul(static_cast<std::uint64_t>(cfg.n_kv_layer()) * 2, static_cast<std::uint64_t>(positions), "bytes"),
      checked_mul(static_cast<std::uint64_t>(cfg.kv_width()), static_cast<std::uint64_t>(m.element_bytes), "bytes"),
      "bytes");
}

void present_metrics(const SlidingWindowMeasured& m, Result& r) {
  const int W = m.options.window, N = m.options.tokens, s = m.options.perturb, L = m.config.n_layer;
  r.metric("max_abs_diff_before_wrap", m.diff_before);
  r.metric("max_abs_diff_after_wrap", m.diff_after);
  r.metric("rounding_bound", bound_of(m));
  r.metric_exact("wrap_arounds", static_cast<std::uint64_t>((N - 1) / W));
  r.metric_exact("cache_positions_held_max", static_cast<std::uint64_t>(m.max_held));
  r.metric_exact("cache_bytes_held_max", cache_bytes(m, m.max_held));
  r.metric_exact("full_cache_bytes", cache_bytes(m, N));
  r.metric("reach_positions", reach_of(m, m.probe_own, W).reach);
  r.metric("reach_expected", std::min(L * (W - 1), N - 1 - s));
  r.metric("reach_positions_previous_w", reach_of(m, m.probe_doc, W + 1).reach);
  r.metric("reach_expected_previous_w", std::min(L * W, N - 1 - s));
}

void present(const SlidingWindowMeasured& m, Result& r) {
  const SlidingWindowOptions& o = m.options;
  const RunContext& ctx = m.context;
  const int W = o.window, N = o.tokens, n_kv_layer = m.config.n_kv_layer();
  if (N <= W)
    r.notes.push_back(fmt::format("--tokens {} <= --window {}: the cache never wraps around; only the first row "
                                  "compares logits.", N, W));
  present_metrics(m, r);
  Table mem_table{"cache memory after N tokens", {"cache", "positions per layer", "layers", "bytes"}, {}};
  mem_table.rows.push_back({fmt::format("rolling, W = {} (measured)", W), std::int64_t{m.max_held},
                            std::int64_t{n_kv_layer}, static_cast<std::int64_t>(cache_bytes(m, m.max_held))});
  mem_table.rows.push_back({std::string("full (would hold)"), std::int64_t{N}, std::int64_t{n_kv_layer},
                            static_cast<std::int64_t>(cache_bytes(m, N))});
  if (m.ring_window > 0)
    mem_table.rows.push_back({std::string("rolling ring buffers allocated"), std::int64_t{m.ring_window},
                              std::int64_t{n_kv_layer}, static_cast<std::int64_t>(m.ring_bytes)});
  r.tables.push_back(std::move(mem_table));
  r.tables.push_back(field_table(m, m.probe_own, W, false));
  r.tables.push_back(field_table(m, m.probe_doc, W + 1, true));
  if (ctx.weights.empty())
    r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model 64, 8 query heads, 2 KV heads, window {}, {} positions, "
                                  "{} on {}, seed {}; prefill {} tokens then decode one at a time",
                                  m.config.n_layer, W, o.positional, dtype_name(ctx.dtype), device_name(ctx.device),
                                  ctx.seed, o.prefill));
  else
    r.notes.push_back(weights_note(m.config, ctx.weights) +
                      fmt::format("; the window W = {} applied at inference (a mask on the file's weights); "
                                  "claim's layer count: the file's {}; {} on {}; prefill {} tokens",
                                  W, m.config.n_layer, dtype_name(ctx.dtype), device_name(ctx.device), o.prefill));
  r.notes.push_back("The receptive-field probe runs in f64 whatever --dtype is: it asks which outputs can move, "
                    "and in f32 an influence below the float spacing would round away.");
}

std::string claim(const SlidingWindowMeasured& m) {
  const int W = m.options.window, layers = m.config.n_layer;
  return fmt::format("A rolling cache of W = {} positions gives the logits of full attention with a window mask, "
                     "before and after wrap-arounds ({} positions); its memory stays at W; {} layers reach "
                     "{}·(W − 1) = {} positions back, and {}·W = {} when W counts the previous tokens (004's l·W).",
                     W, m.config.positional == Positional::rope ? "rope" : "learned", layers, layers,
                     layers * (W - 1), layers, layers * W);
}

constexpr const char* kDerivation =
    "Window W: the query at p attends to keys p − W + 1 .. p (W keys, itself included).\n"
    "So the K/V of positions < p − W + 1 are never read again: a ring of W slots (position\n"
    "p in slot p mod W) holds all a decode step needs, and memory stays W, not N.\n"
    "RoPE puts the position into q·k as a relative angle, so K written at p stays valid and\n"
    "positions keep counting past W; learned absolute positions would stop at block_size.\n"
    "Reach: layer 1 at p reads inputs p − (W − 1) .. p; by induction l layers read\n"
    "p − l·(W − 1) .. p. 004 writes l·W: that counts W previous tokens plus the query\n"
    "(W + 1 keys), Mistral's own mask, under which each layer reaches W back. A convention,\n"
    "not an error: kvlab measures both, l·(W − 1) on its window of W keys and l·W on a\n"
    "window of W + 1 keys (Mistral 7B: 32·4096 = 131,072, or 32·4095 = 131,040).\n"
    "Source: 004 §2.7, §1.6; 003 part 2.\n";

}  // namespace

SlidingWindowMeasured measure_sliding_window(const SlidingWindowOptions& o, const RunContext& ctx,
                                             const SlidingWindowParts& parts) {
  WindowCacheMaker<double> maker64 = parts.cache_f64;
  if (!maker64)
    maker64 = [](int n_layer, int width, int window) { return std::make_unique<RollingCache<double>>(n_layer, width, window); };
  return with_dtype(ctx.dtype, [&]<class T>() {
    WindowCacheMaker<T> maker;
    if constexpr (std::is_same_v<T, double>) maker = maker64;
    else maker = parts.cache_f32;
    if (!maker) maker = [](int n_layer, int width, int window) { return std::make_unique<RollingCache<T>>(n_layer, width, window); };
    return measure_impl<T>(o, ctx, parts, maker, maker64);
  });
}

std::vector<Expectation> judge_sliding_window(const SlidingWindowMeasured& m) {
  std::vector<Expectation> rows;
  judge_cache(m, rows);
  judge_reach(m, rows);
  return rows;
}

const CheckDef<SlidingWindowOptions, SlidingWindowMeasured>& sliding_window_check() {
  static const CheckDef<SlidingWindowOptions, SlidingWindowMeasured> def{
      .spec = {.name = "sliding-window",
               .order = 150,
               .source = "004 §2.7, §1.6; 003 part 2",
               .summary = "rolling cache of W = window-masked attention; memory W; reach l·(W − 1)",
               .claim_zh = "滑动窗口：大小为 W 的滚动缓存 = 窗口掩码注意力；显存封顶为 W；感受野随层数增长",
               .description =
                   "Decodes a sliding-window mini-GPT (RoPE by default) through a rolling cache of W positions\n"
                   "that wraps around several times and compares every logit with one full forward under an\n"
                   "explicit window mask; measures the positions the cache holds; changes one input token\n"
                   "and lists which outputs move: exactly those within l·(W − 1) after it, and within l·W\n"
                   "when the window holds W previous tokens plus the query (004's and Mistral's convention).",
               .derivation = kDerivation,
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--window", &SlidingWindowOptions::window, Allowed::integers(1, kMaxWindow), "W: keys p - W + 1 .. p"},
                  {"--layers", &SlidingWindowOptions::layers, Allowed::integers(1, kMaxLayers), "Layers of the mini-GPT"},
                  {"--tokens", &SlidingWindowOptions::tokens, Allowed::integers(2, kMaxTokens), "Sequence length N"},
                  {"--prefill", &SlidingWindowOptions::prefill, Allowed::integers(1, kMaxTokens),
                   "Prompt tokens in one forward (<= --tokens)"},
                  {"--perturb", &SlidingWindowOptions::perturb, Allowed::integers(0, kMaxTokens - 1),
                   "Input position changed for the receptive field (< --tokens)"},
                  {"--positional", &SlidingWindowOptions::positional, Allowed::one_of({"rope", "learned"}),
                   "rope or learned"}},
      .constraints =
          [](const SlidingWindowOptions& o) {
            if (o.prefill > o.tokens)
              throw InputError(fmt::format("--prefill: must be in [1, --tokens = {}] (got {})", o.tokens, o.prefill));
            if (o.perturb >= o.tokens)
              throw InputError(
                  fmt::format("--perturb: must be in [0, --tokens - 1 = {}] (got {})", o.tokens - 1, o.perturb));
          },
      .measure = [](const SlidingWindowOptions& o, const RunContext& ctx) { return measure_sliding_window(o, ctx); },
      .judge = judge_sliding_window,
      .present = present,
      .claim = claim};
  return def;
}

Result run_sliding_window(const SlidingWindowOptions& o, const RunContext& ctx, const SlidingWindowParts& parts) {
  return run_check(sliding_window_check(), o, ctx, [&parts](const SlidingWindowOptions& opts, const RunContext& c) {
    return measure_sliding_window(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(sliding_window_check);

}  // namespace kvlab::checks::sliding_window
