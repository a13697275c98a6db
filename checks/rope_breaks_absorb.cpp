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
#include "reference/rope.hpp"

namespace kvlab::checks::rope_breaks_absorb {
namespace {

constexpr int kMaxDelta = 4096;
constexpr int kMaxPairs = 256;
constexpr int kMaxPos = 4096;
constexpr double u = 0x1.0p-53;

/// Error of one rotation entry at position p (angle p·θ^(−2i/d) rounded, then sin/cos): see
/// rope_relative.cpp.
double entry_error(double p) { return u * std::abs(p) + 2 * u; }

// Both sums of the identity are at most d_q + d_h + d_c + 2 long (2·n·u), and each rotation entry
// is off by e(p); Σ|terms| of either nesting ≤ mag (|R| has two entries ≤ 1 per row).
double identity_bound(const MlaConfig& c, const AbsorbIdentityDraw& d) {
  return (2.0 * (c.query_dim() + c.head_dim + c.kv_lora_rank + 2) * u +
          2 * (entry_error(d.t) + entry_error(d.s) + entry_error(d.s - d.t))) *
         d.mag;
}

// An entry of M is a d_h-term sum over pairs of R's entries (two ≤ 1 per row): rounding
// 2(d_h + 2)u plus the rotation's 2e(Δ), times √2·‖row of A‖‖row of B‖; ×2 because both
// M(Δ) and M(0) carry such an error.
double offset_threshold(const RopeBreaksAbsorbMeasured& m, int delta) {
  return (2.0 * (m.config.head_dim + 2) * u + 2 * entry_error(delta)) * std::sqrt(2.0) * m.row_a * m.row_b * 2;
}

// 1. The score identity, head by head, for random (t, s, c_Q, c_KV).
void measure_identity(RopeBreaksAbsorbMeasured& m, const MlaWeights<double>& w, const RopeFn& rope) {
  const MlaConfig& c = m.config;
  const int H = c.n_head, dh = c.head_dim, dq = c.query_dim(), dc = c.kv_lora_rank;
  Rng rng(m.seed + 2);
  for (int n = 0; n < m.options.pairs; ++n) {
    const int t = static_cast<int>(rng.uniform() * (kMaxPos + 1.0)), s = static_cast<int>(rng.uniform() * (kMaxPos + 1.0));
    Mat<double> cq(1, dq), ckv(1, dc);
    for (int i = 0; i < dq; ++i) cq(0, i) = rng.normal();
    for (int i = 0; i < dc; ++i) ckv(0, i) = rng.normal();
    Mat<double> q = cq * w.w_uq, k = ckv * w.w_uk;  // [1, H·d_h]
    rope(q, H, dh, t, m.options.theta);
    rope(k, H, dh, s, m.options.theta);
    const Mat<double> r_delta = reference::applied_rope_matrix(rope, dh, s - t, m.options.theta);
    for (int i = 0; i < H; ++i) {
      const Mat<double> a = w.w_uq.middleCols(i * dh, dh), b = w.w_uk.middleCols(i * dh, dh);
      const double lhs = q.row(0).segment(i * dh, dh).dot(k.row(0).segment(i * dh, dh));
      const double rhs = (cq * (a * r_delta * b.transpose()) * ckv.transpose())(0, 0);
      m.draws.push_back({.t = t, .s = s, .mag = std::sqrt(2.0) * cq.norm() * a.norm() * b.norm() * ckv.norm(),
                         .error = std::abs(lhs - rhs)});
    }
  }
}

// 2. M_i(Δ) against M_i(0), Δ = 1 .. max_delta.
void measure_offsets(RopeBreaksAbsorbMeasured& m, const MlaWeights<double>& w, const RopeFn& rope) {
  const int H = m.config.n_head, dh = m.config.head_dim;
  std::vector<Mat<double>> m0(H);
  for (int i = 0; i < H; ++i) m0[i] = w.w_uq.middleCols(i * dh, dh) * w.w_uk.middleCols(i * dh, dh).transpose();
  for (int i = 0; i < H; ++i) {
    m.row_a = std::max(m.row_a, w.w_uq.middleCols(i * dh, dh).rowwise().norm().maxCoeff());
    m.row_b = std::max(m.row_b, w.w_uk.middleCols(i * dh, dh).rowwise().norm().maxCoeff());
  }
  for (int delta = 1; delta <= m.options.max_delta; ++delta) {
    const Mat<double> rd = reference::applied_rope_matrix(rope, dh, delta, m.options.theta);
    AbsorbOffset off{.delta = delta};
    for (int i = 0; i < H; ++i) {
      const Mat<double> md = w.w_uq.middleCols(i * dh, dh) * rd * w.w_uk.middleCols(i * dh, dh).transpose();
      off.relative = nan_max(off.relative, (md - m0[i]).norm() / m0[i].norm());
      off.entry = nan_max(off.entry, max_abs(md - m0[i]));
    }
    m.offsets.push_back(off);
  }
}

void present(const RopeBreaksAbsorbMeasured& m, Result& r) {
  const MlaConfig& c = m.config;
  Table spread{"how far M_i(Δ) = W_UQ,i R_Δ W_UK,iᵀ moves from M_i(0) (the matrix absorption would precompute)",
               {"Δ = s − t", "max_i ‖M_i(Δ) − M_i(0)‖_F / ‖M_i(0)‖_F", "max entry |M(Δ) − M(0)|", "rounding threshold"}, {}};
  double min_rel = INFINITY, id_err = 0;
  for (const AbsorbOffset& off : m.offsets) {
    min_rel = std::min(min_rel, off.relative);
    const int delta = off.delta;
    if ((delta & (delta - 1)) == 0 || delta == m.options.max_delta)
      spread.rows.push_back({std::int64_t{delta}, off.relative, off.entry, offset_threshold(m, delta)});
  }
  for (const AbsorbIdentityDraw& d : m.draws) id_err = nan_max(id_err, d.error);
  r.metric("max_abs_diff_score_identity", id_err);
  r.metric("min_relative_spread", min_rel);
  r.tables.push_back(std::move(spread));
  r.notes.push_back(fmt::format("weights: layer 0 of the MLA mini-GPT ({} heads × d_h {}, d_c {}, d_q {}), θ = {}, "
                                "float64, seed {}; c_Q, c_KV ~ N(0, 1), t, s uniform in [0, {}]", c.n_head, c.head_dim,
                                c.kv_lora_rank, c.query_dim(), m.options.theta, m.seed, kMaxPos));
  r.notes.push_back("The decoupled design (000 §4.4.2) leaves the content path unrotated, so W̃_QK,i is one constant, "
                    "and puts position in a separate d_r channel: `kvlab mla-absorb` shows that model absorbs exactly.");
}

}  // namespace

RopeBreaksAbsorbMeasured measure_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                                                     const RopeBreaksAbsorbParts& parts) {
  const RopeFn rope = parts.rope ? parts.rope
                                 : RopeFn([](Mat<double>& x, int h, int d, int p, double th) { apply_rope(x, h, d, p, th); });
  RopeBreaksAbsorbMeasured m{.options = o, .seed = ctx.seed};  // config: mla-absorb's mini-GPT, 8 heads × d_h 8
  const MlaGPT<double> model(m.config, ctx.seed);
  const MlaWeights<double>& w = model.blocks()[0].mla;
  measure_identity(m, w, rope);
  measure_offsets(m, w, rope);
  return m;
}

std::vector<Expectation> judge_rope_breaks_absorb(const RopeBreaksAbsorbMeasured& m) {
  double id_err = 0, id_bound = 0;
  for (const AbsorbIdentityDraw& d : m.draws) {
    id_err = nan_max(id_err, d.error);
    id_bound = std::max(id_bound, identity_bound(m.config, d));
  }
  int differs = 0;
  for (const AbsorbOffset& off : m.offsets) differs += off.entry > offset_threshold(m, off.delta) ? 1 : 0;
  const RopeBreaksAbsorbOptions& o = m.options;
  Expectation identity{
      .quantity = fmt::format("max |(R_t q_C)·(R_s k_C) − c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ|, {} draws × {} heads", o.pairs,
                              m.config.n_head),
      .source = "000 §4.4.1", .unit = "", .expected = 0, .tolerance = id_bound,
      .why = "float64: (2(d_q + d_h + d_c + 2)u + 2(e_t + e_s + e_(s−t)))·√2‖c_Q‖‖W_UQ,i‖‖W_UK,i‖‖c_KV‖",
      .measured = id_err, .document = "q^RoPE·k^RoPE = c_Qᵀ W_UQᵀ R_(s−t) W_UK c_KV"};
  Expectation offsets{.quantity = fmt::format("offsets Δ in 1..{} where M_i(Δ) ≠ M_i(0) beyond rounding", o.max_delta),
                      .source = "000 §4.4.1", .unit = "offsets", .expected = double(o.max_delta), .tolerance = 0,
                      .why = "integer count: every offset needs its own matrix", .measured = double(differs),
                      .document = "不是常数！依赖 (s−t)"};
  return {identity, offsets};
}

const CheckDef<RopeBreaksAbsorbOptions, RopeBreaksAbsorbMeasured>& rope_breaks_absorb_check() {
  static const CheckDef<RopeBreaksAbsorbOptions, RopeBreaksAbsorbMeasured> def{
      .spec = {.name = "rope-breaks-absorb",
               .order = 130,
               .source = "000 §4.4.1",
               .summary = "RoPE on the MLA latent: W_UQ R_(s−t) W_UKᵀ changes with s − t",
               .claim_zh = "在 MLA 潜向量上直接加 RoPE：W_UQ R_(s−t) W_UKᵀ 随 s − t 变化，无法吸收",
               .description =
                   "Checks the score identity (R_t q_C)·(R_s k_C) = c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ on an MLA\n"
                   "mini-GPT's up-projections, then shows that the middle matrix differs from its value at\n"
                   "s − t = 0 beyond rounding for every offset up to --max-delta (with the spread per offset).",
               .derivation =
                   "Put RoPE on the latent path: q = R_t W_UQ c_q and k = R_s W_UK c_j. Then\n"
                   "  q · k = c_qᵀ W_UQᵀ R_tᵀ R_s W_UK c_j = c_qᵀ (W_UQᵀ R_{s-t} W_UK) c_j.\n"
                   "The middle matrix depends on the distance s - t, so no single precomputed W_UQᵀ W_UK exists:\n"
                   "absorbing would need one matrix per distance, i.e. K recomputed for every position.\n"
                   "The check measures how far W_UQᵀ R_{s-t} W_UK moves as s - t changes (zero only without RoPE).\n"
                   "Source: 000 §4.4.1.\n",
               .claim = "With RoPE on MLA's latent path the score is c_Q W_UQ R_(s−t) W_UKᵀ c_KVᵀ, and the middle "
                        "matrix changes with every s − t, so it cannot be absorbed once."},
      .options = {{"--max-delta", &RopeBreaksAbsorbOptions::max_delta, Allowed::integers(1, kMaxDelta),
                   "Offsets s − t = 1 .. max-delta"},
                  {"--pairs", &RopeBreaksAbsorbOptions::pairs, Allowed::integers(1, kMaxPairs),
                   "Random draws for the score identity"},
                  {"--theta", &RopeBreaksAbsorbOptions::theta, Allowed::reals(2.0, 1e8), "RoPE base θ"}},
      .measure = [](const RopeBreaksAbsorbOptions& o, const RunContext& ctx) { return measure_rope_breaks_absorb(o, ctx); },
      .judge = judge_rope_breaks_absorb,
      .present = present};
  return def;
}

Result run_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                              const RopeBreaksAbsorbParts& parts) {
  return run_check(rope_breaks_absorb_check(), o, ctx, [&parts](const RopeBreaksAbsorbOptions& opts, const RunContext& c) {
    return measure_rope_breaks_absorb(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(rope_breaks_absorb_check);

}  // namespace kvlab::checks::rope_breaks_absorb
