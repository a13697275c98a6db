// int8-outliers — 003 part 4 and Q7 (LLM.int8()): outlier features break absmax int8, and keeping
// those feature dimensions in 16 bits brings the accuracy back.
//
// Claim: at scale, a few hidden feature dimensions carry values 20–60× the rest; with absmax int8
// every token's step is set by its largest value, so the outliers coarsen the step of all the
// ordinary features and the matrix product loses precision. LLM.int8() (arXiv 2208.07339) finds
// the dimensions with |x| ≥ 6.0, multiplies them (and the matching rows of W) in fp16 and the rest
// in int8, which restores the accuracy. kvlab computes C = X W in double, the vector-wise int8
// product (row scales for X, column scales for W) with and without planted outlier dimensions, and
// the decomposition. Expected:
//   - every entry within the bound the quantization step implies (see derivation()): with
//     s_x = max|X_i·|/127, s_w = max|W_·j|/127,
//       |C − Ĉ|_ij ≤ (s_x,i/2)·Σ_k|W_kj| + (s_w,j/2)·Σ_k(|X_ik| + s_x,i/2)   (+ rounding, d + 8 u)
//     and for the decomposition the same over the ordinary dimensions (their own, smaller s_x)
//     plus Σ_{k outlier}|X_ik||W_kj|·(2·2^-11 + 2^-22) + 2^-25(|X_ik| + |W_kj|) for the fp16 part;
//     measured as max |error| / bound ≤ 1;
//   - counts (exact): the decomposition finds exactly the planted dimensions (an N(0,1) entry
//     reaches 6 with probability 2·10^-9: the chance that an ordinary column is flagged is printed);
//     outliers make plain int8 worse, and the decomposition better than plain int8, in every row;
//     keeping the largest *weights* in 16 bits instead (003's wording, E19) does not.
//
//   kvlab int8-outliers [--tokens 64] [--features 256] [--outputs 128] [--outlier-dims 4]
//                       [--outlier-magnitude 40] [--threshold 6]
#include "checks/int8_outliers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"

namespace kvlab::checks::int8_outliers {
namespace {

// Largest sizes accepted: n·d·m ≤ 2^24 multiply-adds per product keeps a run near 1 s here.
constexpr int kMaxTokens = 512, kMaxFeatures = 512, kMaxOutputs = 512, kMaxOutlierDims = 32;
constexpr std::int64_t kMaxMacs = std::int64_t{1} << 24;
constexpr double kU = std::numeric_limits<double>::epsilon() / 2;
const double kU16 = std::ldexp(1.0, -11);        // fp16 unit roundoff
const double kHalfSub16 = std::ldexp(1.0, -25);  // half of fp16's subnormal step

// The check's own bound on |C − Ĉ| for the vector-wise int8 product over the dimensions `dims`
// (all of them for plain int8, the ordinary ones for the decomposition).
Mat<double> int8_bound(const Mat<double>& X, const Mat<double>& W, const std::vector<int>& dims) {
  const Eigen::Index n = X.rows(), m = W.cols();
  const auto d = static_cast<double>(dims.size());
  Vec<double> sx = Vec<double>::Zero(n), sw = Vec<double>::Zero(m);
  Mat<double> absX(n, static_cast<Eigen::Index>(dims.size())), absW(static_cast<Eigen::Index>(dims.size()), m);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    absX.col(static_cast<Eigen::Index>(k)) = X.col(dims[k]).cwiseAbs();
    absW.row(static_cast<Eigen::Index>(k)) = W.row(dims[k]).cwiseAbs();
  }
  if (!dims.empty()) {
    sx = absX.rowwise().maxCoeff() / 127.0;
    sw = absW.colwise().maxCoeff().transpose() / 127.0;
  }
  const Vec<double> sum_w = absW.colwise().sum().transpose(), sum_x = absX.rowwise().sum();
  const Mat<double> abs_prod = absX * absW;
  Mat<double> b(n, m);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < m; ++j) {
      // q = round(x/s) with x/s rounded once: |x − s·q| ≤ s/2 + 128 u s.
      const double main = sx(i) * (0.5 + 128 * kU) * sum_w(j) + sw(j) * (0.5 + 128 * kU) * (sum_x(i) + d * sx(i) / 2);
      b(i, j) = main + (d + 8) * kU * (abs_prod(i, j) + main);
    }
  return b;
}

// The fp16 part: x and w each rounded to fp16 (relative 2^-11 in the normal range, absolute 2^-25
// below it), products summed in double.
Mat<double> fp16_bound(const Mat<double>& X, const Mat<double>& W, const std::vector<int>& dims) {
  Mat<double> b = Mat<double>::Zero(X.rows(), W.cols());
  for (int k : dims)
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      for (Eigen::Index j = 0; j < W.cols(); ++j) {
        const double ax = std::fabs(X(i, k)), aw = std::fabs(W(k, j));
        b(i, j) += ax * aw * (2 * kU16 + kU16 * kU16) + kHalfSub16 * (ax + aw) * (1 + kU16) + kHalfSub16 * kHalfSub16 +
                   (X.cols() + 8) * kU * ax * aw * 2;
      }
  return b;
}

double worst_ratio(const Mat<double>& a, const Mat<double>& ref, const Mat<double>& bound) {
  return max_abs((a - ref).cwiseAbs().array() / bound.array());  // NaN-propagating
}

double rel_error(const Mat<double>& a, const Mat<double>& ref) { return (a - ref).norm() / ref.norm(); }

// 003's reading (E19): keep the largest-|w| weights in 16 bits (as many numbers as the
// decomposition keeps: outliers · m), absmax int8 for everything else, X quantized as usual.
Mat<double> keep_outlier_weights(const Mat<double>& X, const Mat<double>& W, std::size_t keep) {
  std::vector<Eigen::Index> idx(static_cast<std::size_t>(W.size()));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(),
                    [&](Eigen::Index a, Eigen::Index b) { return std::fabs(W.data()[a]) > std::fabs(W.data()[b]); });
  Mat<double> w_rest = W, w_kept = Mat<double>::Zero(W.rows(), W.cols());
  for (std::size_t t = 0; t < keep; ++t) {
    w_kept.data()[idx[t]] = W.data()[idx[t]];
    w_rest.data()[idx[t]] = 0;
  }
  // Dequantized X (row-wise absmax) and W_rest (column-wise absmax), then one double product.
  Mat<double> xh = X, wh = w_rest;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double s = max_abs(X.row(i)) / 127.0;
    for (Eigen::Index k = 0; k < X.cols(); ++k) xh(i, k) = s > 0 ? s * std::nearbyint(X(i, k) / s) : 0.0;
  }
  for (Eigen::Index j = 0; j < W.cols(); ++j) {
    const double s = max_abs(w_rest.col(j)) / 127.0;
    for (Eigen::Index k = 0; k < W.rows(); ++k) wh(k, j) = s > 0 ? s * std::nearbyint(w_rest(k, j) / s) : 0.0;
  }
  return xh * (wh + w_kept);
}

/// X ~ N(0, 1), W ~ N(0, 1/d), and Xo: X with the outlier dimensions set to ±|x|, |x| ~ U[M/2, 3M/2]
/// per dimension.
struct Planted {
  Mat<double> X, W, Xo;
  std::vector<int> dims;
  std::vector<double> magnitudes;
};

Planted plant(const Int8OutliersOptions& o, std::uint64_t seed) {
  const int n = o.tokens, d = o.features, m = o.outputs;
  Rng rng(seed);
  Planted p{Mat<double>(n, d), Mat<double>(d, m), {}, {}, {}};
  for (Eigen::Index i = 0; i < p.X.size(); ++i) p.X.data()[i] = rng.normal();
  for (Eigen::Index i = 0; i < p.W.size(); ++i) p.W.data()[i] = rng.normal() / std::sqrt(double(d));
  std::vector<int> dims(static_cast<std::size_t>(d));
  std::iota(dims.begin(), dims.end(), 0);
  for (int i = 0; i < o.outlier_dims; ++i)
    std::swap(dims[static_cast<std::size_t>(i)], dims[static_cast<std::size_t>(i + static_cast<int>(rng.uniform() * (d - i)))]);
  p.dims.assign(dims.begin(), dims.begin() + o.outlier_dims);
  std::sort(p.dims.begin(), p.dims.end());
  p.Xo = p.X;
  for (int k : p.dims) {
    const double mag = o.outlier_magnitude * (0.5 + rng.uniform());
    p.magnitudes.push_back(mag);
    for (int i = 0; i < n; ++i) p.Xo(i, k) = (rng.uniform() < 0.5 ? -1.0 : 1.0) * mag;
  }
  return p;
}

ProductError product_error(const Mat<double>& a, const Mat<double>& ref, const Mat<double>* bound) {
  const double rms = (a - ref).norm() / std::sqrt(double(a.rows()) * double(a.cols()));
  if (!bound) return {0, rms, rel_error(a, ref), 0};
  return {worst_ratio(a, ref, *bound), rms, rel_error(a, ref), bound->mean()};
}

/// Rows i of the products where `lhs`'s error is below `rhs`'s.
std::int64_t rows_below(const Mat<double>& lhs, const Mat<double>& lhs_ref, const Mat<double>& rhs,
                        const Mat<double>& rhs_ref) {
  std::int64_t count = 0;
  for (Eigen::Index i = 0; i < lhs.rows(); ++i)
    count += (lhs.row(i) - lhs_ref.row(i)).norm() < (rhs.row(i) - rhs_ref.row(i)).norm() ? 1 : 0;
  return count;
}

/// Planted dims found minus other dims found: the count the found row judges.
double found_score(const Int8OutliersMeasured& m) {
  std::size_t found_planted = 0;
  for (int k : m.found) found_planted += std::binary_search(m.planted.begin(), m.planted.end(), k);
  return double(found_planted) - double(m.found.size() - found_planted);
}

void present(const Int8OutliersMeasured& m, Result& r) {
  const Int8OutliersOptions& o = m.options;
  Table errs{"error of Ĉ against C = X W in double", {"product", "X", "RMS |Ĉ − C|", "‖Ĉ − C‖ / ‖C‖", "mean bound"}, {}};
  const std::string int8 = "absmax int8, vector-wise";
  errs.rows.push_back({int8, std::string("no outliers"), m.clean.rms, m.clean.relative, m.clean.mean_bound});
  errs.rows.push_back({int8, std::string("outliers"), m.outliers.rms, m.outliers.relative, m.outliers.mean_bound});
  errs.rows.push_back({std::string("LLM.int8() decomposition"), std::string("outliers"), m.decomposition.rms,
                       m.decomposition.relative, m.decomposition.mean_bound});
  errs.rows.push_back({std::string("largest weights in fp16, rest int8"), std::string("outliers"), m.weights_kept.rms,
                       m.weights_kept.relative, std::string("—")});
  r.tables.push_back(std::move(errs));
  Table dims_t{"planted outlier feature dimensions", {"dim", "|x|", "× typical max |x| of a row"}, {}};
  for (std::size_t t = 0; t < m.planted.size(); ++t)
    dims_t.rows.push_back({std::int64_t{m.planted[t]}, m.magnitudes[t], m.magnitudes[t] / m.typical_row_max});
  r.tables.push_back(std::move(dims_t));
  r.metric("rms_error_int8_clean", m.clean.rms);
  r.metric("rms_error_int8_outliers", m.outliers.rms);
  r.metric("rms_error_llm_int8", m.decomposition.rms);
  r.metric("rel_error_int8_clean", m.clean.relative);
  r.metric("rel_error_int8_outliers", m.outliers.relative);
  r.metric("rel_error_llm_int8", m.decomposition.relative);
  r.metric("rel_error_weights_kept", m.weights_kept.relative);
  r.metric("outlier_dims_found", double(m.found.size()));
  const int n = o.tokens, d = o.features;
  r.notes.push_back(fmt::format("data: X [{}, {}] ~ N(0, 1), W [{}, {}] ~ N(0, 1/{}); outlier dims {} with |x| in [{}, {}] "
                                "(random signs), seed {}", n, d, d, o.outputs, d, fmt::join(m.planted, ", "),
                                o.outlier_magnitude / 2, 1.5 * o.outlier_magnitude, m.seed));
  r.notes.push_back("E19: LLM.int8() keeps outlier *activation feature dimensions* (and the matching rows of W) in "
                    "fp16, not 'a few outlier weights'; keeping the largest weights instead leaves the error where it "
                    "was (last row of the table). AWQ keeps no weights in high precision: it rescales salient channels.");
}

}  // namespace

Int8OutliersMeasured measure_int8_outliers(const Int8OutliersOptions& o, const RunContext& ctx,
                                           const Int8OutliersParts& parts) {
  const auto vectorwise = parts.vectorwise ? parts.vectorwise : int8_vectorwise_matmul;
  const auto decompose = parts.decomposition ? parts.decomposition
                                             : [](const Mat<double>& x, const Mat<double>& w, double t) {
                                                 return llm_int8_matmul(x, w, t);
                                               };
  const Planted p = plant(o, ctx.seed);
  const Mat<double> C = p.X * p.W, Co = p.Xo * p.W;
  const Mat<double> plain = vectorwise(p.X, p.W), plain_o = vectorwise(p.Xo, p.W);
  const Int8Decomposition dec = decompose(p.Xo, p.W, o.threshold);
  const Mat<double> weights_kept = keep_outlier_weights(p.Xo, p.W, p.dims.size() * static_cast<std::size_t>(o.outputs));

  // The check's own outlier set (the rule of §3.3) for the decomposition's bound.
  std::vector<int> all(static_cast<std::size_t>(o.features)), ordinary, outliers;
  std::iota(all.begin(), all.end(), 0);
  for (int k = 0; k < o.features; ++k) (max_abs(p.Xo.col(k)) >= o.threshold ? outliers : ordinary).push_back(k);
  const Mat<double> bound_clean = int8_bound(p.X, p.W, all), bound_plain_o = int8_bound(p.Xo, p.W, all);
  const Mat<double> bound_dec = int8_bound(p.Xo, p.W, ordinary) + fp16_bound(p.Xo, p.W, outliers);

  Int8OutliersMeasured m{.options = o, .seed = ctx.seed, .planted = p.dims, .magnitudes = p.magnitudes,
                         .typical_row_max = p.X.cwiseAbs().rowwise().maxCoeff().mean(), .found = dec.outlier_columns};
  m.clean = product_error(plain, C, &bound_clean);
  m.outliers = product_error(plain_o, Co, &bound_plain_o);
  m.decomposition = product_error(dec.c, Co, &bound_dec);
  m.weights_kept = product_error(weights_kept, Co, nullptr);
  m.rows_worse = rows_below(plain, C, plain_o, Co);  // plain's error below plain_o's: the outliers made it worse
  m.rows_restored = rows_below(dec.c, Co, plain_o, Co);
  m.rows_beat_weights = rows_below(dec.c, Co, weights_kept, Co);
  return m;
}

std::vector<Expectation> judge_int8_outliers(const Int8OutliersMeasured& m) {
  const Int8OutliersOptions& o = m.options;
  const int n = o.tokens, d = o.features;
  const std::string bound_why =
      "|C − Ĉ|_ij ≤ (s_x,i/2)Σ|W_kj| + (s_w,j/2)Σ(|X_ik| + s_x,i/2), s = absmax/127 (+ (d + 8)u rounding); "
      "measured: max |error| / bound";
  // Found = planted: an N(0, 1) entry reaches the threshold with probability 2Q(t).
  const double p_entry = normal_two_sided_tail(o.threshold);
  const double p_false = std::min(1.0, p_entry * n * (d - o.outlier_dims));
  return {
      {.quantity = fmt::format("max |C − Ĉ| / bound, absmax int8 (vector-wise), no outliers, {} × {} · {} × {}", n, d,
                               d, o.outputs),
       .source = "003 part 4 (LLM.int8() §3.2)", .unit = "× bound", .expected = 0, .tolerance = 1, .why = bound_why,
       .measured = m.clean.worst},
      {.quantity = fmt::format("max |C − Ĉ| / bound, absmax int8, {} outlier dims (|x| 20–60×)", o.outlier_dims),
       .source = "003 part 4, Q7", .unit = "× bound", .expected = 0, .tolerance = 1,
       .why = bound_why + " (the outliers' absmax sets s_x)", .measured = m.outliers.worst},
      {.quantity = fmt::format("max |C − Ĉ| / bound, LLM.int8() decomposition (|x| ≥ {}) with outliers", o.threshold),
       .source = "003 part 4, Q7 (LLM.int8() §3.3)", .unit = "× bound", .expected = 0, .tolerance = 1,
       .why = "int8 bound over the ordinary dims (their own s_x) + fp16 part Σ|X||W|(2·2^-11 + 2^-22) + "
              "2^-25(|X| + |W|)",
       .measured = m.decomposition.worst},
      {.quantity = fmt::format("outlier dims found by the decomposition, all planted (found {}: planted − others)",
                               m.found.size()),
       .source = "003 Q7 (LLM.int8() §3.3)", .unit = "dims", .expected = double(m.planted.size()), .tolerance = 0,
       .why = fmt::format("a count; an ordinary N(0,1) entry reaches {} with probability {:.2g}, so one of the {} "
                          "ordinary entries does with probability ≤ {:.2g}", o.threshold, p_entry,
                          std::int64_t{n} * (d - o.outlier_dims), p_false),
       .measured = found_score(m)},
      {.quantity = "rows (tokens) where the outliers make absmax int8's error larger", .source = "003 part 4, Q7",
       .unit = "rows", .expected = double(n), .tolerance = 0,
       .why = "a count: the outliers' absmax multiplies the step of every other feature in the row",
       .measured = double(m.rows_worse)},
      {.quantity = "rows where the decomposition's error is below plain int8's, with outliers",
       .source = "003 part 4, Q7", .unit = "rows", .expected = double(n), .tolerance = 0,
       .why = "a count: the ordinary features get their own small step back", .measured = double(m.rows_restored)},
      {.quantity = fmt::format("rows where outlier feature dims in fp16 beat the {} largest weights in fp16 (E19)",
                               m.planted.size() * static_cast<std::size_t>(o.outputs)),
       .source = "003 part 4 (E19)", .unit = "rows", .expected = double(n), .tolerance = 0,
       .why = "a count: the step that hurts is the activations' (set by X's outliers), which weights cannot fix",
       .measured = double(m.rows_beat_weights),
       .document = "将极少数离群权重保持在高精度 (a few outlier weights kept in 16 bit)"}};
}

const CheckDef<Int8OutliersOptions, Int8OutliersMeasured>& int8_outliers_check() {
  static const CheckDef<Int8OutliersOptions, Int8OutliersMeasured> def{
      .spec = {.name = "int8-outliers",
               .order = 180,
               .source = "003 part 4, Q7",
               .summary = "absmax int8 matmul breaks on outlier features; LLM.int8() decomposition restores it",
               .claim_zh = "absmax int8 矩阵乘法遇离群特征失效；LLM.int8() 的分解能恢复精度",
               .description =
                   "Multiplies seeded X W in double, in vector-wise absmax int8 with and without planted\n"
                   "outlier feature dimensions, and with LLM.int8()'s mixed-precision decomposition; checks each\n"
                   "against the bound its quantization step implies and counts the rows each one wins.",
               .derivation =
                   "absmax: s = max|x|/127, |x − s·round(x/s)| ≤ s/2.\n"
                   "C − Ĉ = Σ_k (X − X̂)_ik W_kj + X̂_ik (W − Ŵ)_kj, so\n"
                   "|C − Ĉ|_ij ≤ (s_x,i/2)·Σ_k|W_kj| + (s_w,j/2)·Σ_k|X̂_ik|.\n"
                   "An outlier of size 40 in row i makes s_x,i = 40/127 instead of ≈ 3/127: the error of every\n"
                   "ordinary feature grows ≈ 13×. LLM.int8() moves the dims with |x| ≥ 6 to fp16 (error\n"
                   "≈ 2^-11 relative) and the rest keep their small s_x.\n"
                   "Source: 003 part 4 (LLM.int8()), Q7; Dettmers et al. arXiv 2208.07339 §3."},
      .options = {{"--tokens", &Int8OutliersOptions::tokens, Allowed::integers(1, kMaxTokens), "Rows of X"},
                  {"--features", &Int8OutliersOptions::features, Allowed::integers(8, kMaxFeatures),
                   "Columns of X = rows of W"},
                  {"--outputs", &Int8OutliersOptions::outputs, Allowed::integers(1, kMaxOutputs), "Columns of W"},
                  {"--outlier-dims", &Int8OutliersOptions::outlier_dims, Allowed::integers(1, kMaxOutlierDims),
                   "Outlier feature dimensions (<= features/2)"},
                  {"--outlier-magnitude", &Int8OutliersOptions::outlier_magnitude, Allowed::reals(2, 1000),
                   "Outlier |x| drawn from [M/2, 3M/2]; M >= 2·threshold"},
                  {"--threshold", &Int8OutliersOptions::threshold, Allowed::reals(1, 100),
                   "LLM.int8() outlier threshold"}},
      .constraints =
          [](const Int8OutliersOptions& o) {
            require_range("--outlier-dims", o.outlier_dims, 1, std::min(kMaxOutlierDims, o.features / 2));
            require_finite_range("--outlier-magnitude", o.outlier_magnitude, 2 * o.threshold, 1000);
            if (std::int64_t{o.tokens} * o.features * o.outputs > kMaxMacs)
              throw InputError(fmt::format("--tokens × --features × --outputs: {} × {} × {} exceeds the budget {}",
                                           o.tokens, o.features, o.outputs, kMaxMacs));
          },
      .measure = [](const Int8OutliersOptions& o, const RunContext& ctx) { return measure_int8_outliers(o, ctx); },
      .judge = judge_int8_outliers,
      .present = present,
      .claim =
          [](const Int8OutliersMeasured& m) {
            return fmt::format("A few outlier feature dimensions (|x| 20–60×) coarsen absmax int8's step for every "
                               "feature: the product's RMS error grows from {:.3g} to {:.3g}; LLM.int8()'s "
                               "decomposition (|x| ≥ {} in fp16) brings it back to {:.3g}.", m.clean.rms,
                               m.outliers.rms, m.options.threshold, m.decomposition.rms);
          }};
  return def;
}

Result run_int8_outliers(const Int8OutliersOptions& o, const RunContext& ctx, const Int8OutliersParts& parts) {
  return run_check(int8_outliers_check(), o, ctx, [&parts](const Int8OutliersOptions& opts, const RunContext& c) {
    return measure_int8_outliers(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(int8_outliers_check);

}  // namespace kvlab::checks::int8_outliers
