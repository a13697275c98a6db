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
#include "reference/rope.hpp"

namespace kvlab::checks::rope_relative {
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

double rope_score(const RopeFn& rope_q, const RopeFn& rope_k, const Vec<double>& q, const Vec<double>& k,
                  std::int64_t t, std::int64_t s, double theta) {
  const int d = static_cast<int>(q.size());
  Mat<double> qr = q.transpose(), kr = k.transpose();
  rope_q(qr, 1, d, static_cast<int>(t), theta);
  rope_k(kr, 1, d, static_cast<int>(s), theta);
  return qr.row(0).dot(kr.row(0));
}


// The largest of a per-pair bound over the pairs.
template <class F>
double max_over(const RopeRelativeMeasured& m, F&& bound) {
  double b = 0;
  for (const RopePair& p : m.pairs) b = std::max(b, bound(p));
  return b;
}

double shift_bound(const RopeRelativeMeasured& m, std::int64_t off) {
  const int d = m.options.head_dim;
  return max_over(m, [&](const RopePair& p) {
    return score_bound(p.t, p.s, d, p.norms) + score_bound(p.t + off, p.s + off, d, p.norms);
  });
}

// A drawn pair with its q and k.
struct Draw {
  RopePair pair;
  Vec<double> q, k;
};

std::vector<Draw> draw_pairs(const RopeRelativeOptions& o, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Draw> draws;
  for (int n = 0; n < o.pairs; ++n) {
    Draw p;
    p.pair.t = static_cast<std::int64_t>(rng.uniform() * (o.max_pos + 1.0));
    p.pair.s = static_cast<std::int64_t>(rng.uniform() * (o.max_pos + 1.0));
    p.q.resize(o.head_dim);
    p.k.resize(o.head_dim);
    for (int i = 0; i < o.head_dim; ++i) p.q(i) = rng.normal();
    for (int i = 0; i < o.head_dim; ++i) p.k(i) = rng.normal();
    p.pair.norms = p.q.norm() * p.k.norm();
    draws.push_back(std::move(p));
  }
  return draws;
}

// Offsets 1, 10, 100, ... up to --max-offset, and --max-offset itself.
std::vector<std::int64_t> offsets_for(std::int64_t max_offset) {
  std::vector<std::int64_t> offsets;
  for (std::int64_t off = 1; off <= max_offset; off *= 10) offsets.push_back(off);
  if (offsets.empty() || offsets.back() != max_offset) offsets.push_back(max_offset);
  return offsets;
}

void present(const RopeRelativeMeasured& m, Result& r) {
  const RopeRelativeOptions& o = m.options;
  Table detail{"shift both positions by o: max |score(t, s) − score(t + o, s + o)| over the pairs",
               {"offset o", "largest angle (rad)", "max |Δscore|", "bound", "max |Δscore| / bound"}, {}};
  double worst = 0, worst_ratio = 0;
  for (const RopeShift& sh : m.shifts) {
    const double bound = shift_bound(m, sh.offset);
    worst = nan_max(worst, sh.diff);
    worst_ratio = nan_max(worst_ratio, sh.diff / bound);
    detail.rows.push_back({sh.offset, static_cast<double>(o.max_pos + sh.offset), sh.diff, bound, sh.diff / bound});
  }
  r.metric("max_entry_error_identity", m.identity_error);
  r.metric("max_abs_diff_closed_form", m.closed_form_error);
  r.metric("max_abs_diff_shift", worst);
  r.metric("max_shift_diff_over_bound", worst_ratio);
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("{} pairs, head_dim {}, θ = {}, t, s uniform in [0, {}], q, k ~ N(0, 1), "
                                "float64, seed {}", o.pairs, o.head_dim, o.theta, o.max_pos, m.seed));
  r.notes.push_back("R_t is read off the library's apply_rope (rotate-half pairs (i, i + d/2), as LLaMA/HF); "
                    "R_(s−t) and qᵀR_(s−t)k are written out from cos and sin, independently of it.");
  r.notes.push_back("The bound grows with the position because the angle p·θ^(−2i/d) is rounded to "
                    "within u·|p|; the table shows the measured difference growing with it, far inside the bound.");
}

}  // namespace

RopeRelativeMeasured measure_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx,
                                           const RopeRelativeParts& parts) {
  const RopeFn library = [](Mat<double>& x, int h, int d, int p, double th) { apply_rope(x, h, d, p, th); };
  const RopeFn rope_q = parts.rope_q ? parts.rope_q : library;
  const RopeFn rope_k = parts.rope_k ? parts.rope_k : library;
  const int d = o.head_dim;
  const std::vector<Draw> draws = draw_pairs(o, ctx.seed);
  RopeRelativeMeasured m{.options = o, .seed = ctx.seed};
  for (const Draw& p : draws) {
    const auto [t, s, norms] = p.pair;
    m.pairs.push_back(p.pair);
    // 1. R_tᵀR_s = R_{s−t}, entry by entry.
    const Mat<double> rt = reference::applied_rope_matrix(rope_q, d, static_cast<int>(t), o.theta);
    const Mat<double> rs = reference::applied_rope_matrix(rope_k, d, static_cast<int>(s), o.theta);
    const Mat<double> ref = reference::rope_matrix(d, static_cast<double>(s - t), o.theta);
    m.identity_error = nan_max(m.identity_error, max_abs(rt.transpose() * rs - ref));
  }
  for (const Draw& p : draws) {  // 2. the score through the RoPE against the closed form qᵀR_{s−t}k
    const double got = rope_score(rope_q, rope_k, p.q, p.k, p.pair.t, p.pair.s, o.theta);
    const double want = reference::rope_relative_score(p.q, p.k, static_cast<double>(p.pair.s - p.pair.t), o.theta);
    m.closed_form_error = nan_max(m.closed_form_error, std::abs(got - want));
  }
  for (const std::int64_t off : offsets_for(o.max_offset)) {  // 3. shift both positions
    RopeShift sh{.offset = off};
    for (const Draw& p : draws) {
      const double a = rope_score(rope_q, rope_k, p.q, p.k, p.pair.t, p.pair.s, o.theta);
      const double b = rope_score(rope_q, rope_k, p.q, p.k, p.pair.t + off, p.pair.s + off, o.theta);
      sh.diff = nan_max(sh.diff, std::abs(a - b));
    }
    m.shifts.push_back(sh);
  }
  return m;
}

std::vector<Expectation> judge_rope_relative(const RopeRelativeMeasured& m) {
  const RopeRelativeOptions& o = m.options;
  const int d = o.head_dim;
  std::vector<Expectation> rows;
  rows.push_back({.quantity = fmt::format("max entry |R_tᵀR_s − R_(s−t)|, {} pairs, t, s ≤ {}", o.pairs, o.max_pos),
                  .source = "000 §4.4.1",
                  .unit = "",
                  .expected = 0,
                  .tolerance = max_over(m, [](const RopePair& p) { return identity_bound(p.t, p.s); }),
                  .why = "float64: 2(e_t + e_s) + e_(s−t) + 2u, e_p = u·|p| + 2u (angle and sin/cos rounding)",
                  .measured = m.identity_error,
                  .document = "R_tᵀR_s = R_(s−t)"});
  rows.push_back({.quantity = "max |(R_t q)·(R_s k) − qᵀR_(s−t)k| (closed form)",
                  .source = "000 §4.4.1",
                  .unit = "",
                  .expected = 0,
                  .tolerance = max_over(m, [d](const RopePair& p) {
                    return score_bound(p.t, p.s, d, p.norms) + closed_form_bound(p.s - p.t, d, p.norms);
                  }),
                  .why = "float64: per-score bounds (2(e_t + e_s) + (d + 8)u)‖q‖‖k‖ and (2e_(s−t) + (d + 8)u)‖q‖‖k‖",
                  .measured = m.closed_form_error,
                  .document = "q·k after RoPE = qᵀR_(s−t)k"});
  for (const RopeShift& sh : m.shifts)
    rows.push_back({.quantity = fmt::format("max |score(t, s) − score(t + {}, s + {})|", sh.offset, sh.offset),
                    .source = sh.offset >= 1000 ? "004 §1.6" : "000 §4.4.1",
                    .unit = "",
                    .expected = 0,
                    .tolerance = shift_bound(m, sh.offset),
                    .why = "float64: sum of the two scores' bounds; grows with the angle u·|p|",
                    .measured = sh.diff,
                    .document = "depends only on s − t"});
  return rows;
}

const CheckDef<RopeRelativeOptions, RopeRelativeMeasured>& rope_relative_check() {
  static const CheckDef<RopeRelativeOptions, RopeRelativeMeasured> def{
      .spec = {.name = "rope-relative",
               .order = 100,
               .source = "000 §4.4.1; 004 §1.6",
               .summary = "RoPE: R_tᵀR_s = R_(s−t); scores unchanged when both positions shift",
               .claim_zh = "RoPE：R_tᵀR_s = R_(s−t)；两个位置同时平移时注意力分数不变",
               .description =
                   "Builds the rotation R_t from the library's apply_rope and checks R_tᵀR_s = R_(s−t)\n"
                   "entry by entry, the score (R_t q)·(R_s k) against qᵀR_(s−t)k written out, and the score\n"
                   "after shifting both positions by 1, 10, ... up to --max-offset. Tolerances are float64\n"
                   "rounding bounds that grow with the rotation angle (stated in each row).",
               .derivation =
                   "RoPE rotates pair i of a query or key vector at position t by the angle t·θ_i, θ_i = base^(-2i/d):\n"
                   "R_t is block-diagonal, one 2×2 rotation per pair. Rotations by angles a and b compose to a\n"
                   "rotation by a + b, and the transpose of a rotation by a is the rotation by -a, so\n"
                   "  R_tᵀ R_s = R_{s-t}.\n"
                   "Therefore (R_t q) · (R_s k) = qᵀ R_tᵀ R_s k = qᵀ R_{s-t} k: the score depends only on s - t.\n"
                   "Shifting both positions by any offset leaves every score, hence attention, unchanged (up to the\n"
                   "rounding of the angles).\n"
                   "Source: 000 §4.4.1; 004 §1.6.\n",
               .claim = "RoPE: R_tᵀR_s = R_(s−t), so the score (R_t q)·(R_s k) depends only on s − t; shifting both "
                        "positions by any offset leaves it unchanged (up to float64 rounding)."},
      .options = {{"--pairs", &RopeRelativeOptions::pairs, Allowed::integers(1, kMaxPairs), "Random (t, s) pairs"},
                  {"--head-dim", &RopeRelativeOptions::head_dim, Allowed::integers(2, kMaxHeadDim),
                   "Head dimension d (even)"},
                  {"--theta", &RopeRelativeOptions::theta, Allowed::reals(2.0, 1e8), "RoPE base θ"},
                  {"--max-pos", &RopeRelativeOptions::max_pos, Allowed::integers(0, kMaxPos),
                   "t, s drawn from [0, max-pos]"},
                  {"--max-offset", &RopeRelativeOptions::max_offset, Allowed::integers(0, kMaxOffset),
                   "Largest shift of both positions"}},
      .constraints =
          [](const RopeRelativeOptions& o) {
            if (o.head_dim % 2 != 0)
              throw InputError(fmt::format("--head-dim: must be even (RoPE rotates pairs) (got {})", o.head_dim));
          },
      .measure = [](const RopeRelativeOptions& o, const RunContext& ctx) { return measure_rope_relative(o, ctx); },
      .judge = judge_rope_relative,
      .present = present};
  return def;
}

Result run_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx, const RopeRelativeParts& parts) {
  return run_check(rope_relative_check(), o, ctx, [&parts](const RopeRelativeOptions& opts, const RunContext& c) {
    return measure_rope_relative(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(rope_relative_check);

}  // namespace kvlab::checks::rope_relative
