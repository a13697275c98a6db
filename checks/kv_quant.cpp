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
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"

namespace kvlab::checks::kv_quant {
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

/// Seeded data: K, V, q ~ N(0, 1); the outlier keys offset a few distinct channels.
struct KvData {
  Mat<double> k_random, V, q, k_outlier;
  std::vector<int> channels;
};

KvData make_data(const KvQuantOptions& o, std::uint64_t seed) {
  const int W = o.kv_heads * o.head_dim, T = o.tokens;
  Rng rng(seed);
  auto normal = [&](int rows, int cols) {
    Mat<double> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
    return m;
  };
  KvData x;
  x.k_random = normal(T, W);
  x.V = normal(T, W);
  x.q = normal(o.queries, W);
  x.channels.resize(static_cast<std::size_t>(W));
  for (int c = 0; c < W; ++c) x.channels[static_cast<std::size_t>(c)] = c;
  for (int i = 0; i < o.outlier_channels; ++i)  // partial Fisher–Yates
    std::swap(x.channels[static_cast<std::size_t>(i)],
              x.channels[static_cast<std::size_t>(i + static_cast<int>(rng.uniform() * (W - i)))]);
  x.channels.resize(static_cast<std::size_t>(o.outlier_channels));
  std::sort(x.channels.begin(), x.channels.end());
  // KIVI (Fig. 2): a few key channels have a large magnitude in every token; here a fixed offset
  // ±outlier_scale on top of the N(0, 1) values.
  x.k_outlier = x.k_random;
  for (int c : x.channels) x.k_outlier.col(c).array() += (rng.uniform() < 0.5 ? -1.0 : 1.0) * o.outlier_scale;
  return x;
}

/// Section 1: the real buffers of 2G positions for every (G, format).
void measure_bytes(KvQuantMeasured& m, const KvQuantParts& parts, const KvData& x) {
  const int T = m.options.tokens, W = static_cast<int>(x.V.cols());
  for (int g : m.groups)
    for (const KvQuantFormat f : m.formats) {
      const int n = 2 * g;
      Mat<double> kb(n, W), vb(n, W);
      for (int t = 0; t < n; ++t) {
        kb.row(t) = x.k_random.row(t % T);
        vb.row(t) = x.V.row(t % T);
      }
      m.bytes.push_back({f, g, write_through(parts, {f, g, KeyAxis::per_channel, {}}, kb, vb, n).bytes});
    }
}

/// One (keys, G, format) cell of section 2, and KIVI's per-token comparison for the int formats.
KvErrorCell error_cell(KvQuantMeasured& m, const KvQuantParts& parts, const KvData& x, bool outlier, int g,
                       KvQuantFormat f, const Mat<double>& O, Read& rd) {
  const KvQuantOptions& o = m.options;
  const Mat<double>& K = outlier ? x.k_outlier : x.k_random;
  const int H = o.kv_heads, d = o.head_dim;
  rd = write_through(parts, {f, g, KeyAxis::per_channel, {}}, K, x.V, o.tokens);
  const Bounds bk = error_bounds(K, f, g, true), bv = error_bounds(x.V, f, g, false);
  KvErrorCell cell{outlier, f, g, std::max(worst_ratio(rd.k, K, bk.err), worst_ratio(rd.v, x.V, bv.err))};
  if (is_fp8(f))  // relative error over the elements in the normal range
    for (auto [X, Xh, fl] : {std::tuple{&K, &rd.k, &bk.normal_floor}, std::tuple{&x.V, &rd.v, &bv.normal_floor}})
      for (Eigen::Index i = 0; i < X->size(); ++i) {
        const double v = X->data()[i];
        if (std::fabs(v) >= fl->data()[i]) cell.fp8_relative = nan_max(cell.fp8_relative, std::fabs(Xh->data()[i] - v) / std::fabs(v));
      }
  const Mat<double> Oh = attention(x.q, rd.k, rd.v, H, d);
  cell.attention = worst_ratio(Oh, O, attention_bound(x.q, x.V, bk.err, bv.err, H, d));
  cell.output_relative = rel_error(Oh, O);
  if (is_int(f)) {  // KIVI: the same keys quantized per token instead, V left exact
    const Read tok = write_through(parts, {f, g, KeyAxis::per_token, {}}, K, x.V, o.tokens);
    m.kivi.push_back({outlier, f, g, rel_error(rd.k, K), rel_error(tok.k, K), rel_error(attention(x.q, rd.k, x.V, H, d), O),
                      rel_error(attention(x.q, tok.k, x.V, H, d), O)});
  }
  return cell;
}

/// Section 2: every (keys, G, format); returns the outlier keys' reads at G, for section 3.
std::vector<Read> measure_errors(KvQuantMeasured& m, const KvQuantParts& parts, const KvData& x) {
  const KvQuantOptions& o = m.options;
  const int W = static_cast<int>(x.V.cols()), G = o.group_size;
  const Mat<double> O = attention(x.q, x.k_random, x.V, o.kv_heads, o.head_dim);
  const Mat<double> O_out = attention(x.q, x.k_outlier, x.V, o.kv_heads, o.head_dim);
  std::vector<bool> ordinary(static_cast<std::size_t>(W), true);
  for (int c : m.channels) ordinary[static_cast<std::size_t>(c)] = false;
  std::map<std::pair<int, std::size_t>, Mat<double>> random_reads;  // (G, format) -> K̂ of the random keys
  std::vector<Read> at_G_outlier(m.formats.size());
  for (const bool outlier : {false, true})
    for (int g : m.groups)
      for (std::size_t fi = 0; fi < m.formats.size(); ++fi) {
        const KvQuantFormat f = m.formats[fi];
        if (f == KvQuantFormat::fp16 && g != m.groups.front()) continue;  // fp16 has no groups
        Read rd;
        m.errors.push_back(error_cell(m, parts, x, outlier, g, f, outlier ? O_out : O, rd));
        // Per channel, an ordinary channel's groups hold the same values with or without the
        // outliers, so its K̂ must be the same bits.
        if (!outlier) {
          random_reads[{g, fi}] = rd.k;
          continue;
        }
        if (g == G) at_G_outlier[fi] = rd;
        for (int c = 0; c < W; ++c)
          if (ordinary[static_cast<std::size_t>(c)])
            m.ordinary_diff = nan_max(m.ordinary_diff, max_abs(rd.k.col(c) - random_reads[{g, fi}].col(c)));
      }
  if (at_G_outlier.front().k.size() == 0)
    at_G_outlier.front() = write_through(parts, {KvQuantFormat::fp16, G, KeyAxis::per_channel, {}}, x.k_outlier, x.V,
                                         o.tokens);
  return at_G_outlier;
}

/// The layout's bytes for 2G positions of K and V: codes 2·n·W·b/8; K params (n / G) groups · W
/// channels · np · 2 B (none for fp16); V params n positions · ceil(W / G) groups · np · 2 B. W is
/// even, so codes are whole bytes.
struct LayoutBytes {
  std::uint64_t codes = 0, total = 0;
};

LayoutBytes layout_bytes(KvQuantFormat f, int g, int width) {
  const std::uint64_t bits = kv_quant_code_bits(f), np = kv_quant_params_per_group(f);
  const std::uint64_t un = static_cast<std::uint64_t>(2 * g), uw = static_cast<std::uint64_t>(width);
  const std::uint64_t codes = 2 * un * uw * bits / 8;
  return {codes, codes + (un / g) * uw * np * 2 + un * ((uw + g - 1) / g) * np * 2};
}

int width(const KvQuantMeasured& m) { return m.options.kv_heads * m.options.head_dim; }

/// The bytes of format `f` at the judged G.
const QuantBytes& at_group(const KvQuantMeasured& m, KvQuantFormat f) {
  for (const KvBytesCell& c : m.bytes)
    if (c.format == f && c.group == m.options.group_size) return c.bytes;
  throw std::logic_error(fmt::format("kv-quant: no {} cache measured at G = {}", fmt_name(f), m.options.group_size));
}

std::uint64_t codes_of(const QuantBytes& b) { return b.key_codes + b.value_codes; }

const std::string kExact = "integer count: exact";
const std::string kRatioWhy = "ratio of exact integers < 2^53: one correctly rounded division each side";

void bytes_rows(const KvQuantMeasured& m, std::vector<Expectation>& rows) {
  const int G = m.options.group_size, W = width(m);
  for (const KvQuantFormat f : m.formats) {
    const int np = kv_quant_params_per_group(f);
    rows.push_back({.quantity = fmt::format("bytes of K + V, {}, G = {}, {} positions × {} channels (codes{})",
                                            fmt_name(f), G, 2 * G, W,
                                            np == 2 ? " + fp16 scale and zero" : np == 1 ? " + fp16 scale" : ""),
                    .source = "000 §4.5", .unit = "B", .expected = double(layout_bytes(f, G, W).total), .tolerance = 0,
                    .why = kExact, .measured = double(at_group(m, f).total())});
  }
  std::int64_t match = 0;
  for (const KvBytesCell& c : m.bytes) {
    const LayoutBytes want = layout_bytes(c.format, c.group, W);
    if (c.bytes.total() == want.total && codes_of(c.bytes) == want.codes) ++match;
  }
  rows.push_back({.quantity = fmt::format("(format, G) cells whose buffers hold exactly the formula's bytes ({} formats "
                                          "× G in {{{}}})", m.formats.size(), fmt::join(m.groups, ", ")),
                  .source = "000 §4.5", .unit = "cells", .expected = double(m.bytes.size()), .tolerance = 0,
                  .why = kExact, .measured = double(match)});
}

/// 003 part 4: transfer ratio = fp16 bytes / quantized bytes (a bandwidth-bound step moves bytes).
void ratio_rows(const KvQuantMeasured& m, std::vector<Expectation>& rows) {
  const int G = m.options.group_size, W = width(m);
  const QuantBytes& fp16 = at_group(m, KvQuantFormat::fp16);
  for (auto [f, bits_word] : {std::pair{KvQuantFormat::int8, "8"}, std::pair{KvQuantFormat::int4, "4"}}) {
    Expectation e{.quantity = fmt::format("transfer ratio fp16 / {} codes alone (16 / {})", fmt_name(f), bits_word),
                  .source = "003 part 4", .unit = "×", .expected = 16.0 / kv_quant_code_bits(f), .tolerance = 0,
                  .why = kRatioWhy, .measured = double(codes_of(fp16)) / double(codes_of(at_group(m, f)))};
    e.stated = f == KvQuantFormat::int4 ? Stated{"翻四倍 (quadruples)", 4, 0.5} : Stated{"翻倍 (doubles)", 2, 0.5};
    rows.push_back(std::move(e));
  }
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::int8, KvQuantFormat::int4}) {
    const std::uint64_t formula = layout_bytes(f, G, W).total;
    Expectation e{.quantity = fmt::format("transfer ratio fp16 / {} with its scales, G = {}", fmt_name(f), G),
                  .source = "003 part 4", .unit = "×", .expected = double(fp16.total()) / double(formula),
                  .tolerance = 0, .why = kRatioWhy, .measured = double(fp16.total()) / double(at_group(m, f).total())};
    e.document = fmt::format("{} (scales not counted)", f == KvQuantFormat::int4 ? "翻四倍" : "翻倍");
    e.arithmetic = fmt::format("{} B / {} B = {:.4f}: {} bits per element with the fp16 scales of groups of {}",
                               fp16.total(), formula, double(fp16.total()) / double(formula),
                               8.0 * double(formula) / (4.0 * G * W), G);
    rows.push_back(std::move(e));
  }
}

/// The worst of `field` over the error cells of format `f` (NaN in, NaN out).
double worst_of(const KvQuantMeasured& m, KvQuantFormat f, double KvErrorCell::*field) {
  double worst = 0;
  for (const KvErrorCell& c : m.errors)
    if (c.format == f) worst = nan_max(worst, c.*field);
  return worst;
}

std::string element_rule(KvQuantFormat f) {
  if (is_int(f))
    return fmt::format("|x − x̂| ≤ step/2, step = (max − min)/{} of its group", (1 << kv_quant_code_bits(f)) - 1);
  if (is_fp8(f))
    return fmt::format("|x − x̂| ≤ |x|·2^-{} + scale·2^-{}", fp8_spec(f).man_bits + 1,
                       fp8_spec(f).bias + fp8_spec(f).man_bits);
  return "|x − x̂| ≤ |x|·2^-11 + 2^-25 (fp16)";
}

void error_rows(const KvQuantMeasured& m, std::vector<Expectation>& rows) {
  for (const KvQuantFormat f : m.formats)
    rows.push_back({.quantity = fmt::format("max element error / its bound, {}, K and V, G in {{{}}}, random and "
                                            "outlier keys", fmt_name(f), fmt::join(m.groups, ", ")),
                    .source = "000 §4.5", .unit = "× bound", .expected = 0, .tolerance = 1,
                    .why = element_rule(f) + " (fp16 scale: +1 ulp, 2^-10; double arithmetic: +8u of the magnitudes)",
                    .measured = worst_of(m, f, &KvErrorCell::element)});
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::fp8_e5m2}) {
    const MiniFloatSpec& s = fp8_spec(f);
    rows.push_back({.quantity = fmt::format("max relative round-trip error, {}, normal range (|x|/scale ≥ 2^{})",
                                            fmt_name(f), 1 - s.bias),
                    .source = "000 §4.5 (FP8)", .unit = "", .expected = 0, .tolerance = s.unit_roundoff() + 4 * kU,
                    .why = fmt::format("unit roundoff of {} mantissa bits, 2^-{} = 1/{}, + 4u (x / scale and scale · "
                                       "code in double)", s.man_bits, s.man_bits + 1, 1 << (s.man_bits + 1)),
                    .measured = worst_of(m, f, &KvErrorCell::fp8_relative)});
  }
  for (const KvQuantFormat f : m.formats)
    rows.push_back({.quantity = fmt::format("max attention output error / derived bound, {}, {} queries × {} keys",
                                            fmt_name(f), m.options.queries, m.options.tokens),
                    .source = "000 §4.5", .unit = "× bound", .expected = 0, .tolerance = 1,
                    .why = "bound max EV + (e^{2δ} − 1)·range(v)/2, δ = max_j Σ|q_c|·EK_jc/√d, from the element "
                           "bounds (+ 4(d + S + 10)u·max|v| for the two double computations)",
                    .measured = worst_of(m, f, &KvErrorCell::attention)});
}

std::pair<std::int64_t, std::int64_t> kivi_wins(const KvQuantMeasured& m) {
  std::int64_t cells = 0, wins = 0;
  for (const KiviCell& c : m.kivi)
    if (c.outlier_keys) ++cells, wins += c.k_per_channel < c.k_per_token ? 1 : 0;
  return {cells, wins};
}

double worst_path(const KvQuantMeasured& m) {
  double worst = 0;
  for (const KvPathCell& p : m.paths) worst = std::max({worst, p.dk, p.dv});
  return worst;
}

void kivi_and_path_rows(const KvQuantMeasured& m, std::vector<Expectation>& rows) {
  const auto [cells, wins] = kivi_wins(m);
  rows.push_back({.quantity = fmt::format("cells (int8/4/2 × G) where per-channel K has the smaller ‖K̂ − K‖, keys with "
                                          "{} outlier channels", m.options.outlier_channels),
                  .source = "000 §4.5 (KIVI)", .unit = "cells", .expected = double(cells), .tolerance = 0,
                  .why = "a count of ‖K̂ − K‖ comparisons: a per-token group gives all its ≥ 8 channels the step of an "
                         "outlier offset ≥ 8, a per-channel group keeps each channel's own small range",
                  .measured = double(wins)});
  rows.push_back({.quantity = "max |ΔK̂| on the ordinary channels, keys with vs without the outliers, K per channel, "
                              "every format and G",
                  .source = "000 §4.5 (KIVI)", .unit = "", .expected = 0, .tolerance = 0,
                  .why = "exactly equal: per channel, an ordinary channel's groups hold the same values either way",
                  .measured = m.ordinary_diff});
  rows.push_back({.quantity = fmt::format("max |Δ| of K and V read back, one prefill vs prefill + decode, all {} formats",
                                          m.formats.size()),
                  .source = "000 §4.5", .unit = "", .expected = 0, .tolerance = 0,
                  .why = "exactly equal: a K group is quantized once, when its G-th position arrives, from the same "
                         "values",
                  .measured = worst_path(m)});
}

Table bytes_table(const KvQuantMeasured& m) {
  Table t{"bytes of the real buffers, K + V of one layer (2G positions each)",
          {"format", "G", "code bytes", "scale/zero bytes", "total bytes", "formula", "bytes per position",
           "bits per element", "vs fp16"}, {}};
  const int W = width(m);
  for (const KvBytesCell& c : m.bytes) {
    const QuantBytes& b = c.bytes;
    const int n = 2 * c.group;
    const double bits_per_element = 8.0 * double(b.total()) / (2.0 * n * W);
    t.rows.push_back({fmt_name(c.format), std::int64_t{c.group}, std::int64_t(codes_of(b)),
                      std::int64_t(b.key_params + b.value_params), std::int64_t(b.total()),
                      std::int64_t(layout_bytes(c.format, c.group, W).total), double(b.total()) / n, bits_per_element,
                      16.0 / bits_per_element});
  }
  return t;
}

Table error_table(const KvQuantMeasured& m) {
  Table t{"attention output error (relative Frobenius ‖Ô − O‖ / ‖O‖) and the bounds",
          {"keys", "format", "G", "K+V element error / bound", "fp8 normal-range rel. error", "output rel. error",
           "output error / bound"}, {}};
  for (const KvErrorCell& c : m.errors)
    t.rows.push_back({std::string(c.outlier_keys ? "outlier" : "random"), fmt_name(c.format),
                      c.format == KvQuantFormat::fp16 ? Cell{std::string("—")} : Cell{std::int64_t{c.group}}, c.element,
                      is_fp8(c.format) ? Cell{c.fp8_relative} : Cell{std::string("—")}, c.output_relative, c.attention});
  return t;
}

Table kivi_table(const KvQuantMeasured& m) {
  Table t{fmt::format("KIVI's argument: K error ‖K̂ − K‖ / ‖K‖ and the output error from K alone (V exact), "
                      "{} outlier channels × {}", m.options.outlier_channels, m.options.outlier_scale),
          {"keys", "format", "G", "K error per channel", "K error per token", "per-token / per-channel",
           "output error, K per channel", "output error, K per token"}, {}};
  for (const KiviCell& c : m.kivi)
    t.rows.push_back({std::string(c.outlier_keys ? "outlier" : "random"), fmt_name(c.format), std::int64_t{c.group},
                      c.k_per_channel, c.k_per_token, c.k_per_token / c.k_per_channel, c.out_per_channel,
                      c.out_per_token});
  return t;
}

void present_metrics(const KvQuantMeasured& m, Result& r) {
  const int G = m.options.group_size, W = width(m);
  for (const KvQuantFormat f : m.formats)
    r.metric(fmt::format("bits_per_element_{}", fmt_name(f)), 8.0 * double(at_group(m, f).total()) / (4.0 * G * W));
  const QuantBytes& fp16 = at_group(m, KvQuantFormat::fp16);
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::int8, KvQuantFormat::int4})
    r.metric(fmt::format("transfer_ratio_{}", fmt_name(f)), double(fp16.total()) / double(at_group(m, f).total()));
  for (const KvErrorCell& c : m.errors)
    if (c.outlier_keys)
      r.metric(fmt::format("attention_rel_error_{}_g{}_outlier", fmt_name(c.format), c.group), c.output_relative);
  for (KvQuantFormat f : {KvQuantFormat::fp8_e4m3, KvQuantFormat::fp8_e5m2})
    r.metric(fmt::format("fp8_rel_error_{}", fmt_name(f)), worst_of(m, f, &KvErrorCell::fp8_relative));
  r.metric("kivi_cells_per_channel_wins", double(kivi_wins(m).second));
  r.metric("max_prefill_decode_diff", worst_path(m));
}

void present(const KvQuantMeasured& m, Result& r) {
  const KvQuantOptions& o = m.options;
  const int T = o.tokens, G = o.group_size;
  present_metrics(m, r);
  Table paths{fmt::format("the same positions written by one prefill vs prefill of {} + decode, G = {}", T / 2 + 1, G),
              {"format", "max |ΔK|", "max |ΔV|", "K positions quantized (of T)"}, {}};
  for (const KvPathCell& p : m.paths)
    paths.rows.push_back({fmt_name(p.format), p.dk, p.dv, std::int64_t{p.format == KvQuantFormat::fp16 ? T : T / G * G}});
  r.tables.push_back(bytes_table(m));
  r.tables.push_back(error_table(m));
  r.tables.push_back(kivi_table(m));
  r.tables.push_back(std::move(paths));
  r.notes.push_back(fmt::format("data: K, V, q ~ N(0, 1), {} positions × {} K/V heads × {}, {} decode queries (MHA), "
                                "seed {}; outlier keys: channels {} offset by ±{}", T, o.kv_heads, o.head_dim,
                                o.queries, m.seed, fmt::join(m.channels, ", "), o.outlier_scale));
  r.notes.push_back("layout (KIVI, arXiv 2402.02750): K per channel over groups of G positions, the last T mod G "
                    "positions kept exact until their group fills; V per position over groups of G channels; int "
                    "formats asymmetric (fp16 zero = min rounded down, scale = range/(2^b − 1) rounded up), fp8 "
                    "symmetric absmax with an fp16 scale; codes packed, bytes counted on the buffers.");
  r.notes.push_back("003 part 4's 2× and 4× are the bandwidth-bound limit 16/b; the scales cost 32/G bits per "
                    "element (16/G for fp8), e.g. int4 at G = 128: 4.25 bits, 3.76× — and 5 bits, 3.2×, at G = 32.");
}

}  // namespace

KvQuantMeasured measure_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts) {
  const KvData x = make_data(o, ctx.seed);
  KvQuantMeasured m{.options = o, .seed = ctx.seed, .formats = all_kv_quant_formats(), .channels = x.channels};
  std::set<int> group_set{o.group_size};
  for (int g : {32, 64, 128})
    if (g <= o.tokens) group_set.insert(g);
  m.groups.assign(group_set.begin(), group_set.end());
  measure_bytes(m, parts, x);
  const std::vector<Read> at_G_outlier = measure_errors(m, parts, x);
  // Section 3: prefill vs decode, the same position, the same bits.
  for (std::size_t fi = 0; fi < m.formats.size(); ++fi) {
    const Read& a = at_G_outlier[fi];
    const Read b = write_through(parts, {m.formats[fi], o.group_size, KeyAxis::per_channel, {}}, x.k_outlier, x.V,
                                 o.tokens / 2 + 1);
    m.paths.push_back({m.formats[fi], max_abs(a.k - b.k), max_abs(a.v - b.v)});
  }
  return m;
}

std::vector<Expectation> judge_kv_quant(const KvQuantMeasured& m) {
  std::vector<Expectation> rows;
  bytes_rows(m, rows);
  ratio_rows(m, rows);
  error_rows(m, rows);
  kivi_and_path_rows(m, rows);
  return rows;
}

const CheckDef<KvQuantOptions, KvQuantMeasured>& kv_quant_check() {
  static const CheckDef<KvQuantOptions, KvQuantMeasured> def{
      .spec = {.name = "kv-quant",
               .order = 170,
               .source = "000 §4.5; 003 part 4",
               .summary = "quantized KV cache: bytes (fp8/int8 2×, int4 4× less scales), error bounds, KIVI per-channel K",
               .claim_zh = "KV Cache 量化：fp8/int8 省一半、int4 省四分之三（另加 scale），误差有界；KIVI 按通道量化 K",
               .description =
                   "Writes seeded K/V through kvlab's quantized cache (fp16, int8/4/2 asymmetric with KIVI's\n"
                   "layout, fp8 e4m3/e5m2 with a scale), counts the bytes of its packed buffers, checks every\n"
                   "element and the attention output against bounds derived from the formats' steps, shows\n"
                   "per-channel K beating per-token K on outlier channels, and prefill = decode writes.",
               .derivation =
                   "Bytes: b-bit codes plus fp16 parameters per group of G: int (scale + zero) b + 32/G bits,\n"
                   "fp8 (scale) 8 + 16/G; so fp16 / int4 = 16 / (4 + 32/G): 4 as G → ∞, 3.76 at G = 128.\n"
                   "Element error: int round((x − z)/s) is within s/2; fp8 within 2^-(m+1) relative (normal).\n"
                   "Attention: a key error e moves score j by δ_j ≤ Σ|q_c|e_jc/√d; softmax weights then move by\n"
                   "a factor in [e^-2δ, e^2δ], so Σ|p̂ − p| ≤ e^2δ − 1 and, with Σ(p̂ − p) = 0,\n"
                   "|ô − o| ≤ max e_V + (e^2δ − 1)·range(v)/2.\n"
                   "KIVI: a few key channels carry a large magnitude in every token. Per token, that magnitude\n"
                   "sets the step of every channel in the group; per channel, each keeps its own small range.\n"
                   "Source: 000 §4.5 (KIVI / KVQuant / FP8); 003 part 4 (量化: 翻倍 / 翻四倍).",
               .claim = "Quantizing the KV cache to fp8/int8 halves and to int4 quarters its bytes (the 003 part 4 "
                        "\"doubles / quadruples\" less the scales), within each format's error bound; per-channel K "
                        "(KIVI) beats per-token K on outlier channels; a position reads back the same whether written "
                        "at prefill or at decode."},
      .options = {{"--tokens", &KvQuantOptions::tokens, Allowed::integers(16, kMaxTokens),
                   "Positions written to each cache"},
                  {"--kv-heads", &KvQuantOptions::kv_heads, Allowed::integers(1, kMaxHeads), "K/V heads (= query heads)"},
                  {"--head-dim", &KvQuantOptions::head_dim, Allowed::integers(8, kMaxHeadDim),
                   "Head dimension (even, >= 8)"},
                  {"--queries", &KvQuantOptions::queries, Allowed::integers(1, kMaxQueries),
                   "Decode queries over the cache"},
                  {"--group-size", &KvQuantOptions::group_size, Allowed::integers(8, kMaxGroup),
                   "Group size G of the judged rows (<= --tokens)"},
                  {"--outlier-channels", &KvQuantOptions::outlier_channels, Allowed::integers(1, kMaxOutliers),
                   "Key channels made outliers (<= half the channels)"},
                  {"--outlier-scale", &KvQuantOptions::outlier_scale, Allowed::reals(8, 1000),
                   "Offset ± of the outlier key channels (the others are N(0, 1))"}},
      .constraints =
          [](const KvQuantOptions& o) {
            if (o.head_dim % 2 != 0) throw InputError(fmt::format("--head-dim: must be even (got {})", o.head_dim));
            require_range("--group-size", o.group_size, 8, std::min(kMaxGroup, o.tokens));
            const int W = o.kv_heads * o.head_dim;
            // At most half the channels: KIVI's outliers stand out from the rest of their token.
            require_range("--outlier-channels", o.outlier_channels, 1, std::min(kMaxOutliers, W / 2));
            if (std::int64_t{o.tokens} * W > kMaxElements)
              throw InputError(fmt::format("--tokens × --kv-heads × --head-dim: {} × {} × {} = {} elements exceed the "
                                           "budget {}", o.tokens, o.kv_heads, o.head_dim, std::int64_t{o.tokens} * W,
                                           kMaxElements));
          },
      .measure = [](const KvQuantOptions& o, const RunContext& ctx) { return measure_kv_quant(o, ctx); },
      .judge = judge_kv_quant,
      .present = present};
  return def;
}

Result run_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts) {
  return run_check(kv_quant_check(), o, ctx, [&parts](const KvQuantOptions& opts, const RunContext& c) {
    return measure_kv_quant(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(kv_quant_check);

}  // namespace kvlab::checks::kv_quant
