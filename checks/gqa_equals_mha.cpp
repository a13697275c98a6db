// gqa-equals-mha — 004 §2.3 (group 6): GQA with G = h is MHA.
//
// Claim: with as many K/V heads as query heads (G = h), grouped-query attention is multi-head
// attention: every group has one member, query head j reads K/V head ⌊j/1⌋ = j. The course
// measured a maximum output difference of 0. kvlab runs the library's grouped kernel with
// n_kv_head = n_head against a plain MHA written here head by head (its own K/V head, no group
// index), on random q, K, V: a causal prefill of S tokens and one decode query over S keys.
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
#include "support/options.hpp"

namespace kvlab::checks {
namespace {

// Largest sizes accepted: two attentions of tokens² · heads · head_dim multiply-adds
// (256² · 64 · 128 ≈ 0.5 G: about a second).
constexpr int kMaxHeads = 64;
constexpr int kMaxTokens = 256;
constexpr int kMaxHeadDim = 128;

/// Multi-head attention, textbook form: head j attends with its own q_j, k_j, v_j. Query i (at
/// position q_pos0 + i) sees keys 0 .. q_pos0 + i. Scores scaled by 1/sqrt(head_dim).
template <class T>
Mat<T> mha_reference(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int n_head, int head_dim, int q_pos0) {
  const int n_new = static_cast<int>(q.rows());
  const T scale = T(1) / std::sqrt(T(head_dim));
  Mat<T> out = Mat<T>::Zero(n_new, static_cast<Eigen::Index>(n_head) * head_dim);
  std::vector<T> score(static_cast<std::size_t>(k.rows()));
  for (int i = 0; i < n_new; ++i) {
    const int n_visible = q_pos0 + i + 1;
    for (int j = 0; j < n_head; ++j) {
      T max_score = -std::numeric_limits<T>::infinity();
      for (int s = 0; s < n_visible; ++s) {
        T dot = 0;
        for (int c = 0; c < head_dim; ++c) dot += q(i, j * head_dim + c) * k(s, j * head_dim + c);
        score[s] = dot * scale;
        max_score = std::max(max_score, score[s]);
      }
      T denom = 0;
      for (int s = 0; s < n_visible; ++s) {
        score[s] = std::exp(score[s] - max_score);
        denom += score[s];
      }
      for (int s = 0; s < n_visible; ++s) {
        const T w = score[s] / denom;
        for (int c = 0; c < head_dim; ++c) out(i, j * head_dim + c) += w * v(s, j * head_dim + c);
      }
    }
  }
  return out;
}

template <class T>
Mat<T> random_mat(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m.cast<T>();
}

template <class T>
Result run_impl(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaFn<T>& gqa) {
  const int h = o.heads, S = o.tokens, d = o.head_dim;
  Rng rng(ctx.seed);
  const Mat<T> q = random_mat<T>(rng, S, h * d), k = random_mat<T>(rng, S, h * d), v = random_mat<T>(rng, S, h * d);
  Result r;
  Table detail{"GQA (G = h) vs MHA", {"case", "queries T", "keys S", "max |GQA − MHA|", "max |MHA|"}, {}};
  double worst = 0;
  struct Case {
    const char* name;
    int n_query;
  };
  for (const Case c : {Case{"prefill", S}, Case{"decode", 1}}) {
    const int q_pos0 = S - c.n_query;
    const Mat<T> qc = q.bottomRows(c.n_query);
    const Mat<T> got = gqa(qc, k, v, h, h, d, q_pos0);
    const Mat<T> want = mha_reference<T>(qc, k, v, h, d, q_pos0);
    const double diff = static_cast<double>(max_abs(got - want));
    worst = nan_max(worst, diff);
    r.expect({.quantity = fmt::format("max |GQA(G = h = {}) − MHA|, {}: {} queries over {} keys", h, c.name, c.n_query, S),
              .source = "004 §2.3 (group 6)", .unit = "", .expected = 0, .tolerance = 0,
              .why = "the same operations in the same order: the same bits", .measured = diff,
              .stated = Stated{"最大差 0", 0, 0}});
    detail.rows.push_back({std::string(c.name), std::int64_t{c.n_query}, std::int64_t{S}, diff,
                           static_cast<double>(max_abs(want))});
  }
  r.metric("max_abs_diff", worst);
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("h = G = {} heads, head_dim {}, {} tokens, causal, random q, K, V ~ N(0, 1), {}, seed {}",
                                h, d, S, dtype_name(ctx.dtype), ctx.seed));
  r.notes.emplace_back("MHA is written here head by head (head j uses its own K/V head j, no group index); GQA is the "
                    "library kernel that the mini-GPT uses, with n_kv_head = n_head.");
  return r;
}

}  // namespace

Result run_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaEqualsMhaParts& parts) {
  require_range("--heads", o.heads, 1, kMaxHeads);
  require_range("--tokens", o.tokens, 1, kMaxTokens);
  require_range("--head-dim", o.head_dim, 1, kMaxHeadDim);
  Result r = with_dtype(ctx.dtype, [&]<class T>() {
    GqaFn<T> gqa;
    if constexpr (std::is_same_v<T, double>) gqa = parts.gqa_f64;
    else gqa = parts.gqa_f32;
    if (!gqa)
      gqa = [](const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int h, int g, int d, int q_pos0) {
        return grouped_query_attention<T>(q, ConstMatView<T>(k.data(), k.rows(), k.cols()),
                                          ConstMatView<T>(v.data(), v.rows(), v.cols()), h, g, d, q_pos0, true);
      };
    return run_impl<T>(o, ctx, gqa);
  });
  r.check = "gqa-equals-mha";
  r.source = "004 §2.3 (group 6)";
  r.claim = fmt::format("Grouped-query attention with G = h = {} K/V heads is multi-head attention: the outputs are "
                        "identical (max difference exactly 0).", o.heads);
  return r;
}

namespace {

class GqaEqualsMha final : public Check {
 public:
  std::string name() const override { return "gqa-equals-mha"; }
  std::string source() const override { return "004 §2.3 (group 6)"; }
  std::string summary() const override { return "GQA with G = h equals MHA: max difference exactly 0"; }
  std::string description() const override {
    return "Runs the library's grouped-query kernel with as many K/V heads as query heads against\n"
           "a head-by-head multi-head attention on random q, K, V (prefill and one decode query).\n"
           "The course measured 0; kvlab expects exactly 0.";
  }
  std::string derivation() const override {
    return "GQA gives query head j the K/V head ⌊j/(h/G)⌋. With G = h the group size h/G is 1, so\n"
           "head j reads K/V head j: its own, as in MHA. Nothing is shared, nothing is averaged; the\n"
           "same scores, softmax and weighted sum are computed, so the outputs are equal, and with\n"
           "the same summation order bit for bit. G = 1 is MQA, 1 < G < h interpolates.\n"
           "Source: 004 §2.3 (group 6).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--heads", opts_.heads, "h = G, heads")->check(IntRange(1, kMaxHeads));
    sub.add_option("--tokens", opts_.tokens, "S, positions")->check(IntRange(1, kMaxTokens));
    sub.add_option("--head-dim", opts_.head_dim, "Head dimension")->check(IntRange(1, kMaxHeadDim));
  }
  bool uses_dtype() const override { return true; }
  Result run(const RunContext& ctx) override { return run_gqa_equals_mha(opts_, ctx); }

 private:
  GqaEqualsMhaOptions opts_;
};

KVLAB_REGISTER_CHECK(320, GqaEqualsMha);

}  // namespace
}  // namespace kvlab::checks
