// query-not-cached — 004 §1.2: cache K and V, never Q.
//
// Claim: the next token needs only the last position's output; that output is computed from the
// last position's own query and the keys and values of all positions. Earlier queries were used
// once, for their own outputs, and never again; so only K and V are cached.
// kvlab shows it three ways:
//   1. the mini-GPT: decode the last token with a cache holding only K/V (no earlier Q) against a
//      full forward that recomputes every query: the last logits agree (rounding bound);
//   2. attention: replace every earlier query by fresh random values: the last output is the same
//      bits (tolerance 0);
//   3. attention: perturb one position's key (or value), for each position in turn: the last output
//      moves beyond a rounding threshold every time (all S keys and S values matter; a count), and so
//      does perturbing the last query itself.
//
//   kvlab query-not-cached [--tokens 12] [--kv-heads 2] [--dtype f64|f32]
#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "checks/query_not_cached.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::query_not_cached {
namespace {

// Largest --tokens: two full attentions of S² · 8 heads · 8 dims, 2S + 1 of the last row only, and
// two model forwards (S = 256: well under a second). At least 2: with one key, softmax gives it
// weight 1 whatever the key and the query are.
constexpr int kMaxTokens = 256;
constexpr int kHeads = 8, kHeadDim = 8;
constexpr double u = 0x1.0p-53;

Mat<double> random_mat(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

template <class T>
std::pair<double, double> model_last_logits(const QueryNotCachedOptions& o, const RunContext& ctx, ModelConfig& cfg) {
  ModelConfig base;
  base.n_kv_head = o.kv_heads;
  base.block_size = std::max(64, o.tokens);
  const int n = o.tokens;
  const MiniGPT<T> model = check_model<T>(
      base, ctx, "query-not-cached",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"},
       {"block_size", [n](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= n; },
        fmt::format(">= --tokens = {} with learned positions", n)}});
  cfg = model.config();
  const auto ids = random_tokens(ctx.seed + 1, o.tokens, cfg.vocab_size);
  auto full_cache = model.make_cache(CacheKind::prealloc, o.tokens);
  const Mat<T> full = model.forward(ids, 0, *full_cache);  // every query recomputed
  auto cache = model.make_cache(CacheKind::prealloc, o.tokens);
  model.forward(std::span(ids).first(o.tokens - 1), 0, *cache);  // keeps K, V only
  const Mat<T> last = model.forward(std::span(ids).last(1), o.tokens - 1, *cache);
  const double diff = static_cast<double>(max_abs(last.row(0) - full.row(o.tokens - 1)));
  return {diff, std::max(1.0, static_cast<double>(max_abs(full)))};
}

void present(const QueryNotCachedMeasured& m, Result& r) {
  const int S = m.options.tokens;
  Table detail{"what the last position's output depends on", {"input changed", "max |Δ last output|", "threshold"}, {}};
  detail.rows.push_back({fmt::format("{} earlier queries replaced", S - 1), m.earlier_queries_diff, m.threshold});
  detail.rows.push_back({std::string("smallest effect of one key + 1"), m.min_key_effect, m.threshold});
  detail.rows.push_back({std::string("its own query + 1"), m.own_query_diff, m.threshold});
  r.metric("max_abs_diff_model", m.model_diff);
  r.metric("max_abs_diff_earlier_queries", m.earlier_queries_diff);
  r.metric("positions_whose_key_matters", m.keys_matter);
  r.tables.push_back(std::move(detail));
  if (!m.context.weights.empty())
    r.notes.push_back(weights_note(m.config, m.context.weights) + fmt::format(
                          " (--kv-heads applies to the attention rows only); attention rows: random q, K, V ~ "
                          "N(0, 1), 8 heads of 8, {} KV heads, float64; seed {}",
                          m.options.kv_heads, m.context.seed));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 heads, {} KV heads, {}; attention rows: random "
                                  "q, K, V ~ N(0, 1), 8 heads of 8, float64; seed {}", m.options.kv_heads,
                                  dtype_name(m.context.dtype), m.context.seed));
}

}  // namespace

QueryNotCachedMeasured measure_query_not_cached(const QueryNotCachedOptions& o, const RunContext& ctx,
                                                const QueryNotCachedParts& parts) {
  const AttentionFn attention =
      parts.attention ? parts.attention
                      : AttentionFn([](const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int h, int g,
                                       int d, int q_pos0) {
                          return grouped_query_attention<double>(q, ConstMatView<double>(k.data(), k.rows(), k.cols()),
                                                                 ConstMatView<double>(v.data(), v.rows(), v.cols()), h,
                                                                 g, d, q_pos0, true);
                        });
  QueryNotCachedMeasured m{.options = o, .context = ctx};
  // 1. The model: cached K/V only vs recompute everything.
  std::tie(m.model_diff, m.logit_scale) =
      with_dtype(ctx.dtype, [&]<class T>() { return model_last_logits<T>(o, ctx, m.config); });

  // 2., 3. Attention of all S queries; the last row is what the next token needs.
  const int S = o.tokens, G = o.kv_heads, d = kHeadDim;
  Rng rng(ctx.seed + 2);
  const Mat<double> q = random_mat(rng, S, kHeads * d), k = random_mat(rng, S, G * d), v = random_mat(rng, S, G * d);
  const Mat<double> base = attention(q, k, v, kHeads, G, d, 0);
  Mat<double> q_other = random_mat(rng, S, kHeads * d);
  q_other.row(S - 1) = q.row(S - 1);  // earlier queries replaced, the last one kept
  m.earlier_queries_diff = max_abs(attention(q_other, k, v, kHeads, G, d, 0).row(S - 1) - base.row(S - 1));

  // Perturbed inputs must move the last output by more than rounding could: two attentions equal
  // in exact arithmetic differ by at most 2·n·u·max|v|, n = d + 2S summed terms (Higham §3.1).
  m.threshold = 2.0 * (d + 2.0 * S) * u * std::max(1.0, max_abs(v) + 1.0);
  // The perturbations need the last row only: one query at position S − 1 over all S keys.
  const Mat<double> q_n = q.bottomRows(1);
  auto last_only = [&](const Mat<double>& qn, const Mat<double>& kk, const Mat<double>& vv) {
    return max_abs(attention(qn, kk, vv, kHeads, G, d, S - 1).row(0) - base.row(S - 1));
  };
  m.min_key_effect = INFINITY;
  for (int j = 0; j < S; ++j) {
    Mat<double> k2 = k, v2 = v;
    k2.row(j).array() += 1.0;
    v2.row(j).array() += 1.0;
    const double dk = last_only(q_n, k2, v);
    const double dv = last_only(q_n, k, v2);
    m.min_key_effect = nan_min(m.min_key_effect, dk);
    m.keys_matter += dk > m.threshold ? 1 : 0;
    m.values_matter += dv > m.threshold ? 1 : 0;
  }
  Mat<double> q_last = q_n;
  q_last.array() += 1.0;
  m.own_query_diff = last_only(q_last, k, v);
  return m;
}

std::vector<Expectation> judge_query_not_cached(const QueryNotCachedMeasured& m) {
  const int S = m.options.tokens;
  const Dtype dtype = m.context.dtype;
  const std::string why = fmt::format("a count; moved means beyond 2(d + 2S)u·max|v| = {:.3g}", m.threshold);
  return {
      {.quantity = fmt::format("mini-GPT: max |Δ last logits|, K/V cache only vs full recompute, {} tokens", S),
       .source = "004 §1.2", .unit = "", .expected = 0, .tolerance = rounding_bound(m.config, dtype, m.logit_scale),
       .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms ({})", reduction_length(m.config),
                          dtype_name(dtype)),
       .measured = m.model_diff},
      {.quantity = fmt::format("max |Δ last output| when the {} earlier queries are replaced", S - 1),
       .source = "004 §1.2", .unit = "", .expected = 0, .tolerance = 0,
       .why = "the last row reads its own query only: the same bits", .measured = m.earlier_queries_diff,
       .document = "旧位置的 query …以后再也用不上"},
      {.quantity = fmt::format("positions whose key, +1, moves the last output (of {})", S), .source = "004 §1.2",
       .unit = "positions", .expected = static_cast<double>(S), .tolerance = 0, .why = why,
       .measured = static_cast<double>(m.keys_matter), .document = "它要去看的是所有位置的 key 和 value"},
      {.quantity = fmt::format("positions whose value, +1, moves the last output (of {})", S), .source = "004 §1.2",
       .unit = "positions", .expected = static_cast<double>(S), .tolerance = 0, .why = why,
       .measured = static_cast<double>(m.values_matter)},
      {.quantity = "the last query, +1, moves the last output (1 = yes)", .source = "004 §1.2", .unit = "",
       .expected = 1, .tolerance = 0, .why = why, .measured = m.own_query_diff > m.threshold ? 1.0 : 0.0,
       .document = "它的 query 是新算的"}};
}

const CheckDef<QueryNotCachedOptions, QueryNotCachedMeasured>& query_not_cached_check() {
  static const CheckDef<QueryNotCachedOptions, QueryNotCachedMeasured> def{
      .spec = {.name = "query-not-cached",
               .order = 310,
               .source = "004 §1.2",
               .summary = "the last output needs its own q and all K/V; earlier queries change nothing",
               .claim_zh = "最后一个输出只需要它自己的 q 和全部 K/V；更早的 query 不影响结果（所以不缓存 Q）",
               .description =
                   "Decodes the last token from a cache of K/V only and compares with a full recompute;\n"
                   "replaces every earlier query (the last output keeps its bits) and perturbs each key and\n"
                   "value in turn (the last output moves every time).",
               .derivation =
                   "The next token is sampled from the last position's logits, which depend on that\n"
                   "position's attention output o_n = sum over i <= n of softmax_i(q_n·k_i/sqrt(d)) v_i.\n"
                   "It reads q_n (computed fresh from the new token) and k_i, v_i for every i <= n. A query q_i,\n"
                   "i < n, enters only o_i, which was used when token i + 1 was produced and never again.\n"
                   "So K and V of old positions must be kept; their Q can be dropped. Source: 004 §1.2.",
               .claim = "The last position's output depends on its own query and on every position's key and "
                        "value, never on earlier queries: a cache needs K and V, not Q.",
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--tokens", &QueryNotCachedOptions::tokens, Allowed::integers(2, kMaxTokens), "S, positions"},
                  {"--kv-heads", &QueryNotCachedOptions::kv_heads, Allowed::integers(1, kHeads),
                   "K/V heads (divisor of 8)"}},
      .constraints =
          [](const QueryNotCachedOptions& o) {
            if (kHeads % o.kv_heads != 0)
              throw InputError(
                  fmt::format("--kv-heads: must divide the 8 query heads: 1, 2, 4 or 8 (got {})", o.kv_heads));
          },
      .measure = [](const QueryNotCachedOptions& o, const RunContext& ctx) { return measure_query_not_cached(o, ctx); },
      .judge = judge_query_not_cached,
      .present = present};
  return def;
}

Result run_query_not_cached(const QueryNotCachedOptions& o, const RunContext& ctx, const QueryNotCachedParts& parts) {
  return run_check(query_not_cached_check(), o, ctx, [&parts](const QueryNotCachedOptions& opts, const RunContext& c) {
    return measure_query_not_cached(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(query_not_cached_check);

}  // namespace kvlab::checks::query_not_cached
