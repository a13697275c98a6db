// rope-relative — 000 §4.4.1; 004 §1.6: RoPE scores depend only on the relative position s − t.
//
// Claim: RoPE rotates q at position t by R_t and k at position s by R_s, and R_tᵀR_s = R_{s−t}
// (000 §4.4.1), so (R_t q)·(R_s k) = qᵀR_{s−t}k depends on s − t alone; shifting both positions by
// any offset leaves the score unchanged, which is why a RoPE model's old K never need recomputing
// (004 §1.6). kvlab builds R_t from the library's apply_rope (rotate-half pairs, base θ) and checks
//   1. max entry |R_tᵀR_s − R_{s−t}| over --pairs random (t, s), R_{s−t} written out from cos/sin;
//   2. the score (R_t q)·(R_s k) against the closed form qᵀR_{s−t}k;
//   3. score(t, s) against score(t + o, s + o) for offsets o = 1, 10, ..., --max-offset.
// Expected: 0, within a float64 rounding bound derived below that grows with the angle |p|·θ_i
// (the angle's rounding is u·|angle|, and the largest frequency θ^0 = 1 makes |angle| ≤ |p|).
//
//   kvlab rope-relative [--pairs 64] [--head-dim 64] [--theta 10000] [--max-pos 4096] [--max-offset 100000]
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "checks/rope_relative.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

// Largest sizes accepted: step 1 multiplies --pairs dense head_dim × head_dim matrices, so
// 256 · 128³ multiply-adds (about 0.2 s); the score steps are cheap.
constexpr int kMaxPairs = 256;
constexpr int kMaxHeadDim = 128;
constexpr int kMaxPos = 1'000'000;
constexpr std::int64_t kMaxOffset = 1'000'000'000;  // t + o stays below 2^31 (apply_rope's int pos0)

constexpr double u = 0x1.0p-53;  // float64 unit roundoff

// Rounding bounds (first order in u; Higham §3.1). Every frequency is θ^(−2i/d) ≤ 1 (θ > 1), computed
// by the same expression in the library and in the reference below, so it is common to R_t, R_s
// and R_{s−t} and cancels from the identity; what differs is:
//   angle p·f rounded once:            |error| ≤ u·|p|
//   cos, sin (glibc: < 1 ulp, ≤ 2u for values in [−1, 1]) → each entry of R_p is off by at most
//   e(p) = u·|p| + 2u.
double rotation_entry_error(double p) { return u * std::abs(p) + 2 * u; }

// Entry of R_tᵀR_s: two products of entries of R_t and R_s (each off by e), summed: 2(e_t + e_s)
// + 2u for the sum's rounding; the written-out R_{s−t} is off by e(s − t).
double identity_bound(double t, double s) {
  return 2 * (rotation_entry_error(t) + rotation_entry_error(s)) + rotation_entry_error(s - t) + 2 * u;
}

// Score (R_t q)·(R_s k) through apply_rope: each rotated entry a·c − b·s is off by
// (e + 2u)(|a| + |b|); by Cauchy-Schwarz over the d/2 pairs that moves the dot product by at most
// 2(e + 2u)‖q‖‖k‖ per side; the d-term dot product adds d·u‖q‖‖k‖ (rotations keep norms).
double score_bound(double t, double s, int d, double qk_norms) {
  return (2 * (rotation_entry_error(t) + rotation_entry_error(s)) + 8 * u + d * u) * qk_norms;
}

// The closed form Σ_i cos(Δf_i)(q_a k_a + q_b k_b) + sin(Δf_i)(q_b k_a − q_a k_b): cos and sin off by
// e(Δ) on terms of size ≤ ‖q_pair‖‖k_pair‖ (2e(Δ)‖q‖‖k‖), and a sum of d/2 terms each from ~4 roundings.
double closed_form_bound(double delta, int d, double qk_norms) {
  return (2 * rotation_entry_error(delta) + (d + 8) * u) * qk_norms;
}

/// R_p [d, d] as `rope` applies it: the d unit vectors as the d "heads" of one row at position p;
/// rotated head j is R_p e_j, column j of R_p.
Mat<double> rotation_matrix(const RopeFn& rope, int d, int p, double theta) {
  Mat<double> x = Mat<double>::Zero(1, static_cast<Eigen::Index>(d) * d);
  for (int j = 0; j < d; ++j) x(0, static_cast<Eigen::Index>(j) * d + j) = 1.0;
  rope(x, d, d, p, theta);
  Mat<double> r(d, d);
  for (int j = 0; j < d; ++j) r.col(j) = x.row(0).segment(static_cast<Eigen::Index>(j) * d, d).transpose();
  return r;
}

/// R_Δ written out (rotate-half pairs (i, i + d/2), angle Δ·θ^(−2i/d)), independent of apply_rope.
Mat<double> rotation_reference(int d, double delta, double theta) {
  Mat<double> r = Mat<double>::Zero(d, d);
  const int half = d / 2;
  for (int i = 0; i < half; ++i) {
    const double a = delta * std::pow(theta, -2.0 * i / d);
    r(i, i) = r(i + half, i + half) = std::cos(a);
    r(i, i + half) = -std::sin(a);
    r(i + half, i) = std::sin(a);
  }
  return r;
}

double closed_form_score(const Vec<double>& q, const Vec<double>& k, double delta, double theta) {
  const int d = static_cast<int>(q.size()), half = d / 2;
  double sum = 0;
  for (int i = 0; i < half; ++i) {
    const double a = delta * std::pow(theta, -2.0 * i / d);
    sum += std::cos(a) * (q(i) * k(i) + q(i + half) * k(i + half)) +
           std::sin(a) * (q(i + half) * k(i) - q(i) * k(i + half));
  }
  return sum;
}

double rope_score(const RopeFn& rope_q, const RopeFn& rope_k, const Vec<double>& q, const Vec<double>& k,
                  std::int64_t t, std::int64_t s, double theta) {
  const int d = static_cast<int>(q.size());
  Mat<double> qr = q.transpose(), kr = k.transpose();
  rope_q(qr, 1, d, static_cast<int>(t), theta);
  rope_k(kr, 1, d, static_cast<int>(s), theta);
  return qr.row(0).dot(kr.row(0));
}

}  // namespace

Result run_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx, const RopeRelativeParts& parts) {
  require_range("--pairs", o.pairs, 1, kMaxPairs);
  require_range("--head-dim", o.head_dim, 2, kMaxHeadDim);
  if (o.head_dim % 2 != 0)
    throw InputError(fmt::format("--head-dim: must be even (RoPE rotates pairs) (got {})", o.head_dim));
  require_finite_range("--theta", o.theta, 2.0, 1e8);
  require_range("--max-pos", o.max_pos, 0, kMaxPos);
  require_range("--max-offset", o.max_offset, 0, kMaxOffset);
  const RopeFn library = [](Mat<double>& x, int h, int d, int p, double th) { apply_rope(x, h, d, p, th); };
  const RopeFn rope_q = parts.rope_q ? parts.rope_q : library;
  const RopeFn rope_k = parts.rope_k ? parts.rope_k : library;
  const int d = o.head_dim;

  struct Pair {
    std::int64_t t, s;
    Vec<double> q, k;
    double norms;  // ‖q‖‖k‖
  };
  Rng rng(ctx.seed);
  std::vector<Pair> pairs;
  for (int n = 0; n < o.pairs; ++n) {
    Pair p;
    p.t = static_cast<std::int64_t>(rng.uniform() * (o.max_pos + 1.0));
    p.s = static_cast<std::int64_t>(rng.uniform() * (o.max_pos + 1.0));
    p.q.resize(d);
    p.k.resize(d);
    for (int i = 0; i < d; ++i) p.q(i) = rng.normal();
    for (int i = 0; i < d; ++i) p.k(i) = rng.normal();
    p.norms = p.q.norm() * p.k.norm();
    pairs.push_back(std::move(p));
  }

  Result r;
  Table detail{"shift both positions by o: max |score(t, s) − score(t + o, s + o)| over the pairs",
               {"offset o", "largest angle (rad)", "max |Δscore|", "bound", "max |Δscore| / bound"}, {}};

  // 1. R_tᵀR_s = R_{s−t}, entry by entry.
  double id_err = 0, id_bound = 0;
  for (const Pair& p : pairs) {
    const Mat<double> rt = rotation_matrix(rope_q, d, static_cast<int>(p.t), o.theta);
    const Mat<double> rs = rotation_matrix(rope_k, d, static_cast<int>(p.s), o.theta);
    const Mat<double> ref = rotation_reference(d, static_cast<double>(p.s - p.t), o.theta);
    id_err = nan_max(id_err, max_abs(rt.transpose() * rs - ref));
    id_bound = std::max(id_bound, identity_bound(p.t, p.s));
  }
  r.expect({.quantity = fmt::format("max entry |R_tᵀR_s − R_(s−t)|, {} pairs, t, s ≤ {}", o.pairs, o.max_pos),
            .source = "000 §4.4.1",
            .unit = "",
            .expected = 0,
            .tolerance = id_bound,
            .why = "float64: 2(e_t + e_s) + e_(s−t) + 2u, e_p = u·|p| + 2u (angle and sin/cos rounding)",
            .measured = id_err,
            .document = "R_tᵀR_s = R_(s−t)"});

  // 2. the score through apply_rope against the closed form qᵀR_{s−t}k.
  double cf_err = 0, cf_bound = 0;
  for (const Pair& p : pairs) {
    const double got = rope_score(rope_q, rope_k, p.q, p.k, p.t, p.s, o.theta);
    const double want = closed_form_score(p.q, p.k, static_cast<double>(p.s - p.t), o.theta);
    cf_err = nan_max(cf_err, std::abs(got - want));
    cf_bound = std::max(cf_bound, score_bound(p.t, p.s, d, p.norms) + closed_form_bound(p.s - p.t, d, p.norms));
  }
  r.expect({.quantity = "max |(R_t q)·(R_s k) − qᵀR_(s−t)k| (closed form)",
            .source = "000 §4.4.1",
            .unit = "",
            .expected = 0,
            .tolerance = cf_bound,
            .why = "float64: per-score bounds (2(e_t + e_s) + (d + 8)u)‖q‖‖k‖ and (2e_(s−t) + (d + 8)u)‖q‖‖k‖",
            .measured = cf_err,
            .document = "q·k after RoPE = qᵀR_(s−t)k"});

  // 3. shift both positions.
  std::vector<std::int64_t> offsets;
  for (std::int64_t off = 1; off <= o.max_offset; off *= 10) offsets.push_back(off);
  if (offsets.empty() || offsets.back() != o.max_offset) offsets.push_back(o.max_offset);
  double worst = 0, worst_ratio = 0;
  for (const std::int64_t off : offsets) {
    double diff = 0, bound = 0;
    for (const Pair& p : pairs) {
      const double a = rope_score(rope_q, rope_k, p.q, p.k, p.t, p.s, o.theta);
      const double b = rope_score(rope_q, rope_k, p.q, p.k, p.t + off, p.s + off, o.theta);
      diff = nan_max(diff, std::abs(a - b));
      bound = std::max(bound, score_bound(p.t, p.s, d, p.norms) +
                                  score_bound(p.t + off, p.s + off, d, p.norms));
    }
    worst = nan_max(worst, diff);
    worst_ratio = nan_max(worst_ratio, diff / bound);
    r.expect({.quantity = fmt::format("max |score(t, s) − score(t + {}, s + {})|", off, off),
              .source = off >= 1000 ? "004 §1.6" : "000 §4.4.1",
              .unit = "",
              .expected = 0,
              .tolerance = bound,
              .why = "float64: sum of the two scores' bounds; grows with the angle u·|p|",
              .measured = diff,
              .document = "depends only on s − t"});
    detail.rows.push_back({off, static_cast<double>(o.max_pos + off), diff, bound, diff / bound});
  }

  r.metric("max_entry_error_identity", id_err);
  r.metric("max_abs_diff_closed_form", cf_err);
  r.metric("max_abs_diff_shift", worst);
  r.metric("max_shift_diff_over_bound", worst_ratio);
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("{} pairs, head_dim {}, θ = {}, t, s uniform in [0, {}], q, k ~ N(0, 1), "
                                "float64, seed {}", o.pairs, d, o.theta, o.max_pos, ctx.seed));
  r.notes.push_back("R_t is read off the library's apply_rope (rotate-half pairs (i, i + d/2), as LLaMA/HF); "
                    "R_(s−t) and qᵀR_(s−t)k are written out from cos and sin, independently of it.");
  r.notes.push_back("The bound grows with the position because the angle p·θ^(−2i/d) is rounded to "
                    "within u·|p|; the table shows the measured difference growing with it, far inside the bound.");
  r.check = "rope-relative";
  r.source = "000 §4.4.1; 004 §1.6";
  r.claim = "RoPE: R_tᵀR_s = R_(s−t), so the score (R_t q)·(R_s k) depends only on s − t; shifting both "
            "positions by any offset leaves it unchanged (up to float64 rounding).";
  return r;
}

namespace {

class RopeRelative final : public Check {
 public:
  std::string name() const override { return "rope-relative"; }
  std::string source() const override { return "000 §4.4.1; 004 §1.6"; }
  std::string summary() const override { return "RoPE: R_tᵀR_s = R_(s−t); scores unchanged when both positions shift"; }
  std::string derivation() const override {
    return "RoPE rotates pair i of a query or key vector at position t by the angle t·θ_i, θ_i = base^(-2i/d):\n"
           "R_t is block-diagonal, one 2×2 rotation per pair. Rotations by angles a and b compose to a\n"
           "rotation by a + b, and the transpose of a rotation by a is the rotation by -a, so\n"
           "  R_tᵀ R_s = R_{s-t}.\n"
           "Therefore (R_t q) · (R_s k) = qᵀ R_tᵀ R_s k = qᵀ R_{s-t} k: the score depends only on s - t.\n"
           "Shifting both positions by any offset leaves every score, hence attention, unchanged (up to the\n"
           "rounding of the angles).\n"
           "Source: 000 §4.4.1; 004 §1.6.\n";
  }
  std::string description() const override {
    return "Builds the rotation R_t from the library's apply_rope and checks R_tᵀR_s = R_(s−t)\n"
           "entry by entry, the score (R_t q)·(R_s k) against qᵀR_(s−t)k written out, and the score\n"
           "after shifting both positions by 1, 10, ... up to --max-offset. Tolerances are float64\n"
           "rounding bounds that grow with the rotation angle (stated in each row).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--pairs", opts_.pairs, "Random (t, s) pairs")->check(IntRange(1, kMaxPairs));
    sub.add_option("--head-dim", opts_.head_dim, "Head dimension d (even)")->check(IntRange(2, kMaxHeadDim));
    sub.add_option("--theta", opts_.theta, "RoPE base θ")->check(FiniteRange(2.0, 1e8));
    sub.add_option("--max-pos", opts_.max_pos, "t, s drawn from [0, max-pos]")->check(IntRange(0, kMaxPos));
    sub.add_option("--max-offset", opts_.max_offset, "Largest shift of both positions")
        ->check(IntRange(0, kMaxOffset));
  }
  Result run(const RunContext& ctx) override { return run_rope_relative(opts_, ctx); }

 private:
  RopeRelativeOptions opts_;
};

KVLAB_REGISTER_CHECK(100, RopeRelative);

}  // namespace
}  // namespace kvlab::checks
