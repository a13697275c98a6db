// gqa-equals-mha — 004 §2.3 (group 6): GQA with G = h is MHA.
//
// Claim: with as many K/V heads as query heads (G = h), grouped-query attention is multi-head
// attention: every group has one member, query head j reads K/V head ⌊j/1⌋ = j. The course
// measured a maximum output difference of 0. kvlab runs the library's grouped kernel with
// n_kv_head = n_head against the plain MHA of lib/reference/attention.hpp, head by head (its own
// K/V head, no group index), on random q, K, V: a causal prefill of S tokens and one decode query over S keys.
// Expected: exactly 0 (tolerance 0): both compute the same dot products, softmax and weighted
// sums in the same order, so equal means the same bits.
//
//   kvlab gqa-equals-mha [--heads 8] [--tokens 12] [--head-dim 8] [--dtype f64|f32]
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "checks/gqa_equals_mha.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "support/model_setup.hpp"
#include "reference/attention.hpp"

namespace kvlab::checks::gqa_equals_mha {
namespace {

// Largest sizes accepted: two attentions of tokens² · heads · head_dim multiply-adds
// (256² · 64 · 128 ≈ 0.5 G: about a second).
constexpr int kMaxHeads = 64;
constexpr int kMaxTokens = 256;
constexpr int kMaxHeadDim = 128;

template <class T>
Mat<T> random_mat(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m.cast<T>();
}

template <class T>
GqaEqualsMhaMeasured measure_impl(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaFn<T>& gqa) {
  const int h = o.heads, S = o.tokens, d = o.head_dim;
  Rng rng(ctx.seed);
  const Mat<T> q = random_mat<T>(rng, S, h * d), k = random_mat<T>(rng, S, h * d), v = random_mat<T>(rng, S, h * d);
  GqaEqualsMhaMeasured m{.options = o, .context = ctx};
  for (const auto& [name, n_query] : {std::pair{"prefill", S}, {"decode", 1}}) {
    const int q_pos0 = S - n_query;
    const Mat<T> qc = q.bottomRows(n_query);
    const Mat<T> want = reference::multi_head_attention<T>(qc, k, v, h, d, q_pos0);
    m.cases.push_back({name, n_query, static_cast<double>(max_abs(gqa(qc, k, v, h, h, d, q_pos0) - want)),
                       static_cast<double>(max_abs(want))});
  }
  return m;
}

void present(const GqaEqualsMhaMeasured& m, Result& r) {
  const int S = m.options.tokens;
  Table detail{"GQA (G = h) vs MHA", {"case", "queries T", "keys S", "max |GQA − MHA|", "max |MHA|"}, {}};
  double worst = 0;
  for (const GqaMhaCase& c : m.cases) {
    worst = nan_max(worst, c.diff);
    detail.rows.push_back({c.name, std::int64_t{c.queries}, std::int64_t{S}, c.diff, c.max_mha});
  }
  r.metric("max_abs_diff", worst);
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("h = G = {} heads, head_dim {}, {} tokens, causal, random q, K, V ~ N(0, 1), {}, seed {}",
                                m.options.heads, m.options.head_dim, S, dtype_name(m.context.dtype), m.context.seed));
  r.notes.emplace_back("MHA is the plain reference, head by head (head j uses its own K/V head j, no group index); GQA "
                       "is the library kernel that the mini-GPT uses, with n_kv_head = n_head.");
}

}  // namespace

GqaEqualsMhaMeasured measure_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx,
                                            const GqaEqualsMhaParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() {
    GqaFn<T> gqa;
    if constexpr (std::is_same_v<T, double>) gqa = parts.gqa_f64;
    else gqa = parts.gqa_f32;
    if (!gqa)
      gqa = [](const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int h, int g, int d, int q_pos0) {
        return grouped_query_attention<T>(q, ConstMatView<T>(k.data(), k.rows(), k.cols()),
                                          ConstMatView<T>(v.data(), v.rows(), v.cols()), h, g, d, q_pos0, true);
      };
    return measure_impl<T>(o, ctx, gqa);
  });
}

std::vector<Expectation> judge_gqa_equals_mha(const GqaEqualsMhaMeasured& m) {
  std::vector<Expectation> rows;
  for (const GqaMhaCase& c : m.cases)
    rows.push_back({.quantity = fmt::format("max |GQA(G = h = {}) − MHA|, {}: {} queries over {} keys", m.options.heads,
                                            c.name, c.queries, m.options.tokens),
                    .source = "004 §2.3 (group 6)", .unit = "", .expected = 0, .tolerance = 0,
                    .why = "the same operations in the same order: the same bits", .measured = c.diff,
                    .stated = Stated{"最大差 0", 0, 0}});
  return rows;
}

const CheckDef<GqaEqualsMhaOptions, GqaEqualsMhaMeasured>& gqa_equals_mha_check() {
  static const CheckDef<GqaEqualsMhaOptions, GqaEqualsMhaMeasured> def{
      .spec = {.name = "gqa-equals-mha",
               .order = 320,
               .source = "004 §2.3 (group 6)",
               .summary = "GQA with G = h equals MHA: max difference exactly 0",
               .claim_zh = "G = h 时 GQA 就是 MHA：最大差恰为 0",
               .description =
                   "Runs the library's grouped-query kernel with as many K/V heads as query heads against\n"
                   "a head-by-head multi-head attention on random q, K, V (prefill and one decode query).\n"
                   "The course measured 0; kvlab expects exactly 0.",
               .derivation =
                   "GQA gives query head j the K/V head ⌊j/(h/G)⌋. With G = h the group size h/G is 1, so\n"
                   "head j reads K/V head j: its own, as in MHA. Nothing is shared, nothing is averaged; the\n"
                   "same scores, softmax and weighted sum are computed, so the outputs are equal, and with\n"
                   "the same summation order bit for bit. G = 1 is MQA, 1 < G < h interpolates.\n"
                   "Source: 004 §2.3 (group 6).",
               .traits = {.dtype = true}},
      .options = {{"--heads", &GqaEqualsMhaOptions::heads, Allowed::integers(1, kMaxHeads), "h = G, heads"},
                  {"--tokens", &GqaEqualsMhaOptions::tokens, Allowed::integers(1, kMaxTokens), "S, positions"},
                  {"--head-dim", &GqaEqualsMhaOptions::head_dim, Allowed::integers(1, kMaxHeadDim), "Head dimension"}},
      .measure = [](const GqaEqualsMhaOptions& o, const RunContext& ctx) { return measure_gqa_equals_mha(o, ctx); },
      .judge = judge_gqa_equals_mha,
      .present = present,
      .claim =
          [](const GqaEqualsMhaMeasured& m) {
            return fmt::format("Grouped-query attention with G = h = {} K/V heads is multi-head attention: the "
                               "outputs are identical (max difference exactly 0).",
                               m.options.heads);
          }};
  return def;
}

Result run_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaEqualsMhaParts& parts) {
  return run_check(gqa_equals_mha_check(), o, ctx, [&parts](const GqaEqualsMhaOptions& opts, const RunContext& c) {
    return measure_gqa_equals_mha(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(gqa_equals_mha_check);

}  // namespace kvlab::checks::gqa_equals_mha
