// mla-decoupled — 000 §4.4.2 (and the MLA module of §6.3): the decoupled RoPE channel restores absorption.
//
// Claim: DeepSeek-V2 gives RoPE its own small channel: k_R = RoPE_t(h W_KR) ∈ R^{d_r}, shared by all
// heads and cached beside c_KV, and a per-head q_R. The score is two parts,
//   q_i·k_i = [q_C,i; q_R,i]·[k_C,i; k_R] = c_Q W̃_QK,i c_KVᵀ (one constant matrix) + q_R,i·k_R,
// so the content part absorbs again, and a cache of d_c + d_r per token is enough for exact decode.
// kvlab checks on an MLA mini-GPT:
//   1. the score split for --pairs random positions and hidden states (concatenated vs absorbed);
//   2. decoding with the cache (absorbed path) equals one full forward (naive path);
//   3. what that cache stored per token per layer: d_c + d_r (one k_R for all heads, not H·d_r).
// Expected: 1, 2 zero within float64 rounding bounds (stated per row); 3 exact.
//
//   kvlab mla-decoupled [--prefill 8] [--decode 8] [--pairs 32]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "support/mla_rounding.hpp"
#include "checks/mla_decoupled.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::mla_decoupled {
namespace {

constexpr int kMaxTokens = 64;
constexpr int kMaxPairs = 256;
constexpr int kMaxPos = 4096;
constexpr double u = 0x1.0p-53;

// 1. The score split, head by head, for random positions and hidden states.
void measure_split(MlaDecoupledMeasured& m, const MlaWeights<double>& w, const MlaAbsorbed<double>& a) {
  const MlaConfig& c = m.config;
  const int H = c.n_head, dh = c.head_dim, dr = c.rope_head_dim;
  Rng rng(m.seed + 2);
  for (int n = 0; n < m.options.pairs; ++n) {
    const int t = static_cast<int>(rng.uniform() * (kMaxPos + 1.0)), s = static_cast<int>(rng.uniform() * (kMaxPos + 1.0));
    Mat<double> ht(1, c.d_model), hs(1, c.d_model);
    for (int i = 0; i < c.d_model; ++i) ht(0, i) = rng.normal();
    for (int i = 0; i < c.d_model; ++i) hs(0, i) = rng.normal();
    const Mat<double> cq = ht * w.w_dq, ckv = hs * w.w_dkv;
    Mat<double> q_r = cq * w.w_qr, k_r = hs * w.w_kr;  // [1, H·d_r], [1, d_r]
    apply_rope(q_r, H, dr, t, c.rope_theta);
    apply_rope(k_r, 1, dr, s, c.rope_theta);
    const Mat<double> q_c = cq * w.w_uq, k_c = ckv * w.w_uk;  // [1, H·d_h]
    for (int i = 0; i < H; ++i) {
      Vec<double> q(dh + dr), k(dh + dr);  // q_i, k_i ∈ R^{d_h + d_r}: [content; RoPE]
      q << q_c.row(0).segment(i * dh, dh).transpose(), q_r.row(0).segment(i * dr, dr).transpose();
      k << k_c.row(0).segment(i * dh, dh).transpose(), k_r.row(0).transpose();
      const double concat = q.dot(k);
      const double content = (cq * a.w_qk[i] * ckv.transpose())(0, 0);
      const double rope = q_r.row(0).segment(i * dr, dr).dot(k_r.row(0));
      // Σ|terms| ≤ ‖c_Q‖‖W_UQ,i‖_F‖W_UK,i‖_F‖c_KV‖ + ‖q_R,i‖‖k_R‖ (Cauchy-Schwarz).
      const double mag = cq.norm() * w.w_uq.middleCols(i * dh, dh).norm() * w.w_uk.middleCols(i * dh, dh).norm() *
                             ckv.norm() + q_r.row(0).segment(i * dr, dr).norm() * k_r.norm();
      m.split.push_back({.mag = mag, .error = std::abs(concat - (content + rope))});
    }
  }
}

// 2. Cached decode through the absorbed path against one full naive forward, and what the cache wrote.
void measure_decode(MlaDecoupledMeasured& m, const MlaGPT<double>& model) {
  const MlaDecoupledOptions& o = m.options;
  const int total = o.prefill + o.decode;
  const auto ids = random_tokens(m.seed + 1, total, m.config.vocab_size);
  LatentCache<double> full_cache = model.make_cache(total), cache = model.make_cache(total);
  const Mat<double> full = model.forward(ids, 0, full_cache, MlaPath::naive);
  Mat<double> inc(total, m.config.vocab_size);
  inc.topRows(o.prefill) = model.forward(std::span(ids).first(o.prefill), 0, cache, MlaPath::absorbed);
  for (int t = o.prefill; t < total; ++t)
    inc.row(t) = model.forward(std::span(ids).subspan(t, 1), t, cache, MlaPath::absorbed);
  m.diff = max_abs(inc - full);
  m.max_logit = max_abs(full);
  m.cache_elements = cache.elements_written();
}

double split_error(const MlaDecoupledMeasured& m) {
  double e = 0;
  for (const ScoreSplitDraw& d : m.split) e = nan_max(e, d.error);
  return e;
}

void present(const MlaDecoupledMeasured& m, Result& r) {
  const MlaConfig& c = m.config;
  const int H = c.n_head, dh = c.head_dim, dr = c.rope_head_dim, dq = c.query_dim(), dc = c.kv_lora_rank;
  Table shapes{"shapes in the mini-GPT (000 §4.4.2; notation: E26)", {"quantity", "shape", "note"}, {}};
  shapes.rows.push_back({std::string("q_i, k_i"), fmt::format("d_h + d_r = {} + {}", dh, dr), std::string("[content; RoPE]")});
  shapes.rows.push_back({std::string("W_KR"), fmt::format("[{}, {}] (x W)", c.d_model, dr),
                         std::string("000 writes R^{D×d_r} but applies it as W·h_t: R^{d_r×D} (E26)")});
  shapes.rows.push_back({std::string("W_QR (all heads)"), fmt::format("[{}, {}·{}]", dq, H, dr),
                         std::string("000 writes R^{d_c'×d_r} per head: R^{d_r×d_c'} as applied (E26)")});
  shapes.rows.push_back({std::string("cache per token per layer"), fmt::format("{} + {}", dc, dr),
                         fmt::format("a per-head RoPE key would be {} + {}·{}", dc, H, dr)});
  r.tables.push_back(std::move(shapes));
  r.metric("max_abs_diff_score_split", split_error(m));
  r.metric("max_abs_diff_logits", m.diff);
  r.notes.push_back(fmt::format("mini-GPT: {} layers, D {}, {} heads × d_h {}, d_c {}, d_q {}, d_r {}, float64, seed {}",
                                c.n_layer, c.d_model, H, dh, dc, dq, dr, m.seed));
}

}  // namespace

MlaDecoupledMeasured measure_mla_decoupled(const MlaDecoupledOptions& o, const RunContext& ctx,
                                           const MlaDecoupledParts& parts) {
  MlaDecoupledMeasured m{.options = o, .seed = ctx.seed};
  MlaGPT<double> model(m.config, ctx.seed);
  if (parts.absorb)
    for (int l = 0; l < m.config.n_layer; ++l) model.absorbed()[l] = parts.absorb(model.blocks()[l].mla, m.config);
  measure_split(m, model.blocks()[0].mla, model.absorbed()[0]);
  measure_decode(m, model);
  return m;
}

std::vector<Expectation> judge_mla_decoupled(const MlaDecoupledMeasured& m) {
  const MlaConfig& c = m.config;
  const MlaDecoupledOptions& o = m.options;
  const int dh = c.head_dim, dr = c.rope_head_dim, dq = c.query_dim(), dc = c.kv_lora_rank;
  // Both sides of the split sum at most d_q + d_h + d_c + d_r + 2 terms in sequence: 2·n·u·Σ|terms|.
  double split_bound = 0;
  for (const ScoreSplitDraw& d : m.split) split_bound = std::max(split_bound, 2.0 * (dq + dh + dc + dr + 2) * u * d.mag);
  const int total = o.prefill + o.decode;
  const double n = mla_reduction_length(c, total);
  Expectation split{.quantity = fmt::format("max |[q_C; q_R]·[k_C; k_R] − (c_Q W̃_QK c_KVᵀ + q_R·k_R)|, {} draws × {} heads",
                                            o.pairs, c.n_head),
                    .source = "000 §4.4.2", .unit = "", .expected = 0, .tolerance = split_bound,
                    .why = "float64: 2·n·u·Σ|terms|, n = d_q + d_h + d_c + d_r + 2, Σ|terms| by Cauchy-Schwarz",
                    .measured = split_error(m), .document = "score = latent (absorb) + RoPE (standard dot)"};
  Expectation logits{
      .quantity = fmt::format("max |Δlogits|, prefill {} + decode {} (absorbed, cached) vs one full forward (naive)",
                              o.prefill, o.decode),
      .source = "000 §4.4.2, §6.3", .unit = "", .expected = 0, .tolerance = 2 * n * u * std::max(1.0, m.max_logit),
      .why = fmt::format("rounding: 2·n·u·max(1, |logit|), n = {} summed terms (mla-absorb)", n),
      .measured = m.diff, .document = "MLA module caches only c_kv and k_r"};
  Expectation cache{.quantity = "cache elements per token per layer (c_KV + one shared k_R)",
                    .source = "000 §4.4.2, §4.4.3", .unit = "elements", .expected = double(dc + dr), .tolerance = 0,
                    .why = "integer count", .measured = double(m.cache_elements) / (double(total) * c.n_layer),
                    .document = "k_t^R 在所有 head 间共享"};
  return {split, logits, cache};
}

const CheckDef<MlaDecoupledOptions, MlaDecoupledMeasured>& mla_decoupled_check() {
  static const CheckDef<MlaDecoupledOptions, MlaDecoupledMeasured> def{
      .spec = {.name = "mla-decoupled",
               .order = 140,
               .source = "000 §4.4.2, §6.3",
               .summary = "decoupled RoPE: score = absorbed content + RoPE dot; cached = full",
               .claim_zh = "解耦 RoPE：分数 = 吸收后的内容项 + RoPE 点积；缓存版与完整计算一致",
               .description =
                   "On an MLA mini-GPT with a decoupled RoPE channel: checks the score split\n"
                   "[q_C; q_R]·[k_C; k_R] = c_Q W̃_QK c_KVᵀ + q_R·k_R, that absorbed cached decode equals one\n"
                   "full naive forward, and that the cache holds d_c + d_r per token per layer.",
               .derivation =
                   "DeepSeek-V2 splits each head's query and key into a part without RoPE, computed from the latent\n"
                   "(absorbable), and a small RoPE part: q_R^h (d_r per head) and one k_R (d_r) shared by all heads,\n"
                   "cached beside c_KV. The score is the sum\n"
                   "  c_qᵀ (W_UQ^hᵀ W_UK^h) c_j  +  (R_t q_R^h) · (R_s k_R,j):\n"
                   "the first term absorbs as in mla-absorb; the second is taken directly on the cached k_R, whose\n"
                   "RoPE is applied once when it is written. Naive and absorbed paths agree again to float rounding.\n"
                   "Source: 000 §4.4.2.\n",
               .claim = "With a decoupled RoPE channel (k_R shared by all heads, q_R per head) the score is a constant "
                        "absorbed content term plus a RoPE dot product; decoding from a cache of d_c + d_r per token "
                        "equals the full forward."},
      .options = {{"--prefill", &MlaDecoupledOptions::prefill, Allowed::integers(1, kMaxTokens), "Prompt tokens"},
                  {"--decode", &MlaDecoupledOptions::decode, Allowed::integers(0, kMaxTokens),
                   "Tokens decoded one at a time"},
                  {"--pairs", &MlaDecoupledOptions::pairs, Allowed::integers(1, kMaxPairs),
                   "Random draws for the score split"}},
      .measure = [](const MlaDecoupledOptions& o, const RunContext& ctx) { return measure_mla_decoupled(o, ctx); },
      .judge = judge_mla_decoupled,
      .present = present};
  return def;
}

Result run_mla_decoupled(const MlaDecoupledOptions& o, const RunContext& ctx, const MlaDecoupledParts& parts) {
  return run_check(mla_decoupled_check(), o, ctx, [&parts](const MlaDecoupledOptions& opts, const RunContext& c) {
    return measure_mla_decoupled(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(mla_decoupled_check);

}  // namespace kvlab::checks::mla_decoupled
