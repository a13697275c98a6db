// kv-quant — 000 §4.5 (KIVI / KVQuant / FP8); 003 part 4: what a quantized KV cache saves and costs.
//
// Claim: storing each cached element in fewer bits than fp16 shrinks the cache (and the bytes a
// bandwidth-bound decode step moves) by 16/b — "BF16 → FP8/INT8 doubles, INT4 quadruples the
// transfer speed" (003 part 4) — less what the scales and zero points add; the error this costs
// stays within each format's own bound; KIVI's layout (K per channel, V per token) is what keeps
// keys with outlier channels accurate; and a position dequantizes to the same bits whether it was
// written by the prefill or by a decode step.
// kvlab writes seeded random K/V (and keys with a few outlier channels) through its real
// quantized cache (lib/quant: packed int8/int4/int2 codes, fp8 e4m3/e5m2, fp16 scales) and
// measures. Expected:
//   - bytes of the real buffers = the layout's formula (integer counts, tolerance 0); the
//     003 part 4 ratios are fp16 bytes / quantized bytes (ratio of exact integers, tolerance 0):
//     the codes alone against the document's "doubles"/"quadruples" (Stated, ±0.5), and with
//     the scales against their formula (shown beside the document's words, not judged by them:
//     the document does not say which group size it means);
//   - every element within the format's bound: int b-bit asymmetric |x − x̂| ≤ step/2 with
//     step = (max − min)/(2^b − 1) of its group (fp16-rounded scale: one fp16 ulp, 2^-10
//     relative, added); fp8 |x − x̂| ≤ |x|·2^-(m+1) + scale·2^-(bias+m) (m = 3 e4m3, 2 e5m2);
//     plus 8u of the magnitudes for the double arithmetic; measured as error / bound ≤ 1;
//   - fp8 round trip in the normal range: relative error ≤ 2^-(m+1) (1/16, 1/8) + 4u;
//   - attention output error ≤ a bound derived from those element bounds (see derivation());
//   - KIVI's argument, on keys whose outlier channels carry a large offset in every token:
//     per-channel K has the smaller ‖K̂ − K‖ than per-token K in every (int format, G) cell (a
//     count), and per channel the ordinary channels' K̂ is the same bits with or without the
//     outliers (exact);
//   - prefill vs prefill + decode writes: max |Δ| = 0 exactly (same group, same bits).
//
//   kvlab kv-quant [--tokens 128] [--kv-heads 2] [--head-dim 64] [--queries 8] [--group-size 128]
//                  [--outlier-channels 4] [--outlier-scale 20]
#include "checks/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

// Largest sizes accepted: tokens · width ≤ 2^17 elements keeps a run under 2 s of CPU here (about 60
// caches are written and 100 attentions computed).
constexpr int kMaxTokens = 4096, kMaxHeads = 8, kMaxHeadDim = 256, kMaxQueries = 16, kMaxGroup = 4096;
constexpr int kMaxOutliers = 64;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 17;
constexpr double kU = std::numeric_limits<double>::epsilon() / 2;
const double kFp16Ulp = std::ldexp(1.0, -10);   // one fp16 ulp, relative to a normal value
const double kFp16Tiny = std::ldexp(1.0, -24);  // fp16's subnormal spacing

bool is_int(KvQuantFormat f) {
  return f == KvQuantFormat::int8 || f == KvQuantFormat::int4 || f == KvQuantFormat::int2;
}
bool is_fp8(KvQuantFormat f) { return f == KvQuantFormat::fp8_e4m3 || f == KvQuantFormat::fp8_e5m2; }
const MiniFloatSpec& fp8_spec(KvQuantFormat f) {
  return minifloat_spec(f == KvQuantFormat::fp8_e5m2 ? MiniFloat::fp8_e5m2 : MiniFloat::fp8_e4m3);
}

struct Read {
  Mat<double> k, v;
  QuantBytes bytes;
};

// Writes K and V ([T, width]) through a fresh cache: the first `prefill` positions in one append,
// the rest one decode append at a time. Returns what keys()/values() read back and the bytes held.
Read write_through(const KvQuantParts& parts, const QuantConfig& cfg, const Mat<double>& K, const Mat<double>& V,
                   int prefill) {
  const auto T = static_cast<int>(K.rows()), W = static_cast<int>(K.cols());
  auto cache = parts.make_cache ? parts.make_cache(W, T, cfg) : std::make_unique<QuantKVCache<double>>(1, W, T, cfg);
  if (prefill > 0) cache->append(0, K.topRows(prefill), V.topRows(prefill));
  for (int t = prefill; t < T; ++t) cache->append(0, K.middleRows(t, 1), V.middleRows(t, 1));
  return {cache->keys(0), cache->values(0), cache->bytes(0)};
}

// The check's own reading of each format's error bound, per element (independent of the cache's
// stored scales: it recomputes each group's range from the data and the layout).
struct Bounds {
  Mat<double> err;           // |x − x̂| ≤ err
  Mat<double> normal_floor;  // fp8: |x| ≥ floor ⇒ x / scale is a normal fp8 number (else +inf)
};

// Bound for the members x of one group with range [lo, hi] and absmax amax.
struct GroupRule {
  KvQuantFormat f;
  double lo, hi, amax;
  double scale_bound() const {
    if (is_int(f)) {
      const double levels = std::ldexp(1.0, kv_quant_code_bits(f)) - 1;
      const double zero_slack = std::max(std::fabs(lo) * kFp16Ulp, kFp16Tiny);  // zero rounded down
      return (hi - lo + zero_slack) / levels * (1 + kFp16Ulp) * (1 + 4 * kU) + kFp16Tiny;  // scale rounded up
    }
    return amax / fp8_spec(f).max_finite * (1 + kFp16Ulp) * (1 + 4 * kU) + kFp16Tiny;
  }
  double element(double x, double s) const {
    if (is_int(f)) {
      const double levels = std::ldexp(1.0, kv_quant_code_bits(f)) - 1;
      return s / 2 + 8 * kU * (std::fabs(x) + std::fabs(lo) + s * levels);
    }
    const MiniFloatSpec& m = fp8_spec(f);
    return std::fabs(x) * (m.unit_roundoff() + 4 * kU) + s * m.half_subnormal_step();
  }
};

// per_channel: groups of G positions per channel, the last T mod G positions exact (residual);
// otherwise groups of G channels per position.
Bounds error_bounds(const Mat<double>& X, KvQuantFormat f, int G, bool per_channel) {
  const auto T = static_cast<int>(X.rows()), W = static_cast<int>(X.cols());
  const double inf = std::numeric_limits<double>::infinity();
  Bounds b{Mat<double>::Zero(T, W), Mat<double>::Constant(T, W, inf)};
  if (f == KvQuantFormat::fp16) {
    const MiniFloatSpec& h = minifloat_spec(MiniFloat::fp16);
    b.err = X.cwiseAbs() * h.unit_roundoff() + Mat<double>::Constant(T, W, h.half_subnormal_step());
    return b;
  }
  auto fill = [&](auto&& block, auto&& err, auto&& floor) {
    GroupRule g{f, block.minCoeff(), block.maxCoeff(), max_abs(block)};
    const double s = g.scale_bound();
    for (Eigen::Index i = 0; i < block.rows(); ++i)
      for (Eigen::Index j = 0; j < block.cols(); ++j) {
        err(i, j) = g.element(block(i, j), s);
        if (is_fp8(f)) floor(i, j) = s * fp8_spec(f).min_normal();
      }
  };
  if (per_channel) {
    for (int t0 = 0; t0 + G <= T; t0 += G)
      for (int c = 0; c < W; ++c) {
        auto e = b.err.block(t0, c, G, 1);
        auto fl = b.normal_floor.block(t0, c, G, 1);
        fill(X.block(t0, c, G, 1), e, fl);
      }
  } else {
    for (int t = 0; t < T; ++t)
      for (int c0 = 0; c0 < W; c0 += G) {
        const int n = std::min(G, W - c0);
        auto e = b.err.block(t, c0, 1, n);
        auto fl = b.normal_floor.block(t, c0, 1, n);
        fill(X.block(t, c0, 1, n), e, fl);
      }
  }
  return b;
}

// max |a − b| / bound over elements (an element with bound 0 must match exactly, else +inf).
double worst_ratio(const Mat<double>& a, const Mat<double>& ref, const Mat<double>& bound) {
  double worst = 0;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    const double e = std::fabs(a.data()[i] - ref.data()[i]), bd = bound.data()[i];
    worst = nan_max(worst, bd > 0 ? e / bd : (e > 0 ? std::numeric_limits<double>::infinity() : 0.0));
  }
  return worst;
}

Mat<double> attention(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int heads, int d) {
  return grouped_query_attention<double>(q, ConstMatView<double>(k.data(), k.rows(), k.cols()),
                                         ConstMatView<double>(v.data(), v.rows(), v.cols()), heads, heads, d, 0,
                                         false);
}

// Bound on |ô − o| per output element, from element bounds EK, EV (derivation() has the argument):
// a score moves by at most δ_j = Σ_c |q_c| EK_jc / √d, so each softmax weight moves by a factor in
// [e^{−2δ}, e^{2δ}] (δ = max_j δ_j) and Σ_j |p̂_j − p_j| ≤ e^{2δ} − 1; then
// |ô_c − o_c| ≤ max_j EV_jc + (e^{2δ} − 1) · (max_j v_jc − min_j v_jc) / 2, plus the rounding of the
// two double computations, 4 (d + S + 10) u · max_j |v_jc| (dot products of d terms, a softmax
// and a weighted sum over S).
Mat<double> attention_bound(const Mat<double>& q, const Mat<double>& V, const Mat<double>& EK, const Mat<double>& EV,
                            int heads, int d) {
  const auto Q = q.rows(), S = V.rows();
  Mat<double> out(Q, V.cols());
  const Vec<double> half_range = (V.colwise().maxCoeff() - V.colwise().minCoeff()).transpose() / 2;
  const Vec<double> ev = EV.colwise().maxCoeff().transpose();
  const Vec<double> rounding = 4.0 * (d + S + 10) * kU * V.cwiseAbs().colwise().maxCoeff().transpose();
  for (Eigen::Index i = 0; i < Q; ++i)
    for (int h = 0; h < heads; ++h) {
      const auto qa = q.row(i).segment(h * d, d).cwiseAbs();
      const double delta = (EK.middleCols(h * d, d) * qa.transpose()).maxCoeff() / std::sqrt(double(d));
      const double amp = std::expm1(2 * delta);
      for (int c = h * d; c < (h + 1) * d; ++c) out(i, c) = ev(c) + amp * half_range(c) + rounding(c);
    }
  return out;
}

double rel_error(const Mat<double>& a, const Mat<double>& ref) { return (a - ref).norm() / ref.norm(); }

std::string fmt_name(KvQuantFormat f) { return kv_quant_format_name(f); }

}  // namespace

Result run_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts) {
  require_range("--tokens", o.tokens, 16, kMaxTokens);
  require_range("--kv-heads", o.kv_heads, 1, kMaxHeads);
  require_range("--head-dim", o.head_dim, 8, kMaxHeadDim);
  if (o.head_dim % 2 != 0) throw InputError(fmt::format("--head-dim: must be even (got {})", o.head_dim));
  require_range("--queries", o.queries, 1, kMaxQueries);
  require_range("--group-size", o.group_size, 8, std::min(kMaxGroup, o.tokens));
  const int W = o.kv_heads * o.head_dim, T = o.tokens, d = o.head_dim, H = o.kv_heads, G = o.group_size;
  // At most half the channels: KIVI's outliers stand out from the rest of their token.
  require_range("--outlier-channels", o.outlier_channels, 1, std::min(kMaxOutliers, W / 2));
  require_finite_range("--outlier-scale", o.outlier_scale, 8, 1000);
  if (std::int64_t{T} * W > kMaxElements)
    throw InputError(fmt::format("--tokens × --kv-heads × --head-dim: {} × {} × {} = {} elements exceed the budget {}",
                                 T, H, d, std::int64_t{T} * W, kMaxElements));

  // Seeded data: K, V, q ~ N(0, 1); the outlier keys scale a few distinct channels by outlier_scale.
  Rng rng(ctx.seed);
  auto normal = [&](int rows, int cols) {
    Mat<double> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
    return m;
  };
  const Mat<double> k_random = normal(T, W), V = normal(T, W), q = normal(o.queries, W);
  std::vector<int> channels(static_cast<std::size_t>(W));
  for (int c = 0; c < W; ++c) channels[static_cast<std::size_t>(c)] = c;
  for (int i = 0; i < o.outlier_channels; ++i)  // partial Fisher–Yates
    std::swap(channels[static_cast<std::size_t>(i)],
              channels[static_cast<std::size_t>(i + static_cast<int>(rng.uniform() * (W - i)))]);
  channels.resize(static_cast<std::size_t>(o.outlier_channels));
  std::sort(channels.begin(), channels.end());
  // KIVI (Fig. 2): a few key channels have a large magnitude in every token; here a fixed offset
  // ±outlier_scale on top of the N(0, 1) values.
  Mat<double> k_outlier = k_random;
  for (int c : channels) k_outlier.col(c).array() += (rng.uniform() < 0.5 ? -1.0 : 1.0) * o.outlier_scale;

  std::set<int> group_set{G};
  for (int g : {32, 64, 128})
    if (g <= T) group_set.insert(g);
  const std::vector<int> groups(group_set.begin(), group_set.end());
  const auto formats = all_kv_quant_formats();
  Result r;

  // ---- 1. bytes of the real buffers against the layout's formula, 2G positions ----------------
  Table bytes_table{"bytes of the real buffers, K + V of one layer (2G positions each)",
                    {"format", "G", "code bytes", "scale/zero bytes", "total bytes", "formula", "bytes per position",
                     "bits per element", "vs fp16"}, {}};
  std::int64_t bytes_cells = 0, bytes_match = 0;
  std::uint64_t fp16_total_at_G = 0, fp16_codes_at_G = 0;
  struct AtG { std::uint64_t total = 0, codes = 0, formula = 0; };
  std::vector<AtG> at_g(formats.size());
  for (int g : groups)
    for (std::size_t fi = 0; fi < formats.size(); ++fi) {
      const KvQuantFormat f = formats[fi];
      const int n = 2 * g;
      Mat<double> kb(n, W), vb(n, W);
      for (int t = 0; t < n; ++t) {
        kb.row(t) = k_random.row(t % T);
        vb.row(t) = V.row(t % T);
      }
      QuantConfig cfg{f, g, KeyAxis::per_channel, {}};
      const QuantBytes b = write_through(parts, cfg, kb, vb, n).bytes;
      // formula: codes 2 · n · W · b / 8; K params (n / G) groups · W channels · np · 2 B (none for
      // fp16); V params n positions · ceil(W / G) groups · np · 2 B. W is even, so codes are whole bytes.
      const std::uint64_t bits = kv_quant_code_bits(f), np = kv_quant_params_per_group(f);
      const std::uint64_t un = static_cast<std::uint64_t>(n), uw = static_cast<std::uint64_t>(W);
      const std::uint64_t codes = 2 * un * uw * bits / 8;
      const std::uint64_t params = (un / g) * uw * np * 2 + un * ((uw + g - 1) / g) * np * 2;
      const std::uint64_t formula = codes + params;
      ++bytes_cells;
      if (b.total() == formula && b.key_codes + b.value_codes == codes) ++bytes_match;
      const double bits_per_element = 8.0 * double(b.total()) / (2.0 * n * W);
      bytes_table.rows.push_back({fmt_name(f), std::int64_t{g}, std::int64_t(b.key_codes + b.value_codes),
                                  std::int64_t(b.key_params + b.value_params), std::int64_t(b.total()),
                                  std::int64_t(formula), double(b.total()) / n, bits_per_element,
                                  16.0 / bits_per_element});
      if (g == G) {
        at_g[fi] = {b.total(), b.key_codes + b.value_codes, formula};
        if (f == KvQuantFormat::fp16) {
          fp16_total_at_G = b.total();
          fp16_codes_at_G = b.key_codes + b.value_codes;
        }
      }
    }
  const std::string exact = "integer count: exact";
  for (std::size_t fi = 0; fi < formats.size(); ++fi) {
    const KvQuantFormat f = formats[fi];
    const int np = kv_quant_params_per_group(f);
    r.expect({.quantity = fmt::format("bytes of K + V, {}, G = {}, {} positions × {} channels (codes{})", fmt_name(f), G,
                                      2 * G, W, np == 2 ? " + fp16 scale and zero" : np == 1 ? " + fp16 scale" : ""),
              .source = "000 §4.5", .unit = "B", .expected = double(at_g[fi].formula), .tolerance = 0, .why = exact,
              .measured = double(at_g[fi].total)});
    r.metric(fmt::format("bits_per_element_{}", fmt_name(f)), 8.0 * double(at_g[fi].total) / (4.0 * G * W));
  }
  r.expect({.quantity = fmt::format("(format, G) cells whose buffers hold exactly the formula's bytes ({} formats × G in {{{}}})",
                                    formats.size(), fmt::join(groups, ", ")),
            .source = "000 §4.5", .unit = "cells", .expected = double(bytes_cells), .tolerance = 0, .why = exact,
            .measured = double(bytes_match)});

  // 003 part 4: transfer ratio = fp16 bytes / quantized bytes (a bandwidth-bound step moves bytes).
  const std::string ratio_why = "ratio of exact integers < 2^53: one correctly rounded division each side";
  for (auto [f, bits_word] : {std::pair{KvQuantFormat::int8, "8"}, std::pair{KvQuantFormat::int4, "4"}}) {
    const std::size_t fi = static_cast<std::size_t>(std::find(formats.begin(), formats.end(), f) - formats.begin());
    Expectation e{.quantity = fmt::format("transfer ratio fp16 / {} codes alone (16 / {})", fmt_name(f), bits_word),
                  .source = "003 part 4", .unit = "×", .expected = 16.0 / kv_quant_code_bits(f), .tolerance = 0,
                  .why = ratio_why, .measured = double(fp16_codes_at_G) / double(at_g[fi].codes)};
    e.stated = f == KvQuantFormat::int4 ? Stated{"翻四倍 (quadruples)", 4, 0.5} : Stated{"翻倍 (doubles)", 2, 0.5};
    r.expect(e);
  }
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::int8, KvQuantFormat::int4}) {
    const std::size_t fi = static_cast<std::size_t>(std::find(formats.begin(), formats.end(), f) - formats.begin());
    const double ratio = double(fp16_total_at_G) / double(at_g[fi].total);
    Expectation e{.quantity = fmt::format("transfer ratio fp16 / {} with its scales, G = {}", fmt_name(f), G),
                  .source = "003 part 4", .unit = "×", .expected = double(fp16_total_at_G) / double(at_g[fi].formula),
                  .tolerance = 0, .why = ratio_why, .measured = ratio};
    e.document = fmt::format("{} (scales not counted)", f == KvQuantFormat::int4 ? "翻四倍" : "翻倍");
    e.arithmetic = fmt::format("{} B / {} B = {:.4f}: {} bits per element with the fp16 scales of groups of {}",
                               fp16_total_at_G, at_g[fi].formula, double(fp16_total_at_G) / double(at_g[fi].formula),
                               8.0 * double(at_g[fi].formula) / (4.0 * G * W), G);
    r.expect(e);
    r.metric(fmt::format("transfer_ratio_{}", fmt_name(f)), ratio);
  }

  // ---- 2. errors: every element within its bound; attention output within the derived bound ----
  const Mat<double> O = attention(q, k_random, V, H, d);
  const Mat<double> O_out = attention(q, k_outlier, V, H, d);
  struct KeySet { const char* name; const Mat<double>* K; const Mat<double>* O; };
  const KeySet sets[2] = {{"random", &k_random, &O}, {"outlier", &k_outlier, &O_out}};
  std::vector<double> worst_elem(formats.size(), 0), worst_attn(formats.size(), 0), worst_rel(formats.size(), 0);
  Table err_table{"attention output error (relative Frobenius ‖Ô − O‖ / ‖O‖) and the bounds",
                  {"keys", "format", "G", "K+V element error / bound", "fp8 normal-range rel. error", "output rel. error",
                   "output error / bound"}, {}};
  Table kivi{fmt::format("KIVI's argument: K error ‖K̂ − K‖ / ‖K‖ and the output error from K alone (V exact), "
                         "{} outlier channels × {}", o.outlier_channels, o.outlier_scale),
             {"keys", "format", "G", "K error per channel", "K error per token", "per-token / per-channel",
              "output error, K per channel", "output error, K per token"}, {}};
  std::int64_t kivi_cells = 0, kivi_wins = 0;
  std::vector<bool> ordinary(static_cast<std::size_t>(W), true);
  for (int c : channels) ordinary[static_cast<std::size_t>(c)] = false;
  std::map<std::pair<int, std::size_t>, Mat<double>> random_reads;  // (G, format) -> K̂ of the random keys
  double ordinary_diff = 0;
  std::vector<Read> at_G_outlier(formats.size());
  for (const KeySet& ks : sets)
    for (int g : groups)
      for (std::size_t fi = 0; fi < formats.size(); ++fi) {
        const KvQuantFormat f = formats[fi];
        if (f == KvQuantFormat::fp16 && g != groups.front()) continue;  // fp16 has no groups
        const QuantConfig cfg{f, g, KeyAxis::per_channel, {}};
        Read rd = write_through(parts, cfg, *ks.K, V, T);
        const Bounds bk = error_bounds(*ks.K, f, g, true), bv = error_bounds(V, f, g, false);
        const double elem = std::max(worst_ratio(rd.k, *ks.K, bk.err), worst_ratio(rd.v, V, bv.err));
        worst_elem[fi] = nan_max(worst_elem[fi], elem);
        double rel = 0;  // fp8: relative error over elements in the normal range
        if (is_fp8(f)) {
          for (auto [X, Xh, fl] : {std::tuple{ks.K, &rd.k, &bk.normal_floor}, std::tuple{&V, &rd.v, &bv.normal_floor}})
            for (Eigen::Index i = 0; i < X->size(); ++i) {
              const double x = X->data()[i];
              if (std::fabs(x) >= fl->data()[i]) rel = nan_max(rel, std::fabs(Xh->data()[i] - x) / std::fabs(x));
            }
          worst_rel[fi] = nan_max(worst_rel[fi], rel);
        }
        const Mat<double> Oh = attention(q, rd.k, rd.v, H, d);
        const Mat<double> bound = attention_bound(q, V, bk.err, bv.err, H, d);
        const double attn = worst_ratio(Oh, *ks.O, bound);
        worst_attn[fi] = nan_max(worst_attn[fi], attn);
        const double out_rel = rel_error(Oh, *ks.O);
        err_table.rows.push_back({std::string(ks.name), fmt_name(f), f == KvQuantFormat::fp16 ? Cell{std::string("—")} : Cell{std::int64_t{g}},
                                  elem, is_fp8(f) ? Cell{rel} : Cell{std::string("—")}, out_rel, attn});
        if (ks.K == &k_outlier) {
          r.metric(fmt::format("attention_rel_error_{}_g{}_outlier", fmt_name(f), g), out_rel);
          if (g == G) at_G_outlier[fi] = rd;
        }
        // Per channel, an ordinary channel's groups hold the same values with or without the
        // outliers, so its K̂ must be the same bits.
        if (ks.K == &k_random) random_reads[{g, fi}] = rd.k;
        else
          for (int c = 0; c < W; ++c)
            if (ordinary[static_cast<std::size_t>(c)])
              ordinary_diff = nan_max(ordinary_diff, max_abs(rd.k.col(c) - random_reads[{g, fi}].col(c)));
        if (is_int(f)) {  // KIVI: the same keys quantized per token instead, V left exact
          const Read tok = write_through(parts, {f, g, KeyAxis::per_token, {}}, *ks.K, V, T);
          const double k_ch = rel_error(rd.k, *ks.K), k_tok = rel_error(tok.k, *ks.K);
          kivi.rows.push_back({std::string(ks.name), fmt_name(f), std::int64_t{g}, k_ch, k_tok, k_tok / k_ch,
                               rel_error(attention(q, rd.k, V, H, d), *ks.O),
                               rel_error(attention(q, tok.k, V, H, d), *ks.O)});
          if (ks.K == &k_outlier) {
            ++kivi_cells;
            if (k_ch < k_tok) ++kivi_wins;
          }
        }
      }
  if (at_G_outlier.front().k.size() == 0) at_G_outlier.front() = write_through(parts, {KvQuantFormat::fp16, G, KeyAxis::per_channel, {}}, k_outlier, V, T);

  for (std::size_t fi = 0; fi < formats.size(); ++fi) {
    const KvQuantFormat f = formats[fi];
    std::string rule;
    if (is_int(f)) rule = fmt::format("|x − x̂| ≤ step/2, step = (max − min)/{} of its group", (1 << kv_quant_code_bits(f)) - 1);
    else if (is_fp8(f)) rule = fmt::format("|x − x̂| ≤ |x|·2^-{} + scale·2^-{}", fp8_spec(f).man_bits + 1,
                                           fp8_spec(f).bias + fp8_spec(f).man_bits);
    else rule = "|x − x̂| ≤ |x|·2^-11 + 2^-25 (fp16)";
    r.expect({.quantity = fmt::format("max element error / its bound, {}, K and V, G in {{{}}}, random and outlier keys",
                                      fmt_name(f), fmt::join(groups, ", ")),
              .source = "000 §4.5", .unit = "× bound", .expected = 0, .tolerance = 1,
              .why = rule + " (fp16 scale: +1 ulp, 2^-10; double arithmetic: +8u of the magnitudes)",
              .measured = worst_elem[fi]});
  }
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::fp8_e5m2}) {
    const std::size_t fi = static_cast<std::size_t>(std::find(formats.begin(), formats.end(), f) - formats.begin());
    const MiniFloatSpec& m = fp8_spec(f);
    r.expect({.quantity = fmt::format("max relative round-trip error, {}, normal range (|x|/scale ≥ 2^{})", fmt_name(f),
                                      1 - m.bias),
              .source = "000 §4.5 (FP8)", .unit = "", .expected = 0, .tolerance = m.unit_roundoff() + 4 * kU,
              .why = fmt::format("unit roundoff of {} mantissa bits, 2^-{} = 1/{}, + 4u (x / scale and scale · code in double)",
                                 m.man_bits, m.man_bits + 1, 1 << (m.man_bits + 1)),
              .measured = worst_rel[fi]});
    r.metric(fmt::format("fp8_rel_error_{}", fmt_name(f)), worst_rel[fi]);
  }
  for (std::size_t fi = 0; fi < formats.size(); ++fi)
    r.expect({.quantity = fmt::format("max attention output error / derived bound, {}, {} queries × {} keys",
                                      fmt_name(formats[fi]), o.queries, T),
              .source = "000 §4.5", .unit = "× bound", .expected = 0, .tolerance = 1,
              .why = "bound max EV + (e^{2δ} − 1)·range(v)/2, δ = max_j Σ|q_c|·EK_jc/√d, from the element bounds "
                     "(+ 4(d + S + 10)u·max|v| for the two double computations)",
              .measured = worst_attn[fi]});
  r.expect({.quantity = fmt::format("cells (int8/4/2 × G) where per-channel K has the smaller ‖K̂ − K‖, keys with {} outlier channels",
                                    o.outlier_channels),
            .source = "000 §4.5 (KIVI)", .unit = "cells", .expected = double(kivi_cells), .tolerance = 0,
            .why = "a count of ‖K̂ − K‖ comparisons: a per-token group gives all its ≥ 8 channels the step of an outlier "
                   "offset ≥ 8, a per-channel group keeps each channel's own small range",
            .measured = double(kivi_wins)});
  r.expect({.quantity = "max |ΔK̂| on the ordinary channels, keys with vs without the outliers, K per channel, every format and G",
            .source = "000 §4.5 (KIVI)", .unit = "", .expected = 0, .tolerance = 0,
            .why = "exactly equal: per channel, an ordinary channel's groups hold the same values either way",
            .measured = ordinary_diff});
  r.metric("kivi_cells_per_channel_wins", double(kivi_wins));

  // ---- 3. prefill vs decode: the same position, the same bits -----------------------------------
  Table paths{fmt::format("the same positions written by one prefill vs prefill of {} + decode, G = {}", T / 2 + 1, G),
              {"format", "max |ΔK|", "max |ΔV|", "K positions quantized (of T)"}, {}};
  double worst_path = 0;
  for (std::size_t fi = 0; fi < formats.size(); ++fi) {
    const KvQuantFormat f = formats[fi];
    const Read& a = at_G_outlier[fi];
    const Read b = write_through(parts, {f, G, KeyAxis::per_channel, {}}, k_outlier, V, T / 2 + 1);
    const double dk = max_abs(a.k - b.k), dv = max_abs(a.v - b.v);
    worst_path = std::max({worst_path, dk, dv});
    paths.rows.push_back({fmt_name(f), dk, dv, std::int64_t{f == KvQuantFormat::fp16 ? T : T / G * G}});
  }
  r.expect({.quantity = fmt::format("max |Δ| of K and V read back, one prefill vs prefill + decode, all {} formats",
                                    formats.size()),
            .source = "000 §4.5", .unit = "", .expected = 0, .tolerance = 0,
            .why = "exactly equal: a K group is quantized once, when its G-th position arrives, from the same values",
            .measured = worst_path});
  r.metric("max_prefill_decode_diff", worst_path);

  r.tables.push_back(std::move(bytes_table));
  r.tables.push_back(std::move(err_table));
  r.tables.push_back(std::move(kivi));
  r.tables.push_back(std::move(paths));
  r.notes.push_back(fmt::format("data: K, V, q ~ N(0, 1), {} positions × {} K/V heads × {}, {} decode queries (MHA), seed {}; "
                                "outlier keys: channels {} offset by ±{}", T, H, d, o.queries, ctx.seed,
                                fmt::join(channels, ", "), o.outlier_scale));
  r.notes.push_back("layout (KIVI, arXiv 2402.02750): K per channel over groups of G positions, the last T mod G "
                    "positions kept exact until their group fills; V per position over groups of G channels; int "
                    "formats asymmetric (fp16 zero = min rounded down, scale = range/(2^b − 1) rounded up), fp8 "
                    "symmetric absmax with an fp16 scale; codes packed, bytes counted on the buffers.");
  r.notes.push_back("003 part 4's 2× and 4× are the bandwidth-bound limit 16/b; the scales cost 32/G bits per "
                    "element (16/G for fp8), e.g. int4 at G = 128: 4.25 bits, 3.76× — and 5 bits, 3.2×, at G = 32.");
  r.check = "kv-quant";
  r.source = "000 §4.5; 003 part 4";
  r.claim = "Quantizing the KV cache to fp8/int8 halves and to int4 quarters its bytes (the 003 part 4 \"doubles / "
            "quadruples\" less the scales), within each format's error bound; per-channel K (KIVI) beats per-token K "
            "on outlier channels; a position reads back the same whether written at prefill or at decode.";
  return r;
}

namespace {

class KvQuant final : public Check {
 public:
  std::string name() const override { return "kv-quant"; }
  std::string source() const override { return "000 §4.5; 003 part 4"; }
  std::string summary() const override {
    return "quantized KV cache: bytes (fp8/int8 2×, int4 4× less scales), error bounds, KIVI per-channel K";
  }
  std::string description() const override {
    return "Writes seeded K/V through kvlab's quantized cache (fp16, int8/4/2 asymmetric with KIVI's\n"
           "layout, fp8 e4m3/e5m2 with a scale), counts the bytes of its packed buffers, checks every\n"
           "element and the attention output against bounds derived from the formats' steps, shows\n"
           "per-channel K beating per-token K on outlier channels, and prefill = decode writes.";
  }
  std::string derivation() const override {
    return "Bytes: b-bit codes plus fp16 parameters per group of G: int (scale + zero) b + 32/G bits,\n"
           "fp8 (scale) 8 + 16/G; so fp16 / int4 = 16 / (4 + 32/G): 4 as G → ∞, 3.76 at G = 128.\n"
           "Element error: int round((x − z)/s) is within s/2; fp8 within 2^-(m+1) relative (normal).\n"
           "Attention: a key error e moves score j by δ_j ≤ Σ|q_c|e_jc/√d; softmax weights then move by\n"
           "a factor in [e^-2δ, e^2δ], so Σ|p̂ − p| ≤ e^2δ − 1 and, with Σ(p̂ − p) = 0,\n"
           "|ô − o| ≤ max e_V + (e^2δ − 1)·range(v)/2.\n"
           "KIVI: a few key channels carry a large magnitude in every token. Per token, that magnitude\n"
           "sets the step of every channel in the group; per channel, each keeps its own small range.\n"
           "Source: 000 §4.5 (KIVI / KVQuant / FP8); 003 part 4 (量化: 翻倍 / 翻四倍).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--tokens", opts_.tokens, "Positions written to each cache")->check(IntRange(16, kMaxTokens));
    sub.add_option("--kv-heads", opts_.kv_heads, "K/V heads (= query heads)")->check(IntRange(1, kMaxHeads));
    sub.add_option("--head-dim", opts_.head_dim, "Head dimension (even, >= 8)")->check(IntRange(8, kMaxHeadDim));
    sub.add_option("--queries", opts_.queries, "Decode queries over the cache")->check(IntRange(1, kMaxQueries));
    sub.add_option("--group-size", opts_.group_size, "Group size G of the judged rows (<= --tokens)")
        ->check(IntRange(8, kMaxGroup));
    sub.add_option("--outlier-channels", opts_.outlier_channels, "Key channels made outliers (<= half the channels)")
        ->check(IntRange(1, kMaxOutliers));
    sub.add_option("--outlier-scale", opts_.outlier_scale, "Offset ± of the outlier key channels (the others are N(0, 1))")
        ->check(FiniteRange(8, 1000));
  }
  Result run(const RunContext& ctx) override { return run_kv_quant(opts_, ctx); }

 private:
  KvQuantOptions opts_;
};

KVLAB_REGISTER_CHECK(170, KvQuant);

}  // namespace
}  // namespace kvlab::checks
