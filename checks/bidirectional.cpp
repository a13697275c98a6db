// bidirectional — 004 §1.2: why BERT has no KV cache.
//
// Claim: the induction of 004 §1.2 needs the causal mask. Under a bidirectional mask every position
// attends to every other, so appending a token changes the representation of every earlier
// position from the first attention onward, and with it their K and V in layers 2, 3, ...: a cache
// of old K/V would be stale. kvlab runs an n- and an (n + 1)-token prefix of one sequence through
// two mini-GPTs with the same weights, one causal and one bidirectional, and compares the cached
// K/V of the first n positions layer by layer.
// Expected: causal: max |ΔK|, |ΔV| exactly 0 in every layer (fixed summation order); bidirectional:
// exactly 0 in layer 1 (its K/V are computed from the embeddings, before any attention) and above a
// rounding threshold in every layer >= 2 (a count, exact). The threshold 2·n·u·max(1, max|K|) is
// the most that rounding could move two equal computations (support/model_setup.hpp), so rounding
// alone cannot pass it.
//
//   kvlab bidirectional [--tokens 12] [--layers 3] [--dtype f64|f32]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/bidirectional.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::bidirectional {
namespace {

// Largest sizes accepted: four forwards of up to 513 tokens through 12 layers, under a second.
constexpr int kMaxTokens = 512;
constexpr int kMaxLayers = 12;

/// max |ΔK|, |ΔV| of the first n positions, per layer, between prefixes of n and n + 1 tokens.
template <class T>
std::vector<MaskLayerDiff> prefix_diffs(const ModelConfig& cfg, const GptWeights<T>& weights, const std::vector<int>& ids,
                                    int n, const std::string& source) {
  MiniGPT<T> model(cfg, weights);
  model.set_source(source);  // a --weights file's forward that overflows is refused, naming the file
  auto short_cache = model.make_cache(CacheKind::prealloc, n);
  auto long_cache = model.make_cache(CacheKind::prealloc, n + 1);
  model.forward(std::span(ids).first(n), 0, *short_cache);
  model.forward(std::span(ids), 0, *long_cache);
  std::vector<MaskLayerDiff> out;
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto ks = short_cache->keys(l), vs = short_cache->values(l);
    const auto kl = long_cache->keys(l).topRows(n), vl = long_cache->values(l).topRows(n);
    out.push_back({static_cast<double>(max_abs(ks - kl)), static_cast<double>(max_abs(vs - vl)),
                   nan_max(max_abs(ks), max_abs(vs))});
  }
  return out;
}

template <class T>
BidirectionalMeasured measure_impl(const BidirectionalOptions& o, const RunContext& ctx, const BidirectionalParts& parts) {
  ModelConfig base;
  base.n_layer = o.layers;
  base.block_size = std::max(64, o.tokens + 1);
  const int need = o.tokens + 1;
  // One set of weights under both masks (--weights: the file's, whatever mask it was trained with).
  const MiniGPT<T> model = check_model<T>(
      base, ctx, "bidirectional",
      {{"n_layer", [](const ModelConfig& c) { return c.n_layer >= 2; }, ">= 2 (the claim is about layers 2..L)"},
       {"cla_share", [](const ModelConfig& c) { return c.cla_share == 1; }, "1 (K/V per layer)"},
       {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (a window needs a causal mask)"},
       {"block_size", [need](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= need; },
        fmt::format(">= --tokens + 1 = {} with learned positions", need)}});
  BidirectionalMeasured m{.options = o, .context = ctx, .config = model.config()};
  ModelConfig cfg = model.config();
  const auto ids = random_tokens(ctx.seed + 1, o.tokens + 1, cfg.vocab_size);
  cfg.causal = true;
  m.causal = prefix_diffs<T>(cfg, model.weights(), ids, o.tokens, model.source());
  cfg.causal = parts.bidirectional_is_causal;
  m.bidirectional = prefix_diffs<T>(cfg, model.weights(), ids, o.tokens, model.source());
  m.config.causal = parts.bidirectional_is_causal;  // as the old report named it
  return m;
}

void present(const BidirectionalMeasured& m, Result& r) {
  const int n = m.options.tokens;
  Table per_layer{fmt::format("K/V of positions 0..{}: prefix of {} vs {} tokens", n - 1, n, n + 1),
                  {"layer", "causal max |ΔK|", "causal max |ΔV|", "bidirectional max |ΔK|", "bidirectional max |ΔV|",
                   "rounding threshold"}, {}};
  double causal_max = 0, bidir_min_later = INFINITY, bidir_max = 0;
  for (int l = 0; l < m.config.n_layer; ++l) {
    const MaskLayerDiff &c = m.causal[l], &b = m.bidirectional[l];
    causal_max = nan_max(causal_max, nan_max(c.dk, c.dv));
    bidir_max = nan_max(bidir_max, nan_max(b.dk, b.dv));
    if (l > 0) bidir_min_later = nan_min(bidir_min_later, b.dk);
    per_layer.rows.push_back({std::int64_t{l + 1}, c.dk, c.dv, b.dk, b.dv, bidirectional_threshold(m, l)});
  }
  r.metric("max_abs_diff_causal", causal_max);
  r.metric("max_abs_diff_bidirectional", bidir_max);
  r.metric("min_abs_diff_k_bidirectional_layers_2_up", bidir_min_later);
  r.tables.push_back(std::move(per_layer));
  const ModelConfig& cfg = m.config;
  if (!m.context.weights.empty()) r.notes.push_back(weights_note(cfg, m.context.weights) + "; same weights for both masks");
  else
    r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model {}, {} heads, learned positions, same weights for both "
                                  "masks, {}, seed {}", cfg.n_layer, cfg.d_model, cfg.n_head,
                                  dtype_name(m.context.dtype), m.context.seed));
  r.notes.push_back("The step of the induction that fails: with a bidirectional mask, position j's attention output "
                    "sums over i <= n, including the new token, so h_j of layer 1 already depends on it.");
}

}  // namespace

double bidirectional_threshold(const BidirectionalMeasured& m, int layer) {
  return rounding_bound(m.config, m.context.dtype, std::max(1.0, m.bidirectional[layer].max_kv));
}

BidirectionalMeasured measure_bidirectional(const BidirectionalOptions& o, const RunContext& ctx,
                                            const BidirectionalParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts); });
}

std::vector<Expectation> judge_bidirectional(const BidirectionalMeasured& m) {
  const int layers = m.config.n_layer;
  double causal_max = 0, bidir_first = 0;
  int changed_k = 0, changed_v = 0;
  for (int l = 0; l < layers; ++l) {
    const MaskLayerDiff &c = m.causal[l], &b = m.bidirectional[l];
    causal_max = nan_max(causal_max, nan_max(c.dk, c.dv));
    if (l == 0) {
      bidir_first = nan_max(b.dk, b.dv);
      continue;
    }
    const double threshold = bidirectional_threshold(m, l);
    changed_k += b.dk > threshold ? 1 : 0;
    changed_v += b.dv > threshold ? 1 : 0;
  }
  const std::string why = "a count; threshold per layer 2·n·u·max(1, max|K/V|), the most rounding can move equal values";
  return {
      {.quantity = fmt::format("causal: max |ΔK|, |ΔV| over {} layers, first {} positions", layers, m.options.tokens),
       .source = "004 §1.2", .unit = "", .expected = 0, .tolerance = 0,
       .why = "exactly equal: fixed summation order per position (design.md numerics)", .measured = causal_max},
      {.quantity = "bidirectional: max |ΔK|, |ΔV| in layer 1 (computed before any attention)", .source = "004 §1.2",
       .unit = "", .expected = 0, .tolerance = 0,
       .why = "layer 1's K/V depend on the token and position only; same order: same bits", .measured = bidir_first},
      {.quantity = fmt::format("bidirectional: layers 2..{} whose old K changed beyond rounding", layers),
       .source = "004 §1.2", .unit = "layers", .expected = static_cast<double>(layers - 1), .tolerance = 0, .why = why,
       .measured = static_cast<double>(changed_k), .document = "新 token 会改变所有旧 token 的表示"},
      {.quantity = fmt::format("bidirectional: layers 2..{} whose old V changed beyond rounding", layers),
       .source = "004 §1.2", .unit = "layers", .expected = static_cast<double>(layers - 1), .tolerance = 0, .why = why,
       .measured = static_cast<double>(changed_v)}};
}

const CheckDef<BidirectionalOptions, BidirectionalMeasured>& bidirectional_check() {
  static const CheckDef<BidirectionalOptions, BidirectionalMeasured> def{
      .spec = {.name = "bidirectional",
               .order = 305,
               .source = "004 §1.2",
               .summary = "bidirectional mask: an appended token changes old K/V (no KV cache for BERT)",
               .claim_zh = "双向掩码下追加一个 token 会改变旧的 K/V（所以 BERT 没有 KV Cache）",
               .description =
                   "Compares the K/V of the first n positions for prefixes of n and n + 1 tokens, in a causal\n"
                   "and a bidirectional mini-GPT with the same weights: the causal ones are identical, the\n"
                   "bidirectional ones change in every layer from the second on.",
               .derivation =
                   "Causal induction (004 §1.2): h_j^(0) = wte[x_j] + wpe[j]; if h_i^(l) depends on x_<=i only,\n"
                   "attention gives h_j^(l+1) from k_i, v_i with i <= j, so it depends on x_<=j: old K/V are fixed.\n"
                   "Bidirectional: h_j^(l+1) = sum over all i <= n of A_ji v_i, so it depends on the appended\n"
                   "x_n from the first attention on. Layer 1's K/V = W·LN(h^(0)) do not (no attention yet); every\n"
                   "later layer's do. So a cache of old K/V is stale: BERT recomputes everything.\n"
                   "Source: 004 §1.2.",
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--tokens", &BidirectionalOptions::tokens, Allowed::integers(1, kMaxTokens),
                   "Shorter prefix length n (the other is n + 1)"},
                  {"--layers", &BidirectionalOptions::layers, Allowed::integers(2, kMaxLayers), "Layers (>= 2)"}},
      .measure = [](const BidirectionalOptions& o, const RunContext& ctx) { return measure_bidirectional(o, ctx); },
      .judge = judge_bidirectional,
      .present = present,
      .claim =
          [](const BidirectionalMeasured& m) {
            return fmt::format("With a bidirectional (BERT) mask, appending token {} changes the K and V of positions "
                               "0..{} in every layer from the second on; under the causal mask they stay exactly equal.",
                               m.options.tokens, m.options.tokens - 1);
          }};
  return def;
}

Result run_bidirectional(const BidirectionalOptions& o, const RunContext& ctx, const BidirectionalParts& parts) {
  return run_check(bidirectional_check(), o, ctx, [&parts](const BidirectionalOptions& opts, const RunContext& c) {
    return measure_bidirectional(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(bidirectional_check);

}  // namespace kvlab::checks::bidirectional
