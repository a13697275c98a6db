// roofline — why decoding is memory-bound: intensity, step time and the tokens/s bound (004 §1.5
// group 5; 000 §1.1, §3.1; 003 Q6). One decode step reads every weight once and each sequence's KV
// cache; its time is max(bytes / bandwidth, FLOPs / peak). With no options the course's table;
// with only a device the course's 7B on it; with --model or --config one step of any model,
// mixtures of experts included. Every step is judged against the check's own arithmetic
// (recompute, below: nothing of lib/cost), with tolerances from the roundings of both paths.
//
//   kvlab roofline                                     the course's table
//   kvlab roofline --model mixtral-8x7b --batch 16 --ctx 1024
//   kvlab roofline --config path/to/config.json --gpu h100-sxm --batch 64 --kv-dtype fp8
//   kvlab roofline --bandwidth 936GB/s --peak-flops 71TFLOPS
//   kvlab roofline --model llama-3-70b --gpu h100-sxm --tp 4 --batch 16
#include "roofline.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "cost/kv_cache.hpp"
#include "cost/tensor_parallel.hpp"
#include "io/hardware.hpp"
#include "report/writers.hpp"
#include "support/cost_common.hpp"
#include "core/numerics.hpp"
#include "reference/roofline.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks::roofline {
namespace {

// The contract's roofline metrics (JSON keys programs outside kvlab read): intensity, tokens_per_s, ridge, kv_bytes, weight_bytes.
void add_step_metrics(Result& r, const DecodeStep& s) {
  r.metric("intensity", s.intensity);
  r.metric("tokens_per_s", s.tokens_per_s);
  r.metric("ridge", s.ridge);
  r.metric_exact("kv_bytes", s.kv_bytes);
  r.metric("weight_bytes", s.weight_bytes);
}

constexpr const char* kClaim =
    "A decode step reads all weights and every sequence's KV cache for about 2 FLOPs per weight "
    "per sequence: on an A100-80GB (ridge ≈ 153 FLOP/B) a 7B model at batch 1 has intensity ≈ 1 "
    "and is bandwidth-bound at ≈ 140 tok/s; batch 8 lifts the bound to 892 tok/s; at batch 64 × "
    "4096 the KV cache (128 GiB) outweighs the weights (13 GiB) and intensity falls back to 6.8.";

constexpr const char* kDefaultGpu = premises::kGpu;
constexpr std::uint64_t kDefaultBatch = 1;
constexpr std::uint64_t kDefaultCtx = 4096;
constexpr double kDefaultWeightBytes = premises::kBytesPerParam;

// The course's "7B" is a round N = 7e9 parameters (an assumption that reproduces 004 §1.5's
// figures; llama-2-7b's true count, from the catalogue, is shown beside it).
constexpr double kCourseParams = premises::kParams7b;

// ---- the check's own arithmetic ------------------------------------------------------------
//
// The expectations compare the library's DecodeStep with a recomputation written out here from
// the config fields, the catalogue's kv_bytes_per_token_16bit (data/facts.md), the MoE figures and the
// GPU's datasheet rates. It calls nothing of lib/cost, so a wrong formula in decode_step disagrees
// with it. What it shares with the library is the model (004 §1.5's FLOP and byte count, and for
// MoE the uniform-routing model of lib/cost/roofline.hpp), not the code.
//
// Tolerances. Both paths compute in double and may differ by rounding only. With u = 2^-53, a
// quantity built from positive terms through n roundings is within γ_n = n·u / (1 − n·u) of its
// exact value (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1), so two
// paths with n₁ and n₂ roundings differ by at most γ_{n₁+n₂}; one more rounding is counted for
// scaling that bound by the computed rather than the exact value. The counts are beside the code.

/// The unit roundoff of double, 2^-53 (γ_n is core/numerics.hpp's gamma_n).
constexpr double kU = unit_roundoff<double>();

// FLOPs. Check (reference::decode_flops): B and the positions to double (2); the FLOPs per
// position, 4·H·d_h or MLA's 2·H·(d_c + d_r) + 2·H·d_c, are small integers and exact (0);
// B·positions and ·per-position (2); 2·N_used exact, ·B (1); the total (1): 6, at most 8 as
// counted for the check's earlier form. decode_step: the exact attention count to double (1), B to
// double (1), the product (1), 2·N_used·B (1 more), the total (1): at most 5 with B's conversion
// counted twice. Plus 1: 14.
constexpr int kFlopRounds = 14;
// Weight bytes, dense: N × bytes/param, 1 rounding per path, plus 1.
constexpr int kDenseWeightRounds = 3;
// Weight bytes, MoE worst case: min(N, B·N_active) × bytes/param, B to double, the product and the
// scaling per path (3 + 3), plus 1.
constexpr int kWorstCaseWeightRounds = 7;
// Bytes: the KV count to double and the sum, per path (2 + 2), plus 1; the weights' bound is added.
constexpr int kBytesRounds = 5;
// A time: bytes / bandwidth or FLOPs / peak, 1 per path, plus 1; ms: × 1e3 on both sides, 2 more.
constexpr int kTimeRounds = 5;
// Tokens/s: B to double and B / time, per path (2 + 2), plus 1.
constexpr int kRateRounds = 5;

/// Parameters read by a uniform-routing MoE step (lib/cost/roofline.hpp's model) computed the
/// check's way, with a bound on its difference from the library's, in parameters.
///   both:    P_e = (N − N_active) / (E − k)                        2 roundings
///   check:   S = N − E·P_e                    library: S = N_active − k·P_e
///            (E·P_e carries γ_3 of E·P_e <= N into S)     (k·P_e carries γ_3 of k·P_e)
///   check:   D = E·(1 − powl(1 − k/E, B))     library: D = −E·expm1(B·log1p(−k/E))
///            in long double, rounded to double
///   N_read = S + D·P_e                                            D·P_e: γ_3; the sum: u
/// D's bounds, with p = k/E, q = 1 − p and libm's pow, log1p, expm1 each counted as 2 roundings:
///   check:   1 − k/E is off by u_L·(1 + p/q) relative (u_L, long double's unit roundoff), and the
///            power raises that B-fold: |ΔD| <= E·u_L·(q^B·(B·(1 + p/q) + 2) + 2) + u·D. In double
///            the B-fold growth would cost 1e-7 relative at E = 2e9, k = 1, B = 1e9.
///   library: log1p(−p) carries p's rounding scaled by p / (q·ln(1/q)), plus 2 of its own and 1
///            for the product with B; expm1 turns a relative error ε of x = B·ln q into
///            e^x·|x|·ε, plus 2: |ΔD| <= E·u·(q^B·B·ln(1/q)·(p / (q·ln(1/q)) + 3) + 2 + 2)
struct MoeRecomputed {
  double params_read = 0.0;
  double tolerance = 0.0;  ///< |check − library| bound, parameters
  double shared = 0.0, per_expert = 0.0, experts_touched = 0.0;
};

MoeRecomputed moe_recomputed(double n, double active, std::uint64_t experts, std::uint64_t per_token,
                             std::uint64_t batch) {
  MoeRecomputed out;
  const double e = static_cast<double>(experts), k = static_cast<double>(per_token);
  const double b = static_cast<double>(batch);
  const double pe = (n - active) / (e - k);
  const double shared = n - e * pe;
  const double p = k / e, q = 1.0 - p;
  const long double q_long = 1.0L - static_cast<long double>(per_token) / static_cast<long double>(experts);
  const double qb = static_cast<double>(std::pow(q_long, static_cast<long double>(batch)));
  const double d = static_cast<double>(static_cast<long double>(experts) *
                                       (1.0L - std::pow(q_long, static_cast<long double>(batch))));
  out.shared = shared;
  out.per_expert = pe;
  out.experts_touched = d;
  out.params_read = shared + d * pe;
  const double ln_inv_q = -std::log(q);
  constexpr double kULong = static_cast<double>(std::numeric_limits<long double>::epsilon()) / 2;
  const double d_err_check = e * kULong * (qb * (b * (1.0 + p / q) + 2.0) + 2.0) + kU * d;
  const double d_err_library = e * kU * (qb * b * ln_inv_q * (p / (q * ln_inv_q) + 3.0) + 4.0);
  const double v = std::abs(out.params_read);
  out.tolerance = gamma_n(3) * e * pe + gamma_n(3) * k * pe + 2.0 * kU * std::abs(shared) +
                  (d_err_check + d_err_library) * pe + 2.0 * gamma_n(3) * d * pe + 3.0 * kU * v;
  return out;
}

/// One decode step recomputed by the check, with the bound of each quantity's difference from the
/// library's (the tolerances above).
struct Recomputed {
  double flops = 0.0, flops_tol = 0.0;
  double params_used = 0.0;            ///< N or N_active
  double params_read = 0.0;            ///< N_read
  double weight_bytes = 0.0, weight_tol = 0.0;
  std::string weight_why;
  std::uint64_t kv_bytes = 0;          ///< exact
  bool kv_reference = false;           ///< from the catalogue's kv_bytes_per_token_16bit
  double bytes = 0.0, bytes_tol = 0.0;
  double time_memory_s = 0.0, time_compute_s = 0.0, tol_memory_s = 0.0, tol_compute_s = 0.0;
  double time_s = 0.0, time_tol_s = 0.0;
  double tokens_per_s = 0.0, tokens_tol = 0.0;
  double intensity = 0.0, intensity_tol = 0.0;
  Bound bound = Bound::memory;
  bool bound_tie = false;  ///< the two times are within their bounds: either bound is right
};

/// The KV bytes of `q`'s step by the check's own count: the catalogue's reference scaled to the
/// cache dtype (`from_reference` set), or for a config without one 2·L·n_kv·head_dim (MLA:
/// L·(d_c + d_r)) elements on the config fields; per layer at the positions it holds.
std::uint64_t recompute_kv_bytes(const ModelSpec& m, const DecodeQuery& q, bool& from_reference) {
  // KV bytes: the reference is K+V bytes per token at 16 bits, so ref·bits/2 bits per token.
  const std::uint64_t bits = cache_dtype_bits(q.kv.dtype);
  std::uint64_t bits_per_token = 0;
  if (m.kv_bytes_per_token_16bit) {
    from_reference = true;
    bits_per_token = checked_mul(*m.kv_bytes_per_token_16bit, bits, "kv_bytes_per_token_16bit") / 2;
  } else {
    const std::string what = "KV bits per token (num_hidden_layers × K/V width × bits)";
    const std::uint64_t width = m.is_mla() ? *m.kv_lora_rank + *m.qk_rope_head_dim
                                           : checked_mul(2 * m.n_kv_head, m.head_dim, what);
    bits_per_token = checked_mul(checked_mul(held_by_layer(m, 1).attention_layers, width, what), bits, what);
  }
  // Positions the layers hold at ctx, counted layer by layer from the config's layer list: a
  // sliding window or a chunk keeps min(ctx, span), an attention-free layer nothing (docs/design.md,
  // layer groups). Each attention layer caches bits_per_token / (attention layers) per position.
  const HeldByLayer by_layer = held_by_layer(m, q.kv.ctx);
  const std::uint64_t attention_layers = by_layer.attention_layers, held = by_layer.positions;
  if (attention_layers > 0 && bits_per_token % attention_layers != 0)
    throw InputError(fmt::format("model {}: the KV reference ({} bits per token) does not divide "
                                 "evenly over its {} attention layers", m.name, bits_per_token,
                                 attention_layers));
  const std::uint64_t bits_per_layer = attention_layers ? bits_per_token / attention_layers : 0;
  const std::uint64_t total_bits = checked_mul(
      checked_mul(q.kv.batch, held, "--batch × positions held"), bits_per_layer,
      "--batch × --ctx × kv_bytes_per_token_16bit");
  return total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);
}

/// `m`'s decode step for `q` on `g`, by the check's own arithmetic (see above). KV bytes per token
/// come from the catalogue's reference scaled to the cache dtype, or, for a config without one,
/// from 2·L·n_kv·head_dim (MLA: L·(d_c + d_r)) elements on the config fields. Throws InputError
/// when the reference scaled to B·ctx overflows 64 bits.
Recomputed recompute(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  Recomputed c;
  const double b = static_cast<double>(q.kv.batch), heads = static_cast<double>(m.n_head);

  // Weights: dense N; MoE N_active per token, N_read as above.
  c.params_used = q.moe ? q.moe->active_params : q.n_params;
  if (!q.moe || c.params_used == q.n_params) {
    c.params_read = q.n_params;
    c.weight_bytes = c.params_read * q.bytes_per_param;
    c.weight_tol = gamma_n(kDenseWeightRounds) * c.weight_bytes;
    c.weight_why = fmt::format("N × bytes/param in double on both paths: γ_{} relative",
                               kDenseWeightRounds);
  } else if (q.moe->experts && *q.moe->experts > *q.moe->experts_per_token) {
    const MoeRecomputed mr = moe_recomputed(q.n_params, c.params_used, *q.moe->experts,
                                            *q.moe->experts_per_token, q.kv.batch);
    c.params_read = mr.params_read;
    c.weight_bytes = c.params_read * q.bytes_per_param;
    c.weight_tol = mr.tolerance * q.bytes_per_param + 2.0 * kU * c.weight_bytes;
    c.weight_why = "rounding bound of S + D(B)·P_e on both paths (pow vs log1p/expm1 for D), "
                   "computed from the values: moe_recomputed in checks/roofline.cpp";
  } else {
    c.params_read = std::min(q.n_params, b * c.params_used);
    c.weight_bytes = c.params_read * q.bytes_per_param;
    c.weight_tol = gamma_n(kWorstCaseWeightRounds) * c.weight_bytes;
    c.weight_why = fmt::format("min(N, B·N_active) × bytes/param in double on both paths: γ_{} "
                               "relative", kWorstCaseWeightRounds);
  }

  // FLOPs: 2·N_used·B + 4·B·ctx·L·H·head_dim, or MLA's absorbed 2·(d_c + d_r) + 2·d_c per position.
  // Positions the layers attend to, layer by layer from the config's list (windows and chunks
  // hold min(ctx, span), attention-free layers none); ctx · L when every layer attends fully.
  // Per (layer, position) FLOPs and the step's total by reference/roofline.hpp (exact integers
  // below 2^53 at any realistic shape, so the order of the products does not move a digit).
  const double positions = static_cast<double>(held_by_layer(m, q.kv.ctx).positions);
  const double per_position =
      m.is_mla() ? reference::mla_attention_flops_per_position(heads, static_cast<double>(*m.kv_lora_rank),
                                                               static_cast<double>(*m.qk_rope_head_dim))
                 : reference::attention_flops_per_position(heads, static_cast<double>(m.head_dim));
  c.flops = reference::decode_flops(c.params_used, b, positions, per_position);
  c.flops_tol = gamma_n(kFlopRounds) * c.flops;

  c.kv_bytes = recompute_kv_bytes(m, q, c.kv_reference);

  c.bytes = c.weight_bytes + static_cast<double>(c.kv_bytes);
  c.bytes_tol = c.weight_tol + gamma_n(kBytesRounds) * c.bytes;
  c.intensity = c.flops / c.bytes;
  // flops/bytes: the two relative bounds, plus the division on both paths and 1.
  const double rf = c.flops_tol / c.flops, rb = c.bytes_tol / c.bytes;
  c.intensity_tol = c.intensity * ((rf + rb) / (1.0 - rb) + gamma_n(3));

  c.time_memory_s = c.bytes / g.bandwidth_bytes_per_s;
  c.time_compute_s = c.flops / g.bf16_flops_per_s;
  c.tol_memory_s = c.bytes_tol / g.bandwidth_bytes_per_s + gamma_n(kTimeRounds) * c.time_memory_s;
  c.tol_compute_s = c.flops_tol / g.bf16_flops_per_s + gamma_n(kTimeRounds) * c.time_compute_s;
  c.bound = c.time_memory_s >= c.time_compute_s ? Bound::memory : Bound::compute;
  c.bound_tie = std::abs(c.time_memory_s - c.time_compute_s) <= c.tol_memory_s + c.tol_compute_s;
  c.time_s = std::max(c.time_memory_s, c.time_compute_s);
  c.time_tol_s = std::max(c.tol_memory_s, c.tol_compute_s);  // max() is 1-Lipschitz
  c.tokens_per_s = b / c.time_s;
  const double rt = c.time_tol_s / c.time_s;
  c.tokens_tol = c.tokens_per_s * (rt / (1.0 - rt) + gamma_n(kRateRounds));
  return c;
}

/// The expectation that the library's step time equals the recomputation's.
Expectation time_expectation(const std::string& what, const std::string& source, const DecodeStep& s,
                             const Recomputed& c) {
  Expectation e{
      fmt::format("decode step time, {}: library vs the check's own arithmetic", what), source, "ms",
      c.time_s * 1e3, c.time_tol_s * 1e3,
      fmt::format("rounding only: the bytes (or FLOPs) bound / the rate, + γ_{} (division and × 1e3 "
                  "on both paths); u = 2^-53", kTimeRounds),
      s.time_s * 1e3, std::nullopt,
      c.kv_reference ? "KV bytes from the catalogue's kv_bytes_per_token_16bit (data/facts.md)"
                     : "KV bytes from the config fields (no independent reference)"};
  e.cross_check = true;  // kvlab checking itself, not a claim of the documents
  return e;
}

/// The expectation that the library's intensity equals the recomputation's.
Expectation intensity_expectation(const std::string& what, const std::string& source,
                                  const DecodeStep& s, const Recomputed& c) {
  Expectation e{
      fmt::format("arithmetic intensity, {}: library vs the check's own arithmetic", what), source,
      "FLOP/B", c.intensity, c.intensity_tol,
      fmt::format("rounding only: the FLOPs bound (γ_{}) + the bytes bound, relative, + γ_3 for the "
                  "division", kFlopRounds),
      s.intensity, std::nullopt, ""};
  e.cross_check = true;  // kvlab checking itself, not a claim of the documents
  return e;
}

/// A human line for where decode turns compute-bound.
std::string compute_bound_text(const ComputeBoundBatch& cb, double ridge) {
  if (!cb.reachable)
    return fmt::format("never: intensity only tends to {:.4g} FLOP/B < ridge {:.4g} as the batch "
                       "grows, because the KV bytes grow with the batch as fast as the FLOPs",
                       cb.intensity_limit, ridge);
  return fmt::format("from batch {} (B* = {:.4g}; intensity tends to {:.4g} FLOP/B)", cb.min_batch,
                     cb.batch, cb.intensity_limit);
}

/// The classic roofline of `g` (attainable TFLOP/s = min(bf16 peak, intensity × bandwidth),
/// log-log) with the decode steps as operating points at (intensity, FLOPs / step time).
Plot roofline_plot(const GpuSpec& g, const std::vector<std::pair<std::string, DecodeStep>>& points) {
  Plot p{fmt::format("roofline, {}: decode steps against the roof", g.name), "arithmetic intensity (FLOP/B)",
         "attainable TFLOP/s", true, true, {}};
  PlotSeries roof{fmt::format("roof (ridge {:.4g} FLOP/B)", ridge_flops_per_byte(g)), {}, {}, "lines"};
  for (double i = 0.1; i <= 1e4 * 1.0001; i *= std::pow(10.0, 0.05)) {
    roof.x.push_back(i);
    roof.y.push_back(std::min(g.bf16_flops_per_s, i * g.bandwidth_bytes_per_s) / 1e12);
  }
  p.series.push_back(std::move(roof));
  for (const auto& [label, s] : points)
    p.series.push_back({label, {s.intensity}, {s.flops / s.time_s / 1e12}, "labeled"});  // named beside the point
  return p;
}

// ---- with no options: 004 §1.5's table, and 000 §1.1, §3.1, 003 Q6 -----------------------------

DecodeQuery course_query(double n, std::uint64_t b, std::uint64_t ctx) {
  return DecodeQuery{n, kDefaultWeightBytes, KvQuery{b, ctx, CacheDtype::bf16, {}}};
}

RooflineCourse measure_course(const RooflineParts& parts) {
  RooflineCourse c;
  c.m7 = parts.load_model(premises::kModel7b);
  c.a100 = parts.load_gpu(kDefaultGpu);
  c.q1 = course_query(kCourseParams, 1, 1024), c.q8 = course_query(kCourseParams, 8, 1024);
  c.q64 = course_query(kCourseParams, 64, 4096);
  c.s1 = parts.decode_step(c.m7, c.a100, c.q1);
  c.s8 = parts.decode_step(c.m7, c.a100, c.q8);
  c.s64 = parts.decode_step(c.m7, c.a100, c.q64);
  if (const double true_params = static_cast<double>(c.m7.num_parameters.value_or(0)); true_params > 0)
    for (const DecodeQuery* q : {&c.q1, &c.q8, &c.q64}) {
      DecodeQuery qt = *q;
      qt.n_params = true_params;
      c.true_rows.emplace_back(qt, parts.decode_step(c.m7, c.a100, qt));
    }
  for (std::uint64_t ctx : {std::uint64_t{1024}, std::uint64_t{4096}, std::uint64_t{128}})
    c.compute_bound.emplace_back(ctx, compute_bound_batch(c.m7, c.a100, course_query(kCourseParams, 1, ctx)));
  for (const auto& name : gpu_names()) c.gpus.push_back(parts.load_gpu(name));
  // 000 §1.1: 70B at batch 1 on H100s (tensor parallelism splits FLOPs and bytes alike).
  c.m70 = parts.load_model("llama-3-70b");
  c.h100 = parts.load_gpu("h100-sxm");
  c.s70 = parts.decode_step(c.m70, c.h100, DecodeQuery{70e9, kDefaultWeightBytes, KvQuery{1, 4096, CacheDtype::bf16, {}}});
  c.a100_40 = parts.load_gpu("a100-40gb");
  for (const std::uint64_t b : {std::uint64_t{1}, std::uint64_t{1000}})
    c.kv_share.push_back(parts.decode_step(c.m7, c.a100, course_query(kCourseParams, b, 1024)));
  return c;
}

// 004 §1.5's figures at their written precision, and its three rows against the check's arithmetic.
void judge_course_table(const RooflineCourse& c, std::vector<Expectation>& rows) {
  rows.push_back({"ridge point, A100-80GB, bf16 dense", "004 §1.5", "FLOP/B", 153.0, 0.5,
                  "the document writes ≈ 153: ± half a unit", c.s1.ridge, Stated::parse("153", "≈ 153"),
                  fmt::format("{:.4g} FLOP/s / {:.4g} B/s", c.a100.bf16_flops_per_s, c.a100.bandwidth_bytes_per_s)});
  rows.push_back({"tokens/s bound, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 140.0, 5.0,
                  "the document writes ≈ 140: two significant figures", c.s1.tokens_per_s,
                  Stated::parse("140", "≈ 140 tok/s"), ""});
  rows.back().headline = true;  // the claim's own figure: the 7B at batch 1 on an A100
  rows.push_back({"arithmetic intensity, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "FLOP/B", 1.0, 0.5,
                  "the document writes ≈ 1: ± half a unit", c.s1.intensity, Stated::parse("1", "≈ 1"), ""});
  rows.push_back({"tokens/s bound, 7B, batch 8 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 892.0, 0.5,
                  "the document writes 892: ± half a unit", c.s8.tokens_per_s, Stated::parse("892", "892 tok/s"), ""});
  rows.push_back({"KV bytes read, 7B MHA, batch 64 × ctx 4096, bf16", "004 §1.5 (group 5)", "GiB",
                  static_cast<double>(c.m7.kv_bytes_per_token_16bit.value_or(0)) * 64.0 * 4096.0 / kGiB, 0.0,
                  "integer byte counts (data/facts.md reference × tokens vs the library): exact",
                  static_cast<double>(c.s64.kv_bytes) / kGiB, Stated::parse("128", "128 GiB"), ""});
  rows.push_back({"weight bytes read, 7B (7e9 × 2 B)", "004 §1.5 (group 5)", "GiB", 13.0, 0.5,
                  "the document writes 13: ± half a unit", c.s64.weight_bytes / kGiB, Stated::parse("13", "13 GiB"), ""});
  rows.push_back({"arithmetic intensity, 7B, batch 64 × ctx 4096", "004 §1.5 (group 5)", "FLOP/B", 6.8, 0.05,
                  "the document writes 6.8: ± half a unit of the tenths", c.s64.intensity, Stated::parse("6.8", "6.8"), ""});
  const std::pair<const char*, std::pair<const DecodeQuery*, const DecodeStep*>> steps[] = {
      {"batch 1, ctx 1024", {&c.q1, &c.s1}}, {"batch 8, ctx 1024", {&c.q8, &c.s8}},
      {"batch 64, ctx 4096", {&c.q64, &c.s64}}};
  for (const auto& [label, qs] : steps) {
    const Recomputed r = recompute(c.m7, c.a100, *qs.first);
    rows.push_back(intensity_expectation(fmt::format("7B, {}", label), "004 §1.5 (group 5)", *qs.second, r));
    rows.push_back(time_expectation(fmt::format("7B, {}", label), "004 §1.5 (group 5)", *qs.second, r));
  }
}

const ComputeBoundBatch& compute_bound_at(const RooflineCourse& c, std::uint64_t ctx) {
  for (const auto& [at, cb] : c.compute_bound)
    if (at == ctx) return cb;
  throw std::logic_error("roofline: no compute-bound batch at this ctx");
}

// ---- 000 §1.1, §3.1, 003 Q6, 004 §1.5's last row: judged against the check's closed forms ------
//
// Expected values below are the check's own arithmetic from the figures the documents and
// data/facts.md give (N, L, d, the catalogue's independent kv_bytes_per_token_16bit, the GPU's two
// rates); measured values come from the library (decode_step, compute_bound_batch). Rounding:
// a handful of float64 operations on each side, so ± 1e-9 relative.
constexpr double kRel = 1e-9;
constexpr const char* kWhyRel = "float64 rounding of a few products and one division on each side: 1e-9 relative";

void judge_000_1_1_and_3_1(const RooflineCourse& c, std::vector<Expectation>& rows) {
  // 000 §1.1: utilization ≤ intensity / ridge (8 GPUs have the same ratio as one).
  const double n70 = 70e9, ctx70 = 4096;
  const double kv70 = static_cast<double>(c.m70.kv_bytes_per_token_16bit.value_or(0));
  const double i70 = (2 * n70 + 4 * ctx70 * 80 * 8192) / (n70 * kDefaultWeightBytes + ctx70 * kv70);
  const double ridge_h100 = c.h100.bf16_flops_per_s / c.h100.bandwidth_bytes_per_s;
  const double util_expected = 100 * i70 / ridge_h100;
  rows.push_back({"decode FLOP utilization bound (intensity / ridge), llama-3-70b, N = 70e9, batch 1, ctx 4096, h100-sxm",
                  "000 §1.1", "%", util_expected, kRel * util_expected, kWhyRel, 100 * c.s70.intensity / c.s70.ridge,
                  Stated::range("1", "5", "往往 1-5% (often 1–5%)").flags("E10"),
                  fmt::format("(2·70e9 + 4·4096·80·8192) / (2·70e9 + 4096·{}) = {:.4g} FLOP/B over a ridge of {:.4g} "
                              "FLOP/B = {:.3g}%; 1–5% needs batch ≈ 3–16 (E10)", kv70, i70, ridge_h100, util_expected)});
  // 000 §3.1: "A100 BF16 ≈ 200 FLOPs/byte" — the A100-40GB's ridge (E5: the 80 GB card's is 153).
  rows.push_back({"ridge point, A100-40GB, bf16 dense (datasheet 312 TFLOP/s / 1.555 TB/s)", "000 §3.1", "FLOP/B",
                  premises::kA100Bf16FlopsPerS / premises::kA100_40gbBandwidthBytesPerS, kRel * 200.0, kWhyRel,
                  ridge_flops_per_byte(c.a100_40), Stated::parse("200", "A100 BF16 ≈ 200 FLOPs/byte"),
                  "312e12 / 1.555e12 = 200.6: the 40 GB card; the 80 GB card of 004 §1.5 is 312 / 2.039 = 153 (E5)"});
  // 000 §3.1: decode stays bandwidth-bound until the batch fills the compute. The intensity
  // I(B) = (2N·B + 4·B·ctx·L·d) / (2N + B·ctx·kv) rises towards I(∞) = (2N + 4·ctx·L·d) / (ctx·kv);
  // the crossover B* = ridge·2N / (2N + 4·ctx·L·d − ridge·ctx·kv) exists only when I(∞) > ridge.
  const double n7 = kCourseParams, L7 = static_cast<double>(c.m7.n_layer);
  const double d7 = static_cast<double>(c.m7.n_head * c.m7.head_dim);
  const double kv7 = static_cast<double>(c.m7.kv_bytes_per_token_16bit.value_or(0));
  const double ridge_a100 = c.a100.bf16_flops_per_s / c.a100.bandwidth_bytes_per_s;
  for (const double ctx : {1024.0, 128.0}) {
    const ComputeBoundBatch& cb = compute_bound_at(c, static_cast<std::uint64_t>(ctx));
    const double limit = (2 * n7 + 4 * ctx * L7 * d7) / (ctx * kv7);
    rows.push_back({fmt::format("decode intensity as batch → ∞, llama-2-7b, N = 7e9, ctx {:g}, a100-80gb", ctx),
                    "000 §3.1", "FLOP/B", limit, kRel * limit, kWhyRel, cb.intensity_limit, std::nullopt, "",
                    limit < ridge_a100 ? "stays below the ridge: bandwidth-bound at every batch (E23)" : ""});
    const double b_star =
        limit > ridge_a100 ? std::ceil(ridge_a100 * 2 * n7 / (2 * n7 + 4 * ctx * L7 * d7 - ridge_a100 * ctx * kv7)) : 0.0;
    rows.push_back({fmt::format("smallest batch that makes decode compute-bound, ctx {:g} (0 = none)", ctx), "000 §3.1",
                    "sequences", b_star, 0.0, "an integer: ⌈B*⌉ from the closed form, exact",
                    static_cast<double>(cb.min_batch), std::nullopt, "",
                    "小到中等 batch 的 decode 是带宽瓶颈 (bandwidth-bound until the batch fills the compute)"});
  }
}

void judge_003_q6_and_last_row(const RooflineCourse& c, std::vector<Expectation>& rows) {
  // 003 Q6 point 4: at batch sizes in the thousands "weight traffic dominates again". The KV share
  // of the bytes read grows with the batch instead (E16).
  const double n7 = kCourseParams, kv7 = static_cast<double>(c.m7.kv_bytes_per_token_16bit.value_or(0));
  const std::uint64_t batches[] = {1, 1000};
  for (std::size_t i = 0; i < 2; ++i) {
    const std::uint64_t b = batches[i];
    const DecodeStep& s = c.kv_share[i];
    const double kv = static_cast<double>(b) * 1024 * kv7;
    const double expected = 100 * kv / (2 * n7 + kv), measured = 100 * static_cast<double>(s.kv_bytes) / s.bytes;
    std::optional<Stated> stated;
    if (b == 1000) stated = Stated{"模型权重的访存开销再次占据主导 (weights dominate again: KV share < 50%)", 25.0, 25.0}.flags("E16");
    rows.push_back({fmt::format("KV share of the bytes a decode step reads, llama-2-7b, N = 7e9, batch {}, ctx 1024", b),
                    "003 Q6", "%", expected, kRel * expected, kWhyRel, measured, stated,
                    b == 1000 ? fmt::format("B·ctx·kv / (2N + B·ctx·kv) = {:.4g}%: the cache, not the weights, "
                                            "dominates (E16)", expected)
                              : std::string()});
  }
  // 004 §1.5: "the last row no longer fits one 80 GB card".
  const double need = 2 * n7 + 64.0 * 4096 * kv7, held = c.s64.weight_bytes + static_cast<double>(c.s64.kv_bytes);
  rows.push_back({"weights + KV of the last row (7B, batch 64 × ctx 4096, bf16)", "004 §1.5", "GB", need / 1e9,
                  kRel * need / 1e9, kWhyRel, held / 1e9, std::nullopt, "", "最后一行已超过单卡 80GB (exceeds one 80 GB card)"});
  rows.push_back({"the last row fits one a100-80gb (1 = yes)", "004 §1.5", "", 0.0, 0.0, "a yes/no: exact",
                  held <= static_cast<double>(c.a100.memory_bytes) ? 1.0 : 0.0, std::nullopt, "", "最后一行已超过单卡 80GB"});
}

Table course_table(const RooflineCourse& c) {
  Table t{"004 §1.5 group 5 reproduced: llama-2-7b (MHA) on a100-80gb, bf16 weights and cache",
          {"N params", "batch", "ctx", "weights GiB", "KV GiB", "GFLOP", "GB read", "FLOP/B", "bound", "step ms",
           "tok/s"}, {}};
  const auto add_row = [&](const DecodeQuery& q, const DecodeStep& s) {
    t.rows.push_back({q.n_params, static_cast<std::int64_t>(q.kv.batch), static_cast<std::int64_t>(q.kv.ctx),
                      s.weight_bytes / kGiB, static_cast<double>(s.kv_bytes) / kGiB, s.flops / 1e9, s.bytes / 1e9,
                      s.intensity, bound_name(s.bound), s.time_s * 1e3, s.tokens_per_s});
  };
  add_row(c.q1, c.s1);
  add_row(c.q8, c.s8);
  add_row(c.q64, c.s64);
  for (const auto& [q, s] : c.true_rows) add_row(q, s);
  return t;
}

Table ridges_table(const RooflineCourse& c) {
  Table t{"bf16 ridge points in the catalogue", {"gpu", "bandwidth TB/s", "bf16 TFLOP/s", "ridge FLOP/B"}, {}};
  for (const GpuSpec& g : c.gpus)
    t.rows.push_back({g.name, g.bandwidth_bytes_per_s / 1e12, g.bf16_flops_per_s / 1e12, ridge_flops_per_byte(g)});
  return t;
}

void course_notes(const RooflineCourse& c, Result& r) {
  r.notes.push_back(fmt::format(
      "assumptions that reproduce the course's table: N = {:.3g} parameters at {} B (bf16); the KV "
      "cache of llama-2-7b (MHA, {} B per token in bf16); ctx 1024 for batch 1 and 8, 4096 for "
      "batch 64; {}: {:.4g} TB/s and {:.4g} TFLOP/s bf16 dense; FLOPs = 2N·B + 4·B·ctx·L·d with L "
      "= {}, d = H·head_dim = {}. Step time = max(bytes / bandwidth, FLOPs / peak).",
      kCourseParams, kDefaultWeightBytes, format_number(static_cast<double>(kv_bytes_per_token_16bit(c.m7))),
      c.a100.name, c.a100.bandwidth_bytes_per_s / 1e12, c.a100.bf16_flops_per_s / 1e12, c.m7.n_layer,
      c.m7.n_head * c.m7.head_dim));
  if (!c.true_rows.empty())
    r.notes.push_back(fmt::format(
        "with llama-2-7b's true {} parameters instead of 7e9: {:.1f} tok/s at batch 1, {:.1f} at "
        "batch 8, intensity {:.3g} at batch 64 × 4096 (rows with N = {:.4g} above).",
        format_number(c.true_rows[0].first.n_params), c.true_rows[0].second.tokens_per_s,
        c.true_rows[1].second.tokens_per_s, c.true_rows[2].second.intensity, c.true_rows[0].first.n_params));
  for (const GpuSpec& g : c.gpus)
    if (g.name == "a100-40gb")
      r.notes.push_back(fmt::format(
          "000 §3.1's 'A100 BF16 ≈ 200 FLOPs/byte' is the ridge of the A100-40GB: {:.4g} TFLOP/s / "
          "{:.4g} TB/s = {:.1f} FLOP/B; the A100-80GB SXM of 004 §1.5 has {:.4g} TB/s, hence {:.1f}.",
          g.bf16_flops_per_s / 1e12, g.bandwidth_bytes_per_s / 1e12, ridge_flops_per_byte(g),
          c.a100.bandwidth_bytes_per_s / 1e12, c.s1.ridge));
  r.notes.push_back(
      "metrics intensity, tokens_per_s, kv_bytes and weight_bytes are the batch-1 row; `kvlab "
      "roofline --model NAME` computes them for any model, GPU, batch and context.");
}

void present_course(const RooflineCourse& c, Result& r) {
  r.tables.push_back(course_table(c));
  Table cb{"where decode turns compute-bound (intensity = ridge), llama-2-7b, N = 7e9, a100-80gb", {"ctx", "answer"}, {}};
  for (const auto& [ctx, res] : c.compute_bound)
    cb.rows.push_back({static_cast<std::int64_t>(ctx),
                       compute_bound_text(res, c.s1.ridge) + (ctx == 128 ? " (a short context, for contrast)" : "")});
  r.tables.push_back(std::move(cb));
  r.tables.push_back(ridges_table(c));
  course_notes(c, r);
  r.plots.push_back(roofline_plot(c.a100, {{"7B, batch 1, ctx 1024", c.s1},
                                           {"7B, batch 8, ctx 1024", c.s8},
                                           {"7B, batch 64, ctx 4096", c.s64}}));
  add_step_metrics(r, c.s1);
  r.metric("tokens_per_s_batch8", c.s8.tokens_per_s);
  r.metric("intensity_batch64_ctx4096", c.s64.intensity);
  r.metric_exact("kv_bytes_batch64_ctx4096", c.s64.kv_bytes);
  r.metric("utilization_70b_batch1_percent", 100 * c.s70.intensity / c.s70.ridge);
  r.metric("kv_share_percent_batch1", 100 * static_cast<double>(c.kv_share[0].kv_bytes) / c.kv_share[0].bytes);
  r.metric("kv_share_percent_batch1000", 100 * static_cast<double>(c.kv_share[1].kv_bytes) / c.kv_share[1].bytes);
}

// ---- with only a device: the course's 7B on it (004 §B.2 (c)) -------------------------------

/// The library's tokens/s against the recomputation's.
Expectation tokens_expectation(const std::string& at, const DecodeStep& s, const Recomputed& c) {
  return Expectation{
      fmt::format("tokens/s bound, {}: library vs the check's own arithmetic", at), "004 §1.5",
      "tok/s", c.tokens_per_s, c.tokens_tol,
      fmt::format("rounding only: the step-time bound, relative, + γ_{} for B / time on both paths",
                  kRateRounds),
      s.tokens_per_s, std::nullopt, ""};
}

/// 004 §B.2 (c) "the throughput ceiling of a 7B model at batch 1 on your own GPU": the course's
/// assumptions (N = 7e9 at 2 B, llama-2-7b's MHA cache, ctx 1024) at batch 1 and 8 on the device.
RooflineDevice measure_device(const DeviceSpec& dev, const RooflineParts& parts) {
  RooflineDevice d{.dev = dev, .m7 = parts.load_model(premises::kModel7b)};
  d.q1 = course_query(kCourseParams, 1, 1024), d.q8 = course_query(kCourseParams, 8, 1024);
  d.s1 = parts.decode_step(d.m7, dev.spec, d.q1);
  d.s8 = parts.decode_step(d.m7, dev.spec, d.q8);
  return d;
}

std::string device_at(const RooflineDevice& d, const DecodeQuery& q) {
  return fmt::format("7B on {}, batch {} × ctx 1024", d.dev.spec.name, q.kv.batch);
}

void judge_device(const RooflineDevice& d, std::vector<Expectation>& rows) {
  for (const auto& [q, s] : {std::pair{&d.q1, &d.s1}, std::pair{&d.q8, &d.s8}}) {
    const Recomputed c = recompute(d.m7, d.dev.spec, *q);
    rows.push_back(intensity_expectation(device_at(d, *q), "004 §B.2 (c)", *s, c));
    rows.push_back(time_expectation(device_at(d, *q), "004 §B.2 (c)", *s, c));
    rows.push_back(tokens_expectation(device_at(d, *q), *s, c));
  }
}

void present_device(const RooflineDevice& d, Result& r) {
  const GpuSpec& g = d.dev.spec;
  Table t{fmt::format("004 §1.5 group 5 on {}: llama-2-7b's cache, N = 7e9, bf16 weights and cache", g.name),
          {"N params", "batch", "ctx", "weights GiB", "KV GiB", "GFLOP", "GB read", "FLOP/B", "bound", "step ms",
           "tok/s"}, {}};
  for (const auto& [q, s] : {std::pair{&d.q1, &d.s1}, std::pair{&d.q8, &d.s8}})
    t.rows.push_back({q->n_params, static_cast<std::int64_t>(q->kv.batch), static_cast<std::int64_t>(q->kv.ctx),
                      s->weight_bytes / kGiB, static_cast<double>(s->kv_bytes) / kGiB, s->flops / 1e9,
                      s->bytes / 1e9, s->intensity, bound_name(s->bound), s->time_s * 1e3, s->tokens_per_s});
  r.tables.push_back(std::move(t));
  Table hw{"the device", {"quantity", "value", "unit"}, {}};
  hw.rows.push_back({"bandwidth", g.bandwidth_bytes_per_s / 1e12, "TB/s"});
  hw.rows.push_back({"peak (dense bf16 tensor rate)", g.bf16_flops_per_s / 1e12, "TFLOP/s"});
  hw.rows.push_back({"ridge = peak / bandwidth", d.s1.ridge, "FLOP/B"});
  if (d.dev.memory_known) hw.rows.push_back({"memory", static_cast<double>(g.memory_bytes) / kGB, "GB"});
  r.tables.push_back(std::move(hw));
  r.notes.push_back("device: " + d.dev.provenance + (g.source.empty() ? "" : "; source: " + g.source) + ".");
  r.notes.push_back(fmt::format(
      "004 §B.2 (c) asks for this figure on your own GPU: at batch 1 every weight is read once per "
      "token, so the bound is about bandwidth / (2 B × 7e9) = {:.4g} tokens/s before the KV cache's "
      "{:.3g} GB; step time = max(bytes / bandwidth, FLOPs / peak).",
      g.bandwidth_bytes_per_s / (kDefaultWeightBytes * kCourseParams), static_cast<double>(d.s1.kv_bytes) / kGB));
  r.notes.push_back("metrics tokens_per_s, time_s, bytes, intensity, kv_bytes and weight_bytes are the "
                    "batch-1 row; `kvlab roofline --model NAME --gpu ...` costs any model.");
  r.plots.push_back(roofline_plot(g, {{"7B, batch 1, ctx 1024", d.s1}, {"7B, batch 8, ctx 1024", d.s8}}));
  add_step_metrics(r, d.s1);
  r.metric("flops", d.s1.flops);
  r.metric("bytes", d.s1.bytes);
  r.metric("time_s", d.s1.time_s);
  r.metric("tokens_per_s_batch8", d.s8.tokens_per_s);
  r.metric("time_s_batch8", d.s8.time_s);
}

// ---- with --model or --config: a calculator ------------------------------------------------

/// Resolves N, N_active, E and k from the options and the model, and checks them together. Every
/// error names what is at fault: the option the student typed, or `where` (e.g. "--config
/// path/config.json") and the file's field.
ParamFigures param_figures(const RooflineOptions& o, const ModelSpec& m, const std::string& where) {
  constexpr double kMaxParams = 1e15;
  ParamFigures f;
  DecodeQuery& q = f.query;
  if (o.params) {
    require_finite_range("--params", *o.params, 1.0, kMaxParams);
    q.n_params = *o.params;
    f.total_from = "--params";
  } else if (m.num_parameters) {
    q.n_params = static_cast<double>(*m.num_parameters);
    if (q.n_params > kMaxParams)
      throw InputError(fmt::format("{}: num_parameters: must be at most {:g} for the roofline (got "
                                   "{}); give --params to override", where, kMaxParams,
                                   *m.num_parameters));
    f.total_from = "num_parameters";
  } else {
    throw InputError(fmt::format("--params: {} has no num_parameters; give the parameter count, "
                                 "e.g. --params 7e9", m.name));
  }

  std::optional<double> active;
  if (o.active_params) {
    require_finite_range("--active-params", *o.active_params, 1.0, kMaxParams);
    active = *o.active_params;
    f.active_from = "--active-params";
  } else if (m.num_parameters_active) {
    active = static_cast<double>(*m.num_parameters_active);
    f.active_from = "num_parameters_active";
  }
  if (active && *active > q.n_params)
    throw InputError(
        o.active_params
            ? fmt::format("--active-params: must be at most the total parameters N = {} ({}) (got "
                          "{})", format_number(q.n_params), f.total_from, format_number(*active))
            : fmt::format("--params: {} is below {}'s num_parameters_active = {}; give "
                          "--active-params too", format_number(q.n_params), m.name,
                          format_number(*active)));

  std::optional<std::uint64_t> experts = m.num_experts, per_token = m.num_experts_per_tok;
  if (o.experts) experts = positive_count("--experts", *o.experts);
  if (o.experts_per_token) per_token = positive_count("--experts-per-token", *o.experts_per_token);
  if (experts.has_value() != per_token.has_value())
    throw InputError(o.experts ? "--experts-per-token: needed with --experts (k, the routed experts "
                                 "each token uses)"
                               : "--experts: needed with --experts-per-token (E, the routed "
                                 "experts of each MoE layer)");
  if (experts) {
    f.experts_from = o.experts ? "--experts" : "config";
    f.per_token_from = o.experts_per_token ? "--experts-per-token" : "config";
    if (*per_token > *experts)
      throw InputError(fmt::format("{}: must be at most the routed experts E = {} (got k = {})",
                                   o.experts_per_token ? "--experts-per-token" : "--experts",
                                   *experts, *per_token));
  }
  f.moe_declared = (experts && *experts > *per_token) || (active && *active < q.n_params);
  if (!f.moe_declared) {
    f.active_from.clear();
    return f;  // dense: N read and used
  }
  if (!active)
    throw InputError(fmt::format(
        "--active-params: {} is a mixture of experts ({} routed experts, {} per token) with no "
        "num_parameters_active; give the parameters one token uses, e.g. --active-params 13e9",
        m.name, *experts, *per_token));
  // Every token uses its k experts and the shared parameters: N_active >= N·k/E.
  if (experts && static_cast<long double>(*active) * *experts <
                     static_cast<long double>(q.n_params) * *per_token) {
    const std::string culprit = o.active_params ? "--active-params" : o.params ? "--params"
                                : o.experts ? "--experts" : o.experts_per_token ? "--experts-per-token"
                                : where + ": num_parameters_active";
    throw InputError(fmt::format("{}: N_active = {} must be at least N·k/E = {} × {} / {} = {:.12g}, "
                                 "since every token uses its k experts and the shared parameters",
                                 culprit, format_number(*active), format_number(q.n_params),
                                 *per_token, *experts,
                                 q.n_params * static_cast<double>(*per_token) / static_cast<double>(*experts)));
  }
  q.moe = MoeQuery{*active, experts, per_token};
  return f;
}

/// Sizes the step's cache and attention FLOPs once before the library does, so that an overflow
/// names its cause: the model's own fields (`where`), --ctx (the attention FLOPs of one sequence)
/// or --batch × --ctx (the cache of the whole batch).
void require_step_fits(const ModelSpec& m, const KvQuery& kv, const std::string& where) {
  with_option(where, [&] { return attention_flops_per_sequence(m, 1); });
  with_option("--ctx", [&] { return attention_flops_per_sequence(m, kv.ctx); });
  require_cache_fits(m, kv, where);
}

HardwareFlags hardware_flags(const RooflineOptions& o) {
  return HardwareFlags{o.gpu, o.bandwidth, o.peak_flops, o.memory};
}

std::string calc_where(const RooflineOptions& o) { return model_origin(o.model, o.config); }

RooflineCalc measure_calculator(const RooflineOptions& o, const RooflineParts& parts) {
  RooflineCalc c;
  c.full = resolve_model(o.model, o.config, parts.load_model, parts.read_config);
  const std::string where = calc_where(o);
  c.dev = resolve_device_flags(hardware_flags(o), kDefaultGpu, parts.load_gpu);
  const GpuSpec& g = c.dev.spec;
  // Tensor parallelism: the step of one device, holding 1/T of the weights and its K/V heads.
  c.tp = o.tp ? positive_count("--tp", *o.tp) : 1;
  c.share = tensor_parallel_share(c.full, c.tp);
  const ModelSpec& m = c.share.per_device;
  c.figures = param_figures(o, m, where);
  DecodeQuery& q = c.figures.query;
  q.n_params /= static_cast<double>(c.tp);
  if (q.moe) q.moe->active_params /= static_cast<double>(c.tp);
  if (o.weight_bytes) require_finite_range("--weight-bytes", *o.weight_bytes, 1.0 / 64, 64.0);
  q.bytes_per_param = o.weight_bytes.value_or(kDefaultWeightBytes);
  q.kv.batch = o.batch ? positive_count("--batch", *o.batch) : kDefaultBatch;
  q.kv.ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDefaultCtx;
  q.kv.dtype = o.kv_dtype ? with_option("--kv-dtype", [&] { return parse_cache_dtype(*o.kv_dtype); })
                          : CacheDtype::bf16;
  require_step_fits(m, q.kv, where);
  c.step = parts.decode_step(m, g, q);
  (void)recompute(m, g, q);  // its refusals (a reference past 64 bits) before anything is judged
  if (q.moe && c.step.weights.model != WeightModel::moe_uniform && q.kv.batch > 1) {
    // The lower bound is a dense step of N_active parameters: read N_active, use N_active.
    DecodeQuery low = q;
    low.n_params = q.moe->active_params;
    low.moe.reset();
    c.lower = parts.decode_step(m, g, low);
  }
  c.compute_bound = compute_bound_batch(m, g, q);
  if (o.params && m.num_parameters && static_cast<double>(*m.num_parameters) != *o.params &&
      static_cast<double>(*m.num_parameters) <= 1e15) {
    DecodeQuery qt = q;
    qt.n_params = static_cast<double>(*m.num_parameters) / static_cast<double>(c.tp);
    if (qt.moe && qt.moe->active_params > qt.n_params) qt.moe.reset();
    try {
      c.own_params.emplace(qt, parts.decode_step(m, g, qt));
    } catch (const InputError&) {
      // The file's count does not fit the other figures given (e.g. --active-params): no comparison.
    }
  }
  return c;
}

std::string calc_at(const RooflineCalc& c) {
  const DecodeQuery& q = c.figures.query;
  return fmt::format("{}, batch {} × ctx {}", c.share.per_device.name, q.kv.batch, q.kv.ctx);
}

// Each row: the library's figure against the check's own arithmetic (recompute, above).
void judge_calculator(const RooflineCalc& calc, std::vector<Expectation>& rows) {
  const ModelSpec& m = calc.share.per_device;
  const DecodeQuery& q = calc.figures.query;
  const DecodeStep& s = calc.step;
  const Recomputed c = recompute(m, calc.dev.spec, q);
  const std::string at = calc_at(calc);
  rows.push_back({fmt::format("FLOPs per step, {}: library vs the check's own arithmetic", at), "004 §1.5", "FLOP",
                  c.flops, c.flops_tol,
                  fmt::format("rounding only: both paths in double, at most {} roundings: γ_{} relative, u = 2^-53",
                              kFlopRounds, kFlopRounds),
                  s.flops, std::nullopt,
                  m.is_mla() ? "2·N_used·B + 2·B·ctx·L·H·(d_c + d_r) + 2·B·ctx·L·H·d_c"
                             : "2·N_used·B + 4·B·ctx·L·H·head_dim"});
  rows.push_back({fmt::format("KV bytes per step, {}: library vs {}", at,
                              c.kv_reference ? "the catalogue's reference" : "the check's own count"),
                  c.kv_reference ? "004 §1.4; data/facts.md" : "004 §1.4", "B", static_cast<double>(c.kv_bytes), 0.0,
                  "integer byte counts: exact", static_cast<double>(s.kv_bytes), std::nullopt,
                  c.kv_reference ? "kv_bytes_per_token_16bit / layers × bits/16 × B × positions held (ctx per full layer)"
                                 : "2·n_kv·head_dim (MLA: d_c + d_r) × bits/8 × B × positions held (ctx per full layer)"});
  rows.push_back({fmt::format("weight bytes read per step, {} ({}): library vs the check's own arithmetic", at,
                              q.moe && q.kv.batch == 1 ? "MoE, batch 1: N_active" : weight_model_name(s.weights.model)),
                  "004 §1.5", "B", c.weight_bytes, c.weight_tol, c.weight_why, s.weight_bytes, std::nullopt, ""});
  rows.push_back({fmt::format("bytes read per step, {}: library vs the check's own arithmetic", at), "004 §1.5", "B",
                  c.bytes, c.bytes_tol,
                  fmt::format("rounding only: the weight-bytes bound + γ_{} (the KV count to double and the sum, both "
                              "paths)", kBytesRounds),
                  s.bytes, std::nullopt, ""});
  rows.push_back(time_expectation(at, "004 §1.5", s, c));
  rows.push_back({fmt::format("tokens/s bound, {}: library vs the check's own arithmetic", at), "004 §1.5", "tok/s",
                  c.tokens_per_s, c.tokens_tol,
                  fmt::format("rounding only: the step-time bound, relative, + γ_{} for B / time on both paths",
                              kRateRounds),
                  s.tokens_per_s, std::nullopt, ""});
  rows.push_back({"bound named by the library agrees with the check's times (1 = yes)", "004 §1.5", "", 1.0, 0.0,
                  c.bound_tie ? "a yes/no check; the two times are within rounding of each other here, so either "
                                "bound is accepted"
                              : "a yes/no check: memory when bytes / bandwidth >= FLOPs / peak",
                  c.bound_tie || s.bound == c.bound ? 1.0 : 0.0, std::nullopt,
                  fmt::format("check: memory {:.6g} ms, compute {:.6g} ms", c.time_memory_s * 1e3,
                              c.time_compute_s * 1e3)});
}

void tp_rows(const RooflineCalc& c, Table& t) {
  const ModelSpec& m = c.share.per_device;
  t.rows.push_back({"tensor-parallel devices T", static_cast<std::int64_t>(c.tp), "--tp"});
  t.rows.push_back({"query heads per device", static_cast<std::int64_t>(c.share.query_heads),
                    fmt::format("H / T = {} / {}", c.full.n_head, c.tp)});
  if (m.is_mla())
    t.rows.push_back({"latent cache per device", "whole", fmt::format("replicated on all {} devices", c.tp)});
  else
    t.rows.push_back({"K/V heads per device", static_cast<std::int64_t>(c.share.kv_heads),
                      c.share.kv_replicas > 1
                          ? fmt::format("{} K/V heads < T: each replicated on {} devices", c.full.n_kv_head,
                                        c.share.kv_replicas)
                          : fmt::format("n_kv / T = {} / {}", c.full.n_kv_head, c.tp)});
}

void moe_rows(const RooflineCalc& c, Table& t) {
  const DecodeQuery& q = c.figures.query;
  const WeightRead& w = c.step.weights;
  t.rows.push_back({"active parameters per token N_active", q.moe->active_params, c.figures.active_from});
  if (q.moe->experts) {
    t.rows.push_back({"routed experts E per MoE layer", static_cast<std::int64_t>(*q.moe->experts),
                      c.figures.experts_from});
    t.rows.push_back({"routed experts k per token", static_cast<std::int64_t>(*q.moe->experts_per_token),
                      c.figures.per_token_from});
  }
  if (w.model == WeightModel::moe_uniform) {
    t.rows.push_back({"shared parameters S = N_active − k·P_e", w.shared_params, "parameters"});
    t.rows.push_back({"parameters per routed expert P_e = (N − N_active)/(E − k)", w.params_per_expert,
                      "parameters (summed over MoE layers)"});
    t.rows.push_back({"distinct experts read per MoE layer D(B) = E·(1 − (1 − k/E)^B)", w.experts_touched,
                      "experts (expected, uniform routing)"});
  }
  t.rows.push_back({"parameters read this step N_read", w.params_read, weight_model_name(w.model)});
  t.rows.push_back({"N_read, lower bound (the batch shares its experts)", w.params_read_low, "parameters"});
  t.rows.push_back({"N_read, upper bound", w.params_read_high,
                    w.model == WeightModel::moe_uniform ? "S + min(E, B·k)·P_e" : "min(N, B·N_active)"});
}

Table step_table(const RooflineCalc& c) {
  const ModelSpec& m = c.share.per_device;
  const GpuSpec& g = c.dev.spec;
  const DecodeQuery& q = c.figures.query;
  const DecodeStep& s = c.step;
  Table t{fmt::format("decode step{}: {} on {} ({})", c.tp > 1 ? ", per device" : "", m.name, g.name, g.description),
          {"quantity", "value", "unit / from"}, {}};
  if (c.tp > 1) tp_rows(c, t);
  t.rows.push_back({c.tp > 1 ? "parameters N per device (N / T)" : "parameters N (total)", q.n_params,
                    c.figures.total_from});
  if (q.moe) moe_rows(c, t);
  t.rows.push_back({"bytes per parameter", q.bytes_per_param, "B"});
  t.rows.push_back({"batch B", static_cast<std::int64_t>(q.kv.batch), "sequences"});
  t.rows.push_back({"ctx", static_cast<std::int64_t>(q.kv.ctx), "positions"});
  t.rows.push_back({"layer groups", layer_groups_text(m, q.kv.ctx), "layers × kind (positions held at ctx)"});
  t.rows.push_back({"KV cache dtype", cache_dtype_name(q.kv.dtype), ""});
  t.rows.push_back({"weight bytes", s.weight_bytes, q.moe ? "B (N_read × bytes/param)" : "B"});
  t.rows.push_back({"KV bytes", count_cell(s.kv_bytes), "B"});
  t.rows.push_back({"bytes read", s.bytes, "B"});
  t.rows.push_back({q.moe ? "FLOPs, weights (2·N_active·B)" : "FLOPs, weights (2·N·B)", s.flops_weights, "FLOP"});
  t.rows.push_back({m.is_mla() ? "FLOPs, attention (MLA, absorbed)" : "FLOPs, attention (4·B·ctx·L·H·head_dim)",
                    s.flops_attention, "FLOP"});
  t.rows.push_back({"arithmetic intensity", s.intensity, "FLOP/B"});
  t.rows.push_back({"ridge (bf16 peak / bandwidth)", s.ridge, "FLOP/B"});
  t.rows.push_back({"memory time", s.time_memory_s * 1e3, "ms"});
  t.rows.push_back({"compute time", s.time_compute_s * 1e3, "ms"});
  t.rows.push_back({"bound", bound_name(s.bound), ""});
  t.rows.push_back({"tokens/s bound", s.tokens_per_s, "tok/s"});
  return t;
}

void moe_notes(const RooflineCalc& c, Result& r) {
  const ModelSpec& m = c.share.per_device;
  const DecodeQuery& q = c.figures.query;
  const WeightRead& w = c.step.weights;
  if (!q.moe) {
    if (m.is_moe())
      r.notes.push_back(fmt::format("{} is a mixture of experts, but N_active = N here: costed as "
                                    "dense, every parameter read and used.", m.name));
    return;
  }
  r.notes.push_back(fmt::format(
      "mixture of experts: FLOPs use the {} active parameters a token uses; the bytes count the "
      "parameters the batch reads, which grow from N_active at batch 1 towards all N = {}.",
      format_number(q.moe->active_params), format_number(q.n_params)));
  if (w.model == WeightModel::moe_uniform)
    r.notes.push_back(fmt::format(
        "MoE model (lib/cost/roofline.hpp): N = S + E·P_e and N_active = S + k·P_e give S = {} "
        "shared parameters (embeddings, attention, norms, routers, shared experts, dense layers) "
        "and P_e = {} per routed expert; with routing uniform and independent across the batch, "
        "its B = {} tokens touch D = E·(1 − (1 − k/E)^B) = {:.4g} of the E = {} experts of each MoE "
        "layer, so the step reads S + D·P_e = {} parameters. Assumed: equal-size experts, the "
        "same E and k in every MoE layer, uniform routing (real routers are only "
        "load-balanced; correlated tokens touch fewer experts).",
        format_number(w.shared_params), format_number(w.params_per_expert), q.kv.batch,
        w.experts_touched, *q.moe->experts, format_number(w.params_read)));
  else if (c.lower)
    r.notes.push_back(fmt::format(
        "MoE model: {} has no num_local_experts / num_experts_per_tok (E and k), so only bounds "
        "are known: N_active = {} <= N_read <= min(N, B·N_active) = {}. The step is costed at "
        "the upper bound (worst-case routing: no two tokens share an expert); at the lower bound "
        "(every token routed to the same experts) it would take {:.4g} ms, {:.4g} tokens/s. Give "
        "--experts E --experts-per-token k for the expected figure under uniform routing.",
        m.name, format_number(w.params_read_low), format_number(w.params_read_high),
        c.lower->time_s * 1e3, c.lower->tokens_per_s));
  else
    r.notes.push_back("MoE at batch 1: the one token reads exactly its k experts and the shared "
                      "parameters, N_read = N_active, whatever E and k are.");
}

void calculator_notes(const RooflineCalc& c, Result& r) {
  const ModelSpec& m = c.share.per_device;
  const GpuSpec& g = c.dev.spec;
  const DecodeQuery& q = c.figures.query;
  r.notes.push_back("compute-bound at this ctx: " + compute_bound_text(c.compute_bound, c.step.ridge) + ".");
  if (c.tp > 1)
    r.notes.push_back(fmt::format(
        "tensor parallelism over {} devices (vLLM's sharding): each holds 1/{} of the weights, {} of "
        "the {} query heads and {}; every figure above is one device's, and its tokens/s is the "
        "group's, since the devices decode the same batch together. The all-reduces between them are "
        "not costed: a bound.",
        c.tp, c.tp, c.share.query_heads, c.full.n_head,
        m.is_mla() ? "the whole latent cache (MLA has no K/V heads to split)"
        : c.share.kv_replicas > 1 ? fmt::format("one K/V head ({} heads < {} devices: each is replicated on {})",
                                                c.full.n_kv_head, c.tp, c.share.kv_replicas)
                                  : fmt::format("{} of the {} K/V heads", c.share.kv_heads, c.full.n_kv_head)));
  if (c.dev.provenance != g.name + " (catalogue)") r.notes.push_back("device: " + c.dev.provenance + ".");
  const double footprint = q.n_params * q.bytes_per_param + static_cast<double>(c.step.kv_bytes);
  if (c.dev.memory_known && footprint > static_cast<double>(g.memory_bytes))
    r.notes.push_back(fmt::format("all weights + KV = {:.4g} GB exceed the {:.4g} GB of one {}: the "
                                  "figures are a bound for the arithmetic, not a deployable setup.",
                                  footprint / kGB, static_cast<double>(g.memory_bytes) / kGB, g.name));
  if (c.own_params)
    r.notes.push_back(fmt::format("with {}'s own num_parameters = {} instead: {:.4g} tokens/s, intensity {:.4g}.",
                                  m.name, format_number(c.own_params->first.n_params),
                                  c.own_params->second.tokens_per_s, c.own_params->second.intensity));
  if (m.is_mla())
    r.notes.push_back("MLA attention FLOPs use the absorbed form of 000 §4.3.3: 2·(d_c + d_r) for "
                      "the scores and 2·d_c for AV per position, head and layer.");
  r.notes.push_back("the peak is the GPU's dense bf16 tensor rate whatever the dtypes; activations, "
                    "norms and softmax are ignored, as in the course.");
}

void present_calculator(const RooflineCalc& c, Result& r) {
  const ModelSpec& m = c.share.per_device;
  const DecodeQuery& q = c.figures.query;
  const DecodeStep& s = c.step;
  if (!m.kv_bytes_per_token_16bit)
    r.notes.push_back(
        "this config has no kv_bytes_per_token_16bit, so nothing independent backs the KV bytes: "
        "the check recounts them from the same config fields with its own arithmetic. That catches "
        "a slip in the library's formula, not a config whose fields mean something else than kvlab "
        "reads them as.");
  r.plots.push_back(roofline_plot(c.dev.spec, {{fmt::format("{}, batch {}, ctx {}", m.name, q.kv.batch, q.kv.ctx), s}}));
  r.tables.push_back(step_table(c));
  moe_notes(c, r);
  calculator_notes(c, r);
  add_step_metrics(r, s);
  r.metric("flops", s.flops);
  r.metric("bytes", s.bytes);
  r.metric("time_s", s.time_s);
  r.metric("params_read", s.weights.params_read);
  r.metric("params_used", s.weights.params_used);
  if (c.compute_bound.reachable && c.compute_bound.min_batch > 0)
    r.metric("compute_bound_batch", static_cast<double>(c.compute_bound.min_batch));
}

}  // namespace

RooflineMeasured measure_roofline(const RooflineOptions& o, const RooflineParts& parts) {
  RooflineMeasured m{.options = o};
  if (o.model || o.config)
    m.calc = measure_calculator(o, parts);
  else if (const HardwareFlags hw = hardware_flags(o); hw.any())
    m.device = measure_device(resolve_device_flags(hw, "", parts.load_gpu), parts);
  else
    m.course = measure_course(parts);
  return m;
}

std::vector<Expectation> judge_roofline(const RooflineMeasured& m) {
  std::vector<Expectation> rows;
  if (m.calc) judge_calculator(*m.calc, rows);
  if (m.device) judge_device(*m.device, rows);
  if (m.course) {
    judge_course_table(*m.course, rows);
    judge_000_1_1_and_3_1(*m.course, rows);
    judge_003_q6_and_last_row(*m.course, rows);
  }
  return rows;
}

namespace {

std::string claim(const RooflineMeasured& m) {
  if (m.course) return kClaim;
  if (m.device) {
    const RooflineDevice& d = *m.device;
    return fmt::format("The course's 7B (N = 7e9 at 2 B, llama-2-7b's cache, ctx 1024) on {}: batch 1 "
                       "is {}-bound at {:.4g} tokens/s (intensity {:.3g} against a ridge of {:.4g} "
                       "FLOP/B); batch 8 reaches {:.4g} tokens/s.",
                       d.dev.spec.name, bound_name(d.s1.bound), d.s1.tokens_per_s, d.s1.intensity, d.s1.ridge,
                       d.s8.tokens_per_s);
  }
  const RooflineCalc& c = *m.calc;
  const DecodeStep& s = c.step;
  return fmt::format("One decode step of {} on {}{} at batch {} × ctx {}: {} / {} = {:.4g} FLOP/B "
                     "against a ridge of {:.4g}: {}-bound, {:.4g} tokens/s", c.share.per_device.name, c.dev.spec.name,
                     c.tp > 1 ? fmt::format(" (one of {} tensor-parallel devices)", c.tp) : "",
                     c.figures.query.kv.batch, c.figures.query.kv.ctx, fmt::format("{:.4g} FLOP", s.flops),
                     fmt::format("{:.4g} B", s.bytes), s.intensity, s.ridge, bound_name(s.bound), s.tokens_per_s);
}

void constraints(const RooflineOptions& o) {
  if (o.model || o.config) return;
  const char* given = o.tp ? "--tp" : o.batch ? "--batch" : o.ctx ? "--ctx" : o.params ? "--params"
                      : o.active_params ? "--active-params" : o.experts ? "--experts"
                      : o.experts_per_token ? "--experts-per-token" : o.weight_bytes ? "--weight-bytes"
                      : o.kv_dtype ? "--kv-dtype" : nullptr;
  if (given)
    throw InputError(fmt::format("{}: needs --model or --config (without either, roofline shows the course's "
                                 "table, or with --gpu alone the course's 7B on that GPU)", given));
}

void present(const RooflineMeasured& m, Result& r) {
  if (m.calc) present_calculator(*m.calc, r);
  if (m.device) present_device(*m.device, r);
  if (m.course) present_course(*m.course, r);
}

}  // namespace

const CheckDef<RooflineOptions, RooflineMeasured>& roofline_check() {
  using O = RooflineOptions;
  constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
  static const CheckDef<O, RooflineMeasured> def{
      .spec = {.name = "roofline",
               .order = 50,
               .source = "004 §1.5 (group 5); 000 §1.1, §3.1; 003 Q6",
               .summary = "Decode-step roofline: FLOPs, bytes, intensity vs the GPU's ridge, step time and tokens/s",
               .claim_zh = "解码步的 Roofline：FLOPs、字节、算术强度与 GPU 的拐点（ridge point），步时与 tokens/s",
               .description =
                   "Without --model or --config: 004 §1.5's decode table on an A100-80GB, with the "
                   "assumptions that reproduce it (N = 7e9 at 2 B, llama-2-7b's MHA cache, ctx 1024 for "
                   "batch 1 and 8), the same rows at the true parameter count, where decode would turn "
                   "compute-bound, and the ridge of every catalogue GPU (000 §3.1's ≈ 200 is the A100-40GB).\n"
                   "With --model NAME or --config PATH: one decode step on --gpu (default a100-80gb) at "
                   "--batch (default 1) × --ctx (default 4096), weights of --params (default the model's "
                   "num_parameters) × --weight-bytes (default 2), cache in --kv-dtype (default bf16).\n"
                   "Mixture of experts (mixtral-8x7b, deepseek-v2/v3): --params is every parameter N, "
                   "--active-params (default num_parameters_active) the ones a token uses, which set the "
                   "FLOPs; the bytes count the experts the batch touches, from N_active at batch 1 towards "
                   "N, expected under uniform top-k routing when E and k are known (--experts, "
                   "--experts-per-token; default num_local_experts, num_experts_per_tok), else the worst "
                   "case min(N, B·N_active). The model is at the top of lib/cost/roofline.hpp.\n"
                   "Your own GPU: --gpu FILE.json (data/hardware's schema), or --bandwidth and --peak-flops "
                   "(units: 3.35TB/s, 989.5TFLOPS, 80GiB; bare numbers are bytes/s, FLOP/s, bytes), which "
                   "also override a --gpu's figures. With only a device, the course's 7B at batch 1 and 8 "
                   "on it (004 §B.2 (c)). --tp N: one of N tensor-parallel devices (vLLM's sharding).",
               .derivation =
                   "A decode step reads every weight once (N · bytes per parameter) and the whole KV cache\n"
                   "(batch · ctx · KV bytes per token), and computes 2·N FLOPs per sequence for the weights plus\n"
                   "4·ctx·L·d for attention (QKᵀ and AV).\n"
                   "Arithmetic intensity = FLOPs / bytes. At batch 1 it is about 2N / 2N = 1 FLOP/B.\n"
                   "The ridge point of a GPU is peak FLOP/s / bandwidth: A100-80GB, 312e12 / 2.039e12 ≈ 153 FLOP/B.\n"
                   "Below the ridge the step takes bytes / bandwidth: a 7B model in bf16 at batch 1, ctx 1024:\n"
                   "(14e9 + 0.54e9) B / 2.039e12 B/s ≈ 7.1 ms, ≈ 140 tokens/s.\n"
                   "Batching shares the weight bytes among B sequences but not the KV bytes, so intensity rises with\n"
                   "B only while the weights dominate; at long contexts the KV cache pulls it back down\n"
                   "(batch 64 × 4096: 128 GiB of KV against 13 GiB of weights, intensity ≈ 6.8).\n"
                   "Source: 004 §1.5 (group 5); 000 §1.1, §3.1; 003 Q6.\n",
               .traits = {.plot = true}},
      // The optionals' defaults are said in words: an empty optional shows none.
      .options = {{"--model", &O::model, Allowed::any_value(), "Catalogue model, e.g. llama-2-7b (data/models)"},
                  {"--config", &O::config, Allowed::path(), "A Hugging Face config.json instead of --model", "FILE",
                   "--model"},
                  {"--gpu", &O::gpu, Allowed::any_value(),
                   "Catalogue GPU (data/hardware; default a100-80gb) or your own FILE.json in its schema; alone: "
                   "the course's 7B at batch 1 and 8 on it", "NAME|FILE"},
                  {"--bandwidth", &O::bandwidth, Allowed::any_value(),
                   "Memory bandwidth, e.g. 3.35TB/s or 900GiB/s (bare number: bytes/s); overrides --gpu's, or "
                   "with --peak-flops defines the device", "RATE"},
                  {"--peak-flops", &O::peak_flops, Allowed::any_value(),
                   "Dense bf16 peak, e.g. 989.5TFLOPS (bare number: FLOP/s); overrides --gpu's, or with "
                   "--bandwidth defines the device", "RATE"},
                  {"--memory", &O::memory, Allowed::any_value(), "Device memory, e.g. 80GiB or 141GB (bare number: bytes)",
                   "SIZE"},
                  {"--tp", &O::tp, Allowed::integers(1, 1024),
                   "Tensor-parallel devices: weights and K/V heads split over N (K/V heads replicated when N "
                   "exceeds them), per device"},
                  {"--batch", &O::batch, Allowed::integers(1, kMaxInt), "Sequences decoded together (default 1)"},
                  {"--ctx", &O::ctx, Allowed::tokens(kMaxInt),
                   "Cached positions per sequence, e.g. 4096, 4k, 128k (default 4096)"},
                  {"--params", &O::params, Allowed::reals(1.0, 1e15),
                   "All parameters N, every expert of an MoE, e.g. 7e9 (default num_parameters)"},
                  {"--active-params", &O::active_params, Allowed::reals(1.0, 1e15),
                   "MoE: parameters one token uses, e.g. 12.88e9 (default num_parameters_active)"},
                  {"--experts", &O::experts, Allowed::integers(1, std::int64_t{1} << 31),
                   "MoE: routed experts E per layer (default num_local_experts)"},
                  {"--experts-per-token", &O::experts_per_token, Allowed::integers(1, std::int64_t{1} << 31),
                   "MoE: routed experts k per token (default num_experts_per_tok)"},
                  {"--weight-bytes", &O::weight_bytes, Allowed::reals(1.0 / 64, 64.0), "Bytes per parameter (default 2)"},
                  {"--kv-dtype", &O::kv_dtype, Allowed::one_of({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}),
                   "Cache element type (default bf16)"}},
      .constraints = constraints,
      .measure = [](const O& o, const RunContext&) { return measure_roofline(o); },
      .judge = judge_roofline,
      .present = present,
      .claim = claim};
  return def;
}

Result run_roofline(const RooflineOptions& o, const RunContext& ctx, const RooflineParts& parts) {
  return run_check(roofline_check(), o, ctx,
                   [&parts](const RooflineOptions& opts, const RunContext&) { return measure_roofline(opts, parts); });
}

KVLAB_REGISTER_SPEC(roofline_check);

}  // namespace kvlab::checks::roofline
