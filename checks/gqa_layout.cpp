// gqa-layout — 004 §3.4 (000 §4.2; 003 Q6): repeat_interleave groups heads, repeat tiles them.
//
// Claim: to share G K/V heads among h query heads, repeat_interleave(h/G) gives the grouped layout
// (query head j reads K/V head ⌊j/(h/G)⌋, the GQA paper's and SDPA enable_gqa's); expand + reshape
// gives the same; repeat(h/G) gives a tiled one (j reads j mod G): no error, but a different model.
// kvlab gives K/V head g the constant g + 1 and reads back which one each query head sees (4 query
// heads, 2 K/V heads: grouped [0, 0, 1, 1], tiled [0, 1, 0, 1]); then, on random data, compares
// each writing with the native grouped kernel (grouped_query_attention, no copies).
// Expected: head maps exactly as above (counts, tolerance 0); repeat_interleave and expand + reshape
// equal the native kernel bit for bit (same values, same summation order: tolerance 0); repeat
// differs, beyond a rounding threshold, in exactly the heads whose map differs.
//
//   kvlab gqa-layout [--heads 4] [--kv-heads 2] [--tokens 5] [--head-dim 4]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "attention/kv_layout.hpp"
#include "checks/gqa_layout.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"

namespace kvlab::checks::gqa_layout {
namespace {

// Largest sizes accepted: attention costs tokens² · heads · head_dim multiply-adds per writing
// (64² · 64 · 128 · 4 writings ≈ 0.13 G, well under a second).
constexpr int kMaxHeads = 64;
constexpr int kMaxTokens = 64;
constexpr int kMaxHeadDim = 128;
constexpr double u = 0x1.0p-53;

Mat<double> random_mat(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

/// Attention of q [S, h·d] over K/V: expanded to h heads by `expand` and run as MHA, or, when
/// `expand` is empty, the native grouped kernel over the G heads.
Mat<double> attend(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int h, int G, int d,
                   const KvExpander& expand) {
  const int S = static_cast<int>(q.rows());
  if (!expand)
    return grouped_query_attention<double>(q, ConstMatView<double>(k.data(), S, k.cols()),
                                           ConstMatView<double>(v.data(), S, v.cols()), h, G, d, 0, true);
  const Mat<double> ke = expand(k, G, d, h / G), ve = expand(v, G, d, h / G);
  return grouped_query_attention<double>(q, ConstMatView<double>(ke.data(), S, ke.cols()),
                                         ConstMatView<double>(ve.data(), S, ve.cols()), h, h, d, 0, true);
}

std::string join(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int mismatches(const std::vector<int>& a, const std::vector<int>& b) {
  int n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i] ? 1 : 0;
  return n;
}

}  // namespace

std::vector<int> heads_read(int n_head, int n_kv_head, const KvExpander& expand, std::uint64_t seed) {
  const int d = 2, S = 3;
  Rng rng(seed);
  const Mat<double> q = random_mat(rng, S, n_head * d), k = random_mat(rng, S, n_kv_head * d);
  Mat<double> v(S, n_kv_head * d);
  for (int g = 0; g < n_kv_head; ++g) v.middleCols(g * d, d).setConstant(g + 1.0);  // K/V head g holds g + 1
  const Mat<double> out = attend(q, k, v, n_head, n_kv_head, d, expand);
  std::vector<int> read(static_cast<std::size_t>(n_head));
  for (int j = 0; j < n_head; ++j)  // a convex combination of g + 1: within a few ulps of it
    read[j] = static_cast<int>(std::lround(out(S - 1, j * d))) - 1;
  return read;
}

GqaLayoutMeasured measure_gqa_layout(const GqaLayoutOptions& o, const RunContext& ctx, const GqaLayoutParts& parts) {
  const int h = o.heads, G = o.kv_heads, d = o.head_dim, S = o.tokens;
  const KvExpander interleave = parts.interleave ? parts.interleave : KvExpander(repeat_interleave_kv<double>);
  const KvExpander expand_reshape = parts.expand_reshape ? parts.expand_reshape : KvExpander(expand_reshape_kv<double>);
  const KvExpander tiled = repeat_kv<double>;
  GqaLayoutMeasured m{.options = o, .context = ctx};
  // The maps of 004 §3.4, written out here independently of kv_layout.
  for (int j = 0; j < h; ++j) {
    m.grouped_map.push_back(j / (h / G));
    m.tiled_map.push_back(j % G);
  }
  const std::pair<LayoutWriting, KvExpander> writings[] = {
      {{.name = "repeat_interleave + MHA kernel", .source = "004 §3.4 writing 1"}, interleave},
      {{.name = "expand + reshape + MHA kernel", .source = "004 §3.4 writing 2"}, expand_reshape},
      {{.name = "native grouped kernel (enable_gqa)", .source = "004 §3.4 writing 3; §A.3", .native = true}, {}},
      {{.name = "repeat (tiled) + MHA kernel", .source = "004 §3.4", .tiled = true}, tiled}};
  // Random data: each writing's output against the native kernel's.
  Rng rng(ctx.seed + 1);
  const Mat<double> q = random_mat(rng, S, h * d), k = random_mat(rng, S, G * d), v = random_mat(rng, S, G * d);
  const Mat<double> native = attend(q, k, v, h, G, d, {});
  // Two exact-arithmetic-equal attentions differ by at most 2·n·u·max|v| with n = d + 2S summed
  // terms (dot product, softmax denominator, weighted sum; Higham §3.1, first order).
  m.threshold = 2.0 * (d + 2.0 * S) * u * std::max(1.0, max_abs(v));
  for (const auto& [writing, expand] : writings) {
    LayoutWriting w = writing;
    w.read = heads_read(h, G, expand, ctx.seed);
    const Mat<double> out = attend(q, k, v, h, G, d, expand);
    for (int j = 0; j < h; ++j) {
      const double dj = max_abs(out.middleCols(j * d, d) - native.middleCols(j * d, d));
      w.diff = nan_max(w.diff, dj);
      w.heads_differing += dj > m.threshold ? 1 : 0;
    }
    m.writings.push_back(std::move(w));
  }
  return m;
}

std::vector<Expectation> judge_gqa_layout(const GqaLayoutMeasured& m) {
  const int h = m.options.heads, G = m.options.kv_heads;
  std::vector<Expectation> rows;
  for (const LayoutWriting& w : m.writings)
    rows.push_back({.quantity = fmt::format("query heads not reading their expected K/V head: {}, {} heads / {} K/V "
                                            "heads", w.name, h, G),
                    .source = w.source, .unit = "heads", .expected = 0, .tolerance = 0, .why = "a count: exact",
                    .measured = static_cast<double>(mismatches(w.read, w.tiled ? m.tiled_map : m.grouped_map)),
                    .document = w.tiled ? "j → j mod G" : "j → ⌊j/(h/G)⌋"});
  for (const LayoutWriting& w : m.writings)
    if (!w.native && !w.tiled)  // the native kernel against itself is not a row
      rows.push_back({.quantity = fmt::format("max |{} − native grouped kernel|, random data", w.name),
                      .source = w.source, .unit = "", .expected = 0, .tolerance = 0,
                      .why = "same values, same summation order per head: the same bits", .measured = w.diff});
  for (const LayoutWriting& w : m.writings)
    if (w.tiled)
      rows.push_back({.quantity = "query heads where repeat (tiled) differs from the native kernel beyond rounding",
                      .source = "004 §3.4", .unit = "heads",
                      .expected = static_cast<double>(mismatches(m.grouped_map, m.tiled_map)), .tolerance = 0,
                      .why = fmt::format("a count; rounding threshold 2(d + 2S)u·max|v| = {:.3g}", m.threshold),
                      .measured = static_cast<double>(w.heads_differing), .document = "不报错，但和别人的权重对不上"});
  return rows;
}

namespace {

void present(const GqaLayoutMeasured& m, Result& r) {
  const GqaLayoutOptions& o = m.options;
  Table maps{fmt::format("K/V head g holds the constant g + 1: which one each of the {} query heads reads", o.heads),
             {"writing", "heads read", "expected"}, {}};
  Table diffs{"random q, K, V: max |output − native grouped kernel| per writing",
              {"writing", "max |Δ|", "query heads differing beyond rounding", "rounding threshold"}, {}};
  for (const LayoutWriting& w : m.writings) {
    maps.rows.push_back({w.name, join(w.read), join(w.tiled ? m.tiled_map : m.grouped_map)});
    diffs.rows.push_back({w.name, w.diff, std::int64_t{w.heads_differing}, m.threshold});
  }
  r.metric("heads_misread_grouped", mismatches(m.writings[2].read, m.grouped_map));
  r.metric("heads_misread_interleave", mismatches(m.writings[0].read, m.grouped_map));
  r.metric("max_abs_diff_tiled", m.writings[3].diff);
  r.tables.push_back(std::move(maps));
  r.tables.push_back(std::move(diffs));
  r.notes.push_back(fmt::format("h = {} query heads, G = {} K/V heads, head_dim {}, {} tokens, causal, float64, seed {}",
                                o.heads, o.kv_heads, o.head_dim, o.tokens, m.context.seed));
  r.notes.push_back("The native kernel is kvlab's grouped_query_attention: it reads K/V head ⌊j/(h/G)⌋ in place, as "
                    "SDPA enable_gqa does (004 §A.3), so the cache holds only the G heads.");
}

}  // namespace

const CheckDef<GqaLayoutOptions, GqaLayoutMeasured>& gqa_layout_check() {
  static const CheckDef<GqaLayoutOptions, GqaLayoutMeasured> def{
      .spec = {.name = "gqa-layout",
               .order = 340,
               .source = "004 §3.4; 000 §4.2; 003 Q6",
               .summary = "repeat_interleave = expand+reshape = grouped kernel [0,0,1,1]; repeat tiles [0,1,0,1]",
               .claim_zh = "repeat_interleave = expand+reshape = 分组内核 [0,0,1,1]；repeat 得到 [0,1,0,1]",
               .description =
                   "Gives each K/V head a distinct constant and reads back which one each query head sees\n"
                   "under repeat_interleave, expand + reshape, the native grouped kernel and repeat; then\n"
                   "compares their outputs on random data with the native kernel.",
               .derivation =
                   "With h query heads and G K/V heads, each K/V head serves n_rep = h/G query heads.\n"
                   "repeat_interleave copies head g to positions g·n_rep .. (g+1)·n_rep − 1: head j reads\n"
                   "⌊j/n_rep⌋. expand gives a view [G, n_rep] with stride 0 over n_rep; the row-major reshape\n"
                   "numbers (g, r) as g·n_rep + r, so again j reads ⌊j/n_rep⌋. repeat copies the block of G\n"
                   "heads n_rep times: j reads j mod G. h = 4, G = 2: grouped [0, 0, 1, 1], tiled [0, 1, 0, 1];\n"
                   "heads 1 and 2 swap their K/V, silently. Source: 004 §3.4 (000 §4.2; 003 Q6)."},
      .options = {{"--heads", &GqaLayoutOptions::heads, Allowed::integers(3, kMaxHeads), "h, query heads"},
                  {"--kv-heads", &GqaLayoutOptions::kv_heads, Allowed::integers(2, kMaxHeads - 1),
                   "G, K/V heads (1 < G < h, divides h)"},
                  {"--tokens", &GqaLayoutOptions::tokens, Allowed::integers(1, kMaxTokens),
                   "Positions of the random-data comparison"},
                  {"--head-dim", &GqaLayoutOptions::head_dim, Allowed::integers(1, kMaxHeadDim), "Head dimension"}},
      .constraints =
          [](const GqaLayoutOptions& o) {
            require_range("--kv-heads", o.kv_heads, 2, o.heads - 1);
            if (o.heads % o.kv_heads != 0)
              throw InputError(fmt::format("--kv-heads: must divide --heads = {} (got {})", o.heads, o.kv_heads));
          },
      .measure = [](const GqaLayoutOptions& o, const RunContext& ctx) { return measure_gqa_layout(o, ctx); },
      .judge = judge_gqa_layout,
      .present = present,
      .claim =
          [](const GqaLayoutMeasured& m) {
            return fmt::format("repeat_interleave, expand + reshape and the native grouped kernel all give query "
                               "head j K/V head ⌊j/(h/G)⌋ ({} for h = {}, G = {}); repeat tiles them (j mod G: {}).",
                               join(m.grouped_map), m.options.heads, m.options.kv_heads, join(m.tiled_map));
          }};
  return def;
}

Result run_gqa_layout(const GqaLayoutOptions& o, const RunContext& ctx, const GqaLayoutParts& parts) {
  return run_check(gqa_layout_check(), o, ctx, [&parts](const GqaLayoutOptions& opts, const RunContext& c) {
    return measure_gqa_layout(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(gqa_layout_check);

}  // namespace kvlab::checks::gqa_layout
