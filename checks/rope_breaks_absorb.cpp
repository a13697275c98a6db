// rope-breaks-absorb — 000 §4.4.1: RoPE on the latent path makes the absorbed matrix depend on s − t.
//
// Claim: if RoPE rotated MLA's content query and key, the score would be
//   (R_t q_C,i)·(R_s k_C,i) = c_Q W_UQ,i R_(s−t) W_UK,iᵀ c_KVᵀ,
// and the middle matrix M_i(s − t) = W_UQ,i R_(s−t) W_UK,iᵀ is not one constant: every relative
// offset needs its own, so it cannot be precomputed once (the absorb trick fails; hence DeepSeek-V2's
// decoupled RoPE channel, which mla-absorb shows absorbs exactly). kvlab takes the up-projections of
// an MLA mini-GPT (head by head) and checks
//   1. the score identity above for --pairs random (t, s, c_Q, c_KV), within a float64 bound;
//   2. for every offset Δ = 1 .. --max-delta, M_i(Δ) differs from M_i(0) by more than rounding.
// Expected: 1. 0 ± bound; 2. the count of such Δ equals --max-delta exactly (every offset differs).
//
//   kvlab rope-breaks-absorb [--max-delta 64] [--pairs 32] [--theta 10000]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "checks/rope_breaks_absorb.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "model/mla.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

constexpr int kMaxDelta = 4096;
constexpr int kMaxPairs = 256;
constexpr int kMaxPos = 4096;
constexpr double u = 0x1.0p-53;

/// Error of one rotation entry at position p (angle p·θ^(−2i/d) rounded, then sin/cos): see
/// rope_relative.cpp.
double entry_error(double p) { return u * std::abs(p) + 2 * u; }

/// R_p [d, d] as `rope` applies it (column j = the rotated unit vector e_j).
Mat<double> rotation(const RopeFn& rope, int d, int p, double theta) {
  Mat<double> x = Mat<double>::Zero(1, static_cast<Eigen::Index>(d) * d);
  for (int j = 0; j < d; ++j) x(0, static_cast<Eigen::Index>(j) * d + j) = 1.0;
  rope(x, d, d, p, theta);
  Mat<double> r(d, d);
  for (int j = 0; j < d; ++j) r.col(j) = x.row(0).segment(static_cast<Eigen::Index>(j) * d, d).transpose();
  return r;
}

}  // namespace

Result run_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                              const RopeBreaksAbsorbParts& parts) {
  require_range("--max-delta", o.max_delta, 1, kMaxDelta);
  require_range("--pairs", o.pairs, 1, kMaxPairs);
  require_finite_range("--theta", o.theta, 2.0, 1e8);
  const RopeFn rope = parts.rope ? parts.rope
                                 : RopeFn([](Mat<double>& x, int h, int d, int p, double th) { apply_rope(x, h, d, p, th); });
  MlaConfig c;  // the mini-GPT of mla-absorb: 8 heads × d_h 8, d_c 32, d_q 24
  const MlaGPT<double> model(c, ctx.seed);
  const MlaWeights<double>& w = model.blocks()[0].mla;
  const int H = c.n_head, dh = c.head_dim, dq = c.query_dim(), dc = c.kv_lora_rank;

  // 1. The score identity, head by head, for random (t, s, c_Q, c_KV).
  Rng rng(ctx.seed + 2);
  double id_err = 0, id_bound = 0;
  for (int n = 0; n < o.pairs; ++n) {
    const int t = static_cast<int>(rng.uniform() * (kMaxPos + 1.0)), s = static_cast<int>(rng.uniform() * (kMaxPos + 1.0));
    Mat<double> cq(1, dq), ckv(1, dc);
    for (int i = 0; i < dq; ++i) cq(0, i) = rng.normal();
    for (int i = 0; i < dc; ++i) ckv(0, i) = rng.normal();
    Mat<double> q = cq * w.w_uq, k = ckv * w.w_uk;  // [1, H·d_h]
    rope(q, H, dh, t, o.theta);
    rope(k, H, dh, s, o.theta);
    const Mat<double> r_delta = rotation(rope, dh, s - t, o.theta);
    for (int i = 0; i < H; ++i) {
      const Mat<double> a = w.w_uq.middleCols(i * dh, dh), b = w.w_uk.middleCols(i * dh, dh);
      const double lhs = q.row(0).segment(i * dh, dh).dot(k.row(0).segment(i * dh, dh));
      const double rhs = (cq * (a * r_delta * b.transpose()) * ckv.transpose())(0, 0);
      // Σ|terms| of either nesting ≤ √2‖c_Q‖‖A‖_F‖B‖_F‖c_KV‖ (|R| has two entries ≤ 1 per row);
      // both sums are at most d_q + d_h + d_c + 2 long (2·n·u), and each rotation entry is off by e(p).
      const double mag = std::sqrt(2.0) * cq.norm() * a.norm() * b.norm() * ckv.norm();
      const double bound = (2.0 * (dq + dh + dc + 2) * u + 2 * (entry_error(t) + entry_error(s) + entry_error(s - t))) * mag;
      id_err = nan_max(id_err, std::abs(lhs - rhs));
      id_bound = std::max(id_bound, bound);
    }
  }
  Result r;
  r.expect({.quantity = fmt::format("max |(R_t q_C)·(R_s k_C) − c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ|, {} draws × {} heads", o.pairs, H),
            .source = "000 §4.4.1", .unit = "", .expected = 0, .tolerance = id_bound,
            .why = "float64: (2(d_q + d_h + d_c + 2)u + 2(e_t + e_s + e_(s−t)))·√2‖c_Q‖‖W_UQ,i‖‖W_UK,i‖‖c_KV‖",
            .measured = id_err, .document = "q^RoPE·k^RoPE = c_Qᵀ W_UQᵀ R_(s−t) W_UK c_KV"});

  // 2. M_i(Δ) against M_i(0), Δ = 1 .. max_delta.
  std::vector<Mat<double>> m0(H);
  for (int i = 0; i < H; ++i) m0[i] = w.w_uq.middleCols(i * dh, dh) * w.w_uk.middleCols(i * dh, dh).transpose();
  double row_a = 0, row_b = 0;  // largest row norms of W_UQ,i and W_UK,i over heads
  for (int i = 0; i < H; ++i) {
    row_a = std::max(row_a, w.w_uq.middleCols(i * dh, dh).rowwise().norm().maxCoeff());
    row_b = std::max(row_b, w.w_uk.middleCols(i * dh, dh).rowwise().norm().maxCoeff());
  }
  Table spread{"how far M_i(Δ) = W_UQ,i R_Δ W_UK,iᵀ moves from M_i(0) (the matrix absorption would precompute)",
               {"Δ = s − t", "max_i ‖M_i(Δ) − M_i(0)‖_F / ‖M_i(0)‖_F", "max entry |M(Δ) − M(0)|", "rounding threshold"}, {}};
  int differs = 0;
  double min_rel = INFINITY;
  for (int delta = 1; delta <= o.max_delta; ++delta) {
    const Mat<double> rd = rotation(rope, dh, delta, o.theta);
    // An entry of M is a d_h-term sum over pairs of R's entries (two ≤ 1 per row): rounding
    // 2(d_h + 2)u plus the rotation's 2e(Δ), times √2·‖row of A‖‖row of B‖; ×2 because both
    // M(Δ) and M(0) carry such an error.
    const double threshold = (2.0 * (dh + 2) * u + 2 * entry_error(delta)) * std::sqrt(2.0) * row_a * row_b * 2;
    double rel = 0, entry = 0;
    for (int i = 0; i < H; ++i) {
      const Mat<double> md = w.w_uq.middleCols(i * dh, dh) * rd * w.w_uk.middleCols(i * dh, dh).transpose();
      rel = nan_max(rel, (md - m0[i]).norm() / m0[i].norm());
      entry = nan_max(entry, max_abs(md - m0[i]));
    }
    if (entry > threshold) ++differs;
    min_rel = std::min(min_rel, rel);
    if ((delta & (delta - 1)) == 0 || delta == o.max_delta) spread.rows.push_back({std::int64_t{delta}, rel, entry, threshold});
  }
  r.expect({.quantity = fmt::format("offsets Δ in 1..{} where M_i(Δ) ≠ M_i(0) beyond rounding", o.max_delta),
            .source = "000 §4.4.1", .unit = "offsets", .expected = double(o.max_delta), .tolerance = 0,
            .why = "integer count: every offset needs its own matrix", .measured = double(differs),
            .document = "不是常数！依赖 (s−t)"});
  r.metric("max_abs_diff_score_identity", id_err);
  r.metric("min_relative_spread", min_rel);
  r.tables.push_back(std::move(spread));
  r.notes.push_back(fmt::format("weights: layer 0 of the MLA mini-GPT ({} heads × d_h {}, d_c {}, d_q {}), θ = {}, "
                                "float64, seed {}; c_Q, c_KV ~ N(0, 1), t, s uniform in [0, {}]", H, dh, dc, dq,
                                o.theta, ctx.seed, kMaxPos));
  r.notes.push_back("The decoupled design (000 §4.4.2) leaves the content path unrotated, so W̃_QK,i is one constant, "
                    "and puts position in a separate d_r channel: `kvlab mla-absorb` shows that model absorbs exactly.");
  r.check = "rope-breaks-absorb";
  r.source = "000 §4.4.1";
  r.claim = "With RoPE on MLA's latent path the score is c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ, and the middle matrix changes "
            "with every s − t, so it cannot be absorbed once.";
  return r;
}

namespace {

class RopeBreaksAbsorb final : public Check {
 public:
  std::string name() const override { return "rope-breaks-absorb"; }
  std::string source() const override { return "000 §4.4.1"; }
  std::string summary() const override { return "RoPE on the MLA latent: W_UQ R_(s−t) W_UKᵀ changes with s − t"; }
  std::string derivation() const override {
    return "Put RoPE on the latent path: q = R_t W_UQ c_q and k = R_s W_UK c_j. Then\n"
           "  q · k = c_qᵀ W_UQᵀ R_tᵀ R_s W_UK c_j = c_qᵀ (W_UQᵀ R_{s-t} W_UK) c_j.\n"
           "The middle matrix depends on the distance s - t, so no single precomputed W_UQᵀ W_UK exists:\n"
           "absorbing would need one matrix per distance, i.e. K recomputed for every position.\n"
           "The check measures how far W_UQᵀ R_{s-t} W_UK moves as s - t changes (zero only without RoPE).\n"
           "Source: 000 §4.4.1.\n";
  }
  std::string description() const override {
    return "Checks the score identity (R_t q_C)·(R_s k_C) = c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ on an MLA\n"
           "mini-GPT's up-projections, then shows that the middle matrix differs from its value at\n"
           "s − t = 0 beyond rounding for every offset up to --max-delta (with the spread per offset).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--max-delta", opts_.max_delta, "Offsets s − t = 1 .. max-delta")->check(IntRange(1, kMaxDelta));
    sub.add_option("--pairs", opts_.pairs, "Random draws for the score identity")->check(IntRange(1, kMaxPairs));
    sub.add_option("--theta", opts_.theta, "RoPE base θ")->check(FiniteRange(2.0, 1e8));
  }
  Result run(const RunContext& ctx) override { return run_rope_breaks_absorb(opts_, ctx); }

 private:
  RopeBreaksAbsorbOptions opts_;
};

KVLAB_REGISTER_CHECK(130, RopeBreaksAbsorb);

}  // namespace
}  // namespace kvlab::checks
