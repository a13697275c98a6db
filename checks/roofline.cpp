// roofline — why decoding is memory-bound: intensity, step time and the tokens/s bound.
// Source: 004 §1.5 (group 5); 000 §1.1, §3.1; 003 Q6.
//
// One decode step reads every weight once (N · bytes/param) and each sequence's KV cache, and does
// 2·N·B + 4·B·ctx·L·H·head_dim FLOPs; its time is max(bytes / bandwidth, FLOPs / peak) and it
// yields B tokens. With no options: the course's table (A100-80GB ridge ≈ 153 FLOP/B; a 7B model
// at batch 1 ≈ 140 tok/s with intensity ≈ 1; batch 8 → 892 tok/s; batch 64 × 4096 → KV 128 GiB
// against 13 GiB of weights, intensity 6.8), with the assumptions that reproduce it printed, the
// same rows at llama-2-7b's true parameter count, and the batch where decode would turn
// compute-bound. With --model or --config: one step of any model, mixtures of experts included
// (FLOPs from N_active; bytes from the experts the batch touches, lib/cost/roofline.hpp).
//
// Expected values: the document's figures at their written precision, and for every step the
// check's own arithmetic (recompute, below: the config fields, the catalogue's independent KV
// reference, the GPU's rates; nothing of lib/cost), with tolerances derived from the roundings of
// both paths. A wrong formula in the library makes the check fail (tests/test_cost_checks.cpp).
//
//   kvlab roofline                                     the course's table
//   kvlab roofline --model llama-2-7b --params 7e9 --gpu a100-80gb --batch 8 --ctx 1024
//   kvlab roofline --model mixtral-8x7b --batch 16 --ctx 1024
//   kvlab roofline --model deepseek-v3 --batch 8 --experts 256 --experts-per-token 8
//   kvlab roofline --config path/to/config.json --gpu h100-sxm --batch 64 --kv-dtype fp8
//   kvlab roofline --gpu my-gpu.json                   the course's 7B on your own GPU (004 §B.2 (c))
//   kvlab roofline --bandwidth 936GB/s --peak-flops 71TFLOPS
//   kvlab roofline --model llama-3-70b --gpu h100-sxm --tp 4 --batch 16
#include "roofline_check.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cost/kv_cache.hpp"
#include "cost/tensor_parallel.hpp"
#include "io/hardware.hpp"
#include "report/writers.hpp"
#include "support/cost_common.hpp"
#include "framework/options.hpp"
#include "framework/path_option.hpp"
#include "core/numerics.hpp"
#include "reference/roofline.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {
namespace {

// The contract's roofline metrics (JSON keys programs outside kvlab read): intensity, tokens_per_s, ridge, kv_bytes, weight_bytes.
void add_step_metrics(Result& r, const DecodeStep& s) {
  r.metric("intensity", s.intensity);
  r.metric("tokens_per_s", s.tokens_per_s);
  r.metric("ridge", s.ridge);
  r.metric_exact("kv_bytes", s.kv_bytes);
  r.metric("weight_bytes", s.weight_bytes);
}

constexpr const char* kName = "roofline";
constexpr const char* kSource = "004 §1.5 (group 5); 000 §1.1, §3.1; 003 Q6";
constexpr const char* kSummary =
    "Decode-step roofline: FLOPs, bytes, intensity vs the GPU's ridge, step time and tokens/s";
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

  // KV bytes: the reference is K+V bytes per token at 16 bits, so ref·bits/2 bits per token.
  const std::uint64_t bits = cache_dtype_bits(q.kv.dtype);
  std::uint64_t bits_per_token = 0;
  if (m.kv_bytes_per_token_16bit) {
    c.kv_reference = true;
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
  c.kv_bytes = total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);

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

// ---- 000 §1.1, §3.1, 003 Q6, 004 §1.5's last row: judged against the check's closed forms ------
//
// Expected values below are the check's own arithmetic from the figures the documents and
// data/facts.md give (N, L, d, the catalogue's independent kv_bytes_per_token_16bit, the GPU's two
// rates); measured values come from the library (decode_step, compute_bound_batch). Rounding:
// a handful of float64 operations on each side, so ± 1e-9 relative.
void course_claims_000_003(const RooflineParts& parts, const ModelSpec& m7, const GpuSpec& a100, const DecodeStep& s64,
                           Result& r) {
  constexpr double kRel = 1e-9;
  const char* why_rel = "float64 rounding of a few products and one division on each side: 1e-9 relative";
  // 000 §1.1: 70B at batch 1 on H100s. Utilization ≤ intensity / ridge (tensor parallelism splits FLOPs
  // and bytes alike, so 8 GPUs have the same ratio as one).
  const ModelSpec m70 = parts.load_model("llama-3-70b");
  const GpuSpec h100 = parts.load_gpu("h100-sxm");
  const double n70 = 70e9, ctx70 = 4096;
  const DecodeStep s70 = parts.decode_step(m70, h100, DecodeQuery{n70, kDefaultWeightBytes, KvQuery{1, 4096, CacheDtype::bf16, {}}});
  const double kv70 = static_cast<double>(m70.kv_bytes_per_token_16bit.value_or(0));
  const double i70 = (2 * n70 + 4 * ctx70 * 80 * 8192) / (n70 * kDefaultWeightBytes + ctx70 * kv70);
  const double ridge_h100 = h100.bf16_flops_per_s / h100.bandwidth_bytes_per_s;
  const double util_expected = 100 * i70 / ridge_h100, util = 100 * s70.intensity / s70.ridge;
  r.expect({"decode FLOP utilization bound (intensity / ridge), llama-3-70b, N = 70e9, batch 1, ctx 4096, h100-sxm",
            "000 §1.1", "%", util_expected, kRel * util_expected, why_rel, util,
            Stated::range("1", "5", "往往 1-5% (often 1–5%)").flags("E10"),
            fmt::format("(2·70e9 + 4·4096·80·8192) / (2·70e9 + 4096·{}) = {:.4g} FLOP/B over a ridge of {:.4g} FLOP/B "
                        "= {:.3g}%; 1–5% needs batch ≈ 3–16 (E10)",
                        kv70, i70, ridge_h100, util_expected)});
  r.metric("utilization_70b_batch1_percent", util);

  // 000 §3.1: "A100 BF16 ≈ 200 FLOPs/byte" — the A100-40GB's ridge (E5: the 80 GB card's is 153).
  const GpuSpec a100_40 = parts.load_gpu("a100-40gb");
  r.expect({"ridge point, A100-40GB, bf16 dense (datasheet 312 TFLOP/s / 1.555 TB/s)", "000 §3.1", "FLOP/B",
            premises::kA100Bf16FlopsPerS / premises::kA100_40gbBandwidthBytesPerS, kRel * 200.0, why_rel, ridge_flops_per_byte(a100_40),
            Stated::parse("200", "A100 BF16 ≈ 200 FLOPs/byte"),
            "312e12 / 1.555e12 = 200.6: the 40 GB card; the 80 GB card of 004 §1.5 is 312 / 2.039 = 153 (E5)"});

  // 000 §3.1: decode stays bandwidth-bound until the batch fills the compute. The intensity
  // I(B) = (2N·B + 4·B·ctx·L·d) / (2N + B·ctx·kv) rises towards I(∞) = (2N + 4·ctx·L·d) / (ctx·kv);
  // the crossover B* = ridge·2N / (2N + 4·ctx·L·d − ridge·ctx·kv) exists only when I(∞) > ridge.
  const double n7 = kCourseParams, L7 = static_cast<double>(m7.n_layer), d7 = static_cast<double>(m7.n_head * m7.head_dim);
  const double kv7 = static_cast<double>(m7.kv_bytes_per_token_16bit.value_or(0));
  const double ridge_a100 = a100.bf16_flops_per_s / a100.bandwidth_bytes_per_s;
  for (const double ctx : {1024.0, 128.0}) {
    const ComputeBoundBatch cb = compute_bound_batch(m7, a100, DecodeQuery{n7, kDefaultWeightBytes,
                                                                           KvQuery{1, static_cast<std::uint64_t>(ctx), CacheDtype::bf16, {}}});
    const double limit = (2 * n7 + 4 * ctx * L7 * d7) / (ctx * kv7);
    r.expect({fmt::format("decode intensity as batch → ∞, llama-2-7b, N = 7e9, ctx {:g}, a100-80gb", ctx), "000 §3.1",
              "FLOP/B", limit, kRel * limit, why_rel, cb.intensity_limit, std::nullopt,
              "", limit < ridge_a100 ? "stays below the ridge: bandwidth-bound at every batch (E23)" : ""});
    const double b_star = limit > ridge_a100 ? std::ceil(ridge_a100 * 2 * n7 / (2 * n7 + 4 * ctx * L7 * d7 - ridge_a100 * ctx * kv7)) : 0.0;
    r.expect({fmt::format("smallest batch that makes decode compute-bound, ctx {:g} (0 = none)", ctx), "000 §3.1",
              "sequences", b_star, 0.0, "an integer: ⌈B*⌉ from the closed form, exact", static_cast<double>(cb.min_batch),
              std::nullopt, "", "小到中等 batch 的 decode 是带宽瓶颈 (bandwidth-bound until the batch fills the compute)"});
  }

  // 003 Q6 point 4: at batch sizes in the thousands "weight traffic dominates again". The KV share
  // of the bytes read grows with the batch instead (E16).
  for (const std::uint64_t b : {std::uint64_t{1}, std::uint64_t{1000}}) {
    const DecodeStep s = parts.decode_step(m7, a100, DecodeQuery{n7, kDefaultWeightBytes, KvQuery{b, 1024, CacheDtype::bf16, {}}});
    const double kv = static_cast<double>(b) * 1024 * kv7;
    const double expected = 100 * kv / (2 * n7 + kv), measured = 100 * static_cast<double>(s.kv_bytes) / s.bytes;
    std::optional<Stated> stated;
    if (b == 1000) stated = Stated{"模型权重的访存开销再次占据主导 (weights dominate again: KV share < 50%)", 25.0, 25.0}.flags("E16");
    r.expect({fmt::format("KV share of the bytes a decode step reads, llama-2-7b, N = 7e9, batch {}, ctx 1024", b),
              "003 Q6", "%", expected, kRel * expected, why_rel, measured, stated,
              b == 1000 ? fmt::format("B·ctx·kv / (2N + B·ctx·kv) = {:.4g}%: the cache, not the weights, dominates (E16)",
                                      expected)
                        : std::string()});
    r.metric(fmt::format("kv_share_percent_batch{}", b), measured);
  }

  // 004 §1.5: "the last row no longer fits one 80 GB card".
  const double need = 2 * n7 + 64.0 * 4096 * kv7;
  r.expect({"weights + KV of the last row (7B, batch 64 × ctx 4096, bf16)", "004 §1.5", "GB", need / 1e9,
            kRel * need / 1e9, why_rel, (s64.weight_bytes + static_cast<double>(s64.kv_bytes)) / 1e9, std::nullopt, "",
            "最后一行已超过单卡 80GB (exceeds one 80 GB card)"});
  r.expect({"the last row fits one a100-80gb (1 = yes)", "004 §1.5", "", 0.0, 0.0, "a yes/no: exact",
            s64.weight_bytes + static_cast<double>(s64.kv_bytes) <= static_cast<double>(a100.memory_bytes) ? 1.0 : 0.0,
            std::nullopt, "", "最后一行已超过单卡 80GB"});
}

// ---- with no options: 004 §1.5's table ------------------------------------------------------

Result course_table(const RooflineParts& parts) {
  Result r{kName, kSource, kClaim, {}, {}, {}, {}};
  const ModelSpec m7 = parts.load_model(premises::kModel7b);
  const GpuSpec a100 = parts.load_gpu(kDefaultGpu);
  const double true_params = static_cast<double>(m7.num_parameters.value_or(0));

  const auto query = [](double n, std::uint64_t b, std::uint64_t ctx) {
    return DecodeQuery{n, kDefaultWeightBytes, KvQuery{b, ctx, CacheDtype::bf16, {}}};
  };
  const DecodeQuery q1 = query(kCourseParams, 1, 1024), q8 = query(kCourseParams, 8, 1024),
                    q64 = query(kCourseParams, 64, 4096);
  const DecodeStep s1 = parts.decode_step(m7, a100, q1);
  const DecodeStep s8 = parts.decode_step(m7, a100, q8);
  const DecodeStep s64 = parts.decode_step(m7, a100, q64);

  r.expect({"ridge point, A100-80GB, bf16 dense", "004 §1.5", "FLOP/B", 153.0, 0.5,
            "the document writes ≈ 153: ± half a unit", s1.ridge, Stated::parse("153", "≈ 153"),
            fmt::format("{:.4g} FLOP/s / {:.4g} B/s", a100.bf16_flops_per_s, a100.bandwidth_bytes_per_s)});
  r.expect({"tokens/s bound, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 140.0, 5.0,
            "the document writes ≈ 140: two significant figures", s1.tokens_per_s,
            Stated::parse("140", "≈ 140 tok/s"), ""})
      .headline = true;  // the claim's own figure: the 7B at batch 1 on an A100
  r.expect({"arithmetic intensity, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "FLOP/B", 1.0, 0.5,
            "the document writes ≈ 1: ± half a unit", s1.intensity, Stated::parse("1", "≈ 1"), ""});
  r.expect({"tokens/s bound, 7B, batch 8 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 892.0, 0.5,
            "the document writes 892: ± half a unit", s8.tokens_per_s, Stated::parse("892", "892 tok/s"), ""});
  r.expect({"KV bytes read, 7B MHA, batch 64 × ctx 4096, bf16", "004 §1.5 (group 5)", "GiB",
            static_cast<double>(m7.kv_bytes_per_token_16bit.value_or(0)) * 64.0 * 4096.0 / kGiB, 0.0,
            "integer byte counts (data/facts.md reference × tokens vs the library): exact",
            static_cast<double>(s64.kv_bytes) / kGiB, Stated::parse("128", "128 GiB"), ""});
  r.expect({"weight bytes read, 7B (7e9 × 2 B)", "004 §1.5 (group 5)", "GiB", 13.0, 0.5,
            "the document writes 13: ± half a unit", s64.weight_bytes / kGiB,
            Stated::parse("13", "13 GiB"), ""});
  r.expect({"arithmetic intensity, 7B, batch 64 × ctx 4096", "004 §1.5 (group 5)", "FLOP/B", 6.8, 0.05,
            "the document writes 6.8: ± half a unit of the tenths", s64.intensity,
            Stated::parse("6.8", "6.8"), ""});
  const std::pair<const char*, std::pair<const DecodeQuery*, const DecodeStep*>> rows[] = {
      {"batch 1, ctx 1024", {&q1, &s1}}, {"batch 8, ctx 1024", {&q8, &s8}},
      {"batch 64, ctx 4096", {&q64, &s64}}};
  for (const auto& [label, qs] : rows) {
    const Recomputed c = recompute(m7, a100, *qs.first);
    r.expect(intensity_expectation(fmt::format("7B, {}", label), "004 §1.5 (group 5)", *qs.second, c));
    r.expect(time_expectation(fmt::format("7B, {}", label), "004 §1.5 (group 5)", *qs.second, c));
  }

  Table t{"004 §1.5 group 5 reproduced: llama-2-7b (MHA) on a100-80gb, bf16 weights and cache",
          {"N params", "batch", "ctx", "weights GiB", "KV GiB", "GFLOP", "GB read", "FLOP/B",
           "bound", "step ms", "tok/s"},
          {}};
  const auto add_row = [&](double n, const DecodeQuery& q, const DecodeStep& s) {
    t.rows.push_back({n, static_cast<std::int64_t>(q.kv.batch),
                      static_cast<std::int64_t>(q.kv.ctx), s.weight_bytes / kGiB,
                      static_cast<double>(s.kv_bytes) / kGiB, s.flops / 1e9, s.bytes / 1e9,
                      s.intensity, bound_name(s.bound), s.time_s * 1e3, s.tokens_per_s});
  };
  add_row(kCourseParams, q1, s1);
  add_row(kCourseParams, q8, s8);
  add_row(kCourseParams, q64, s64);
  std::vector<std::pair<DecodeQuery, DecodeStep>> true_rows;
  if (true_params > 0)
    for (const DecodeQuery* q : {&q1, &q8, &q64}) {
      DecodeQuery qt = *q;
      qt.n_params = true_params;
      const DecodeStep st = parts.decode_step(m7, a100, qt);
      add_row(true_params, qt, st);
      true_rows.emplace_back(qt, st);
    }
  r.tables.push_back(std::move(t));

  const std::uint64_t ctx_alt = 128;
  Table cb{"where decode turns compute-bound (intensity = ridge), llama-2-7b, N = 7e9, a100-80gb",
           {"ctx", "answer"}, {}};
  for (std::uint64_t c : {std::uint64_t{1024}, std::uint64_t{4096}, ctx_alt}) {
    const auto res = compute_bound_batch(m7, a100, query(kCourseParams, 1, c));
    cb.rows.push_back({static_cast<std::int64_t>(c),
                       compute_bound_text(res, s1.ridge) + (c == ctx_alt ? " (a short context, for contrast)" : "")});
  }
  r.tables.push_back(std::move(cb));

  // Every GPU in the catalogue: the ridge points, to place 000 §3.1's "≈ 200".
  Table ridges{"bf16 ridge points in the catalogue", {"gpu", "bandwidth TB/s", "bf16 TFLOP/s", "ridge FLOP/B"}, {}};
  std::optional<GpuSpec> a100_40;
  for (const auto& name : gpu_names()) {
    const GpuSpec g = parts.load_gpu(name);
    if (name == "a100-40gb") a100_40 = g;
    ridges.rows.push_back({name, g.bandwidth_bytes_per_s / 1e12, g.bf16_flops_per_s / 1e12,
                           ridge_flops_per_byte(g)});
  }
  r.tables.push_back(std::move(ridges));

  r.notes.push_back(fmt::format(
      "assumptions that reproduce the course's table: N = {:.3g} parameters at {} B (bf16); the KV "
      "cache of llama-2-7b (MHA, {} B per token in bf16); ctx 1024 for batch 1 and 8, 4096 for "
      "batch 64; {}: {:.4g} TB/s and {:.4g} TFLOP/s bf16 dense; FLOPs = 2N·B + 4·B·ctx·L·d with L "
      "= {}, d = H·head_dim = {}. Step time = max(bytes / bandwidth, FLOPs / peak).",
      kCourseParams, kDefaultWeightBytes, format_number(static_cast<double>(kv_bytes_per_token_16bit(m7))), a100.name,
      a100.bandwidth_bytes_per_s / 1e12, a100.bf16_flops_per_s / 1e12, m7.n_layer,
      m7.n_head * m7.head_dim));
  if (!true_rows.empty())
    r.notes.push_back(fmt::format(
        "with llama-2-7b's true {} parameters instead of 7e9: {:.1f} tok/s at batch 1, {:.1f} at "
        "batch 8, intensity {:.3g} at batch 64 × 4096 (rows with N = {:.4g} above).",
        format_number(true_params), true_rows[0].second.tokens_per_s, true_rows[1].second.tokens_per_s,
        true_rows[2].second.intensity, true_params));
  if (a100_40)
    r.notes.push_back(fmt::format(
        "000 §3.1's 'A100 BF16 ≈ 200 FLOPs/byte' is the ridge of the A100-40GB: {:.4g} TFLOP/s / "
        "{:.4g} TB/s = {:.1f} FLOP/B; the A100-80GB SXM of 004 §1.5 has {:.4g} TB/s, hence {:.1f}.",
        a100_40->bf16_flops_per_s / 1e12, a100_40->bandwidth_bytes_per_s / 1e12,
        ridge_flops_per_byte(*a100_40), a100.bandwidth_bytes_per_s / 1e12, s1.ridge));
  r.notes.push_back(
      "metrics intensity, tokens_per_s, kv_bytes and weight_bytes are the batch-1 row; `kvlab "
      "roofline --model NAME` computes them for any model, GPU, batch and context.");

  r.plots.push_back(roofline_plot(a100, {{"7B, batch 1, ctx 1024", s1},
                                         {"7B, batch 8, ctx 1024", s8},
                                         {"7B, batch 64, ctx 4096", s64}}));
  add_step_metrics(r, s1);
  r.metric("tokens_per_s_batch8", s8.tokens_per_s);
  r.metric("intensity_batch64_ctx4096", s64.intensity);
  r.metric_exact("kv_bytes_batch64_ctx4096", s64.kv_bytes);
  course_claims_000_003(parts, m7, a100, s64, r);
  return r;
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
/// assumptions (N = 7e9 at 2 B, llama-2-7b's MHA cache, ctx 1024) at batch 1 and 8 on `dev`.
Result own_device_table(const DeviceSpec& dev, const RooflineParts& parts) {
  const GpuSpec& g = dev.spec;
  const ModelSpec m7 = parts.load_model(premises::kModel7b);
  const auto query = [](std::uint64_t b) {
    return DecodeQuery{kCourseParams, kDefaultWeightBytes, KvQuery{b, 1024, CacheDtype::bf16, {}}};
  };
  const DecodeQuery q1 = query(1), q8 = query(8);
  const DecodeStep s1 = parts.decode_step(m7, g, q1), s8 = parts.decode_step(m7, g, q8);
  Result r{kName, kSource,
           fmt::format("The course's 7B (N = 7e9 at 2 B, llama-2-7b's cache, ctx 1024) on {}: batch 1 "
                       "is {}-bound at {:.4g} tokens/s (intensity {:.3g} against a ridge of {:.4g} "
                       "FLOP/B); batch 8 reaches {:.4g} tokens/s.",
                       g.name, bound_name(s1.bound), s1.tokens_per_s, s1.intensity, s1.ridge,
                       s8.tokens_per_s),
           {}, {}, {}, {}};
  Table t{fmt::format("004 §1.5 group 5 on {}: llama-2-7b's cache, N = 7e9, bf16 weights and cache", g.name),
          {"N params", "batch", "ctx", "weights GiB", "KV GiB", "GFLOP", "GB read", "FLOP/B", "bound",
           "step ms", "tok/s"},
          {}};
  for (const auto& [q, s] : {std::pair{&q1, &s1}, std::pair{&q8, &s8}}) {
    const std::string at = fmt::format("7B on {}, batch {} × ctx 1024", g.name, q->kv.batch);
    const Recomputed c = recompute(m7, g, *q);
    r.expect(intensity_expectation(at, "004 §B.2 (c)", *s, c));
    r.expect(time_expectation(at, "004 §B.2 (c)", *s, c));
    r.expect(tokens_expectation(at, *s, c));
    t.rows.push_back({q->n_params, static_cast<std::int64_t>(q->kv.batch), static_cast<std::int64_t>(q->kv.ctx),
                      s->weight_bytes / kGiB, static_cast<double>(s->kv_bytes) / kGiB, s->flops / 1e9,
                      s->bytes / 1e9, s->intensity, bound_name(s->bound), s->time_s * 1e3, s->tokens_per_s});
  }
  r.tables.push_back(std::move(t));
  Table hw{"the device", {"quantity", "value", "unit"}, {}};
  hw.rows.push_back({"bandwidth", g.bandwidth_bytes_per_s / 1e12, "TB/s"});
  hw.rows.push_back({"peak (dense bf16 tensor rate)", g.bf16_flops_per_s / 1e12, "TFLOP/s"});
  hw.rows.push_back({"ridge = peak / bandwidth", s1.ridge, "FLOP/B"});
  if (dev.memory_known) hw.rows.push_back({"memory", static_cast<double>(g.memory_bytes) / kGB, "GB"});
  r.tables.push_back(std::move(hw));
  r.notes.push_back("device: " + dev.provenance + (g.source.empty() ? "" : "; source: " + g.source) + ".");
  r.notes.push_back(fmt::format(
      "004 §B.2 (c) asks for this figure on your own GPU: at batch 1 every weight is read once per "
      "token, so the bound is about bandwidth / (2 B × 7e9) = {:.4g} tokens/s before the KV cache's "
      "{:.3g} GB; step time = max(bytes / bandwidth, FLOPs / peak).",
      g.bandwidth_bytes_per_s / (kDefaultWeightBytes * kCourseParams), static_cast<double>(s1.kv_bytes) / kGB));
  r.notes.push_back("metrics tokens_per_s, time_s, bytes, intensity, kv_bytes and weight_bytes are the "
                    "batch-1 row; `kvlab roofline --model NAME --gpu ...` costs any model.");
  r.plots.push_back(roofline_plot(g, {{"7B, batch 1, ctx 1024", s1}, {"7B, batch 8, ctx 1024", s8}}));
  add_step_metrics(r, s1);
  r.metric("flops", s1.flops);
  r.metric("bytes", s1.bytes);
  r.metric("time_s", s1.time_s);
  r.metric("tokens_per_s_batch8", s8.tokens_per_s);
  r.metric("time_s_batch8", s8.time_s);
  return r;
}

// ---- with --model or --config: a calculator ------------------------------------------------

/// The parameter figures of the calculator and where each came from (an option or a file field).
struct ParamFigures {
  DecodeQuery query;        ///< n_params, and moe when the step is a mixture of experts
  std::string total_from;   ///< "--params" or "num_parameters"
  std::string active_from;  ///< "--active-params", "num_parameters_active" or "" (dense)
  std::string experts_from;    ///< "--experts" or "config"; "" when E is unknown
  std::string per_token_from;  ///< "--experts-per-token" or "config"; "" when k is unknown
  bool moe_declared = false;  ///< the model routes tokens (E > k) or has fewer active parameters
};

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

Result calculator(const RooflineOptions& o, const RooflineParts& parts) {
  const ModelSpec full = resolve_model(o.model, o.config, parts.load_model, parts.read_config);
  const std::string where = model_origin(o.model, o.config);
  const DeviceSpec dev = resolve_device_flags(hardware_flags(o), kDefaultGpu, parts.load_gpu);
  const GpuSpec& g = dev.spec;
  // Tensor parallelism: the step of one device, holding 1/T of the weights and its K/V heads.
  const std::uint64_t tp = o.tp ? positive_count("--tp", *o.tp) : 1;
  const TensorParallelShare share = tensor_parallel_share(full, tp);
  const ModelSpec& m = share.per_device;
  ParamFigures figures = param_figures(o, m, where);
  DecodeQuery& q = figures.query;
  q.n_params /= static_cast<double>(tp);
  if (q.moe) q.moe->active_params /= static_cast<double>(tp);
  if (o.weight_bytes) require_finite_range("--weight-bytes", *o.weight_bytes, 1.0 / 64, 64.0);
  q.bytes_per_param = o.weight_bytes.value_or(kDefaultWeightBytes);
  q.kv.batch = o.batch ? positive_count("--batch", *o.batch) : kDefaultBatch;
  q.kv.ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDefaultCtx;
  q.kv.dtype = o.kv_dtype ? with_option("--kv-dtype", [&] { return parse_cache_dtype(*o.kv_dtype); })
                          : CacheDtype::bf16;
  require_step_fits(m, q.kv, where);

  const DecodeStep s = parts.decode_step(m, g, q);
  const Recomputed c = recompute(m, g, q);
  Result r{kName, kSource,
           fmt::format("One decode step of {} on {}{} at batch {} × ctx {}: {} / {} = {:.4g} FLOP/B "
                       "against a ridge of {:.4g}: {}-bound, {:.4g} tokens/s", m.name, g.name,
                       tp > 1 ? fmt::format(" (one of {} tensor-parallel devices)", tp) : "",
                       q.kv.batch, q.kv.ctx, fmt::format("{:.4g} FLOP", s.flops),
                       fmt::format("{:.4g} B", s.bytes), s.intensity, s.ridge, bound_name(s.bound),
                       s.tokens_per_s),
           {}, {}, {}, {}};

  // Each row: the library's figure against the check's own arithmetic (recompute, above).
  const std::string at = fmt::format("{}, batch {} × ctx {}", m.name, q.kv.batch, q.kv.ctx);
  r.expect({fmt::format("FLOPs per step, {}: library vs the check's own arithmetic", at), "004 §1.5",
            "FLOP", c.flops, c.flops_tol,
            fmt::format("rounding only: both paths in double, at most {} roundings: γ_{} relative, "
                        "u = 2^-53", kFlopRounds, kFlopRounds),
            s.flops, std::nullopt,
            m.is_mla() ? "2·N_used·B + 2·B·ctx·L·H·(d_c + d_r) + 2·B·ctx·L·H·d_c"
                       : "2·N_used·B + 4·B·ctx·L·H·head_dim"});
  r.expect({fmt::format("KV bytes per step, {}: library vs {}", at,
                        c.kv_reference ? "the catalogue's reference" : "the check's own count"),
            c.kv_reference ? "004 §1.4; data/facts.md" : "004 §1.4", "B", static_cast<double>(c.kv_bytes),
            0.0, "integer byte counts: exact", static_cast<double>(s.kv_bytes), std::nullopt,
            c.kv_reference ? "kv_bytes_per_token_16bit / layers × bits/16 × B × positions held (ctx per full layer)"
                           : "2·n_kv·head_dim (MLA: d_c + d_r) × bits/8 × B × positions held (ctx per full layer)"});
  r.expect({fmt::format("weight bytes read per step, {} ({}): library vs the check's own arithmetic",
                        at, q.moe && q.kv.batch == 1 ? "MoE, batch 1: N_active"
                                                     : weight_model_name(s.weights.model)),
            "004 §1.5", "B", c.weight_bytes, c.weight_tol, c.weight_why, s.weight_bytes, std::nullopt, ""});
  r.expect({fmt::format("bytes read per step, {}: library vs the check's own arithmetic", at),
            "004 §1.5", "B", c.bytes, c.bytes_tol,
            fmt::format("rounding only: the weight-bytes bound + γ_{} (the KV count to double and "
                        "the sum, both paths)", kBytesRounds),
            s.bytes, std::nullopt, ""});
  r.expect(time_expectation(at, "004 §1.5", s, c));
  r.expect({fmt::format("tokens/s bound, {}: library vs the check's own arithmetic", at), "004 §1.5",
            "tok/s", c.tokens_per_s, c.tokens_tol,
            fmt::format("rounding only: the step-time bound, relative, + γ_{} for B / time on both "
                        "paths", kRateRounds),
            s.tokens_per_s, std::nullopt, ""});
  const bool bound_ok = c.bound_tie || s.bound == c.bound;
  r.expect({fmt::format("bound named by the library agrees with the check's times (1 = yes)"),
            "004 §1.5", "", 1.0, 0.0,
            c.bound_tie ? "a yes/no check; the two times are within rounding of each other here, "
                          "so either bound is accepted"
                        : "a yes/no check: memory when bytes / bandwidth >= FLOPs / peak",
            bound_ok ? 1.0 : 0.0, std::nullopt,
            fmt::format("check: memory {:.6g} ms, compute {:.6g} ms", c.time_memory_s * 1e3,
                        c.time_compute_s * 1e3)});
  if (!c.kv_reference)
    r.notes.push_back(
        "this config has no kv_bytes_per_token_16bit, so nothing independent backs the KV bytes: "
        "the check recounts them from the same config fields with its own arithmetic. That catches "
        "a slip in the library's formula, not a config whose fields mean something else than kvlab "
        "reads them as.");

  const WeightRead& w = s.weights;
  Table t{fmt::format("decode step{}: {} on {} ({})", tp > 1 ? ", per device" : "", m.name, g.name,
                      g.description),
          {"quantity", "value", "unit / from"}, {}};
  if (tp > 1) {
    t.rows.push_back({"tensor-parallel devices T", static_cast<std::int64_t>(tp), "--tp"});
    t.rows.push_back({"query heads per device", static_cast<std::int64_t>(share.query_heads),
                      fmt::format("H / T = {} / {}", full.n_head, tp)});
    if (m.is_mla())
      t.rows.push_back({"latent cache per device", "whole", fmt::format("replicated on all {} devices", tp)});
    else
      t.rows.push_back({"K/V heads per device", static_cast<std::int64_t>(share.kv_heads),
                        share.kv_replicas > 1
                            ? fmt::format("{} K/V heads < T: each replicated on {} devices", full.n_kv_head,
                                          share.kv_replicas)
                            : fmt::format("n_kv / T = {} / {}", full.n_kv_head, tp)});
  }
  t.rows.push_back({tp > 1 ? "parameters N per device (N / T)" : "parameters N (total)", q.n_params,
                    figures.total_from});
  if (q.moe) {
    t.rows.push_back({"active parameters per token N_active", q.moe->active_params, figures.active_from});
    if (q.moe->experts) {
      t.rows.push_back({"routed experts E per MoE layer", static_cast<std::int64_t>(*q.moe->experts),
                        figures.experts_from});
      t.rows.push_back({"routed experts k per token", static_cast<std::int64_t>(*q.moe->experts_per_token),
                        figures.per_token_from});
    }
    if (w.model == WeightModel::moe_uniform) {
      t.rows.push_back({"shared parameters S = N_active − k·P_e", w.shared_params, "parameters"});
      t.rows.push_back({"parameters per routed expert P_e = (N − N_active)/(E − k)", w.params_per_expert,
                        "parameters (summed over MoE layers)"});
      t.rows.push_back({"distinct experts read per MoE layer D(B) = E·(1 − (1 − k/E)^B)",
                        w.experts_touched, "experts (expected, uniform routing)"});
    }
    t.rows.push_back({"parameters read this step N_read", w.params_read, weight_model_name(w.model)});
    t.rows.push_back({"N_read, lower bound (the batch shares its experts)", w.params_read_low, "parameters"});
    t.rows.push_back({"N_read, upper bound", w.params_read_high,
                      w.model == WeightModel::moe_uniform ? "S + min(E, B·k)·P_e" : "min(N, B·N_active)"});
  }
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
  r.plots.push_back(roofline_plot(g, {{fmt::format("{}, batch {}, ctx {}", m.name, q.kv.batch, q.kv.ctx), s}}));
  t.rows.push_back({"tokens/s bound", s.tokens_per_s, "tok/s"});
  r.tables.push_back(std::move(t));

  if (q.moe) {
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
    else if (q.kv.batch > 1) {
      // The lower bound is a dense step of N_active parameters: read N_active, use N_active.
      DecodeQuery low = q;
      low.n_params = q.moe->active_params;
      low.moe.reset();
      const DecodeStep sl = parts.decode_step(m, g, low);
      r.notes.push_back(fmt::format(
          "MoE model: {} has no num_local_experts / num_experts_per_tok (E and k), so only bounds "
          "are known: N_active = {} <= N_read <= min(N, B·N_active) = {}. The step is costed at "
          "the upper bound (worst-case routing: no two tokens share an expert); at the lower bound "
          "(every token routed to the same experts) it would take {:.4g} ms, {:.4g} tokens/s. Give "
          "--experts E --experts-per-token k for the expected figure under uniform routing.",
          m.name, format_number(w.params_read_low), format_number(w.params_read_high),
          sl.time_s * 1e3, sl.tokens_per_s));
    }
    else
      r.notes.push_back("MoE at batch 1: the one token reads exactly its k experts and the shared "
                        "parameters, N_read = N_active, whatever E and k are.");
  } else if (m.is_moe()) {
    r.notes.push_back(fmt::format("{} is a mixture of experts, but N_active = N here: costed as "
                                  "dense, every parameter read and used.", m.name));
  }
  const ComputeBoundBatch cb = compute_bound_batch(m, g, q);
  r.notes.push_back("compute-bound at this ctx: " + compute_bound_text(cb, s.ridge) + ".");
  if (tp > 1)
    r.notes.push_back(fmt::format(
        "tensor parallelism over {} devices (vLLM's sharding): each holds 1/{} of the weights, {} of "
        "the {} query heads and {}; every figure above is one device's, and its tokens/s is the "
        "group's, since the devices decode the same batch together. The all-reduces between them are "
        "not costed: a bound.",
        tp, tp, share.query_heads, full.n_head,
        m.is_mla() ? "the whole latent cache (MLA has no K/V heads to split)"
        : share.kv_replicas > 1 ? fmt::format("one K/V head ({} heads < {} devices: each is replicated on {})",
                                              full.n_kv_head, tp, share.kv_replicas)
                                : fmt::format("{} of the {} K/V heads", share.kv_heads, full.n_kv_head)));
  if (dev.provenance != g.name + " (catalogue)")
    r.notes.push_back("device: " + dev.provenance + ".");
  const double footprint = q.n_params * q.bytes_per_param + static_cast<double>(s.kv_bytes);
  if (dev.memory_known && footprint > static_cast<double>(g.memory_bytes))
    r.notes.push_back(fmt::format("all weights + KV = {:.4g} GB exceed the {:.4g} GB of one {}: the "
                                  "figures are a bound for the arithmetic, not a deployable setup.",
                                  footprint / kGB, static_cast<double>(g.memory_bytes) / kGB, g.name));
  if (o.params && m.num_parameters && static_cast<double>(*m.num_parameters) != *o.params &&
      static_cast<double>(*m.num_parameters) <= 1e15) {
    DecodeQuery qt = q;
    qt.n_params = static_cast<double>(*m.num_parameters) / static_cast<double>(tp);
    if (qt.moe && qt.moe->active_params > qt.n_params) qt.moe.reset();
    try {
      const DecodeStep st = parts.decode_step(m, g, qt);
      r.notes.push_back(fmt::format("with {}'s own num_parameters = {} instead: {:.4g} tokens/s, "
                                    "intensity {:.4g}.", m.name, format_number(qt.n_params),
                                    st.tokens_per_s, st.intensity));
    } catch (const InputError&) {
      // The file's count does not fit the other figures given (e.g. --active-params): no comparison.
    }
  }
  if (m.is_mla())
    r.notes.push_back("MLA attention FLOPs use the absorbed form of 000 §4.3.3: 2·(d_c + d_r) for "
                      "the scores and 2·d_c for AV per position, head and layer.");
  r.notes.push_back("the peak is the GPU's dense bf16 tensor rate whatever the dtypes; activations, "
                    "norms and softmax are ignored, as in the course.");

  add_step_metrics(r, s);
  r.metric("flops", s.flops);
  r.metric("bytes", s.bytes);
  r.metric("time_s", s.time_s);
  r.metric("params_read", w.params_read);
  r.metric("params_used", w.params_used);
  if (cb.reachable && cb.min_batch > 0) r.metric("compute_bound_batch", static_cast<double>(cb.min_batch));
  return r;
}

}  // namespace

Result run_roofline(const RooflineOptions& opts, const RunContext& /*ctx*/, const RooflineParts& parts) {
  if (!opts.model && !opts.config) {
    const char* given = opts.tp ? "--tp" : opts.batch ? "--batch" : opts.ctx ? "--ctx"
                        : opts.params ? "--params" : opts.active_params ? "--active-params"
                        : opts.experts ? "--experts" : opts.experts_per_token ? "--experts-per-token"
                        : opts.weight_bytes ? "--weight-bytes" : opts.kv_dtype ? "--kv-dtype" : nullptr;
    if (given)
      throw InputError(fmt::format("{}: needs --model or --config (without either, roofline shows "
                                   "the course's table, or with --gpu alone the course's 7B on that GPU)",
                                   given));
    const HardwareFlags hw = hardware_flags(opts);
    if (hw.any()) return own_device_table(resolve_device_flags(hw, "", parts.load_gpu), parts);
    return course_table(parts);
  }
  return calculator(opts, parts);
}

/// `kvlab roofline`: binds the flags and calls run_roofline.
class RooflineCheck final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override { return kSummary; }
  std::string derivation() const override {
    return "A decode step reads every weight once (N · bytes per parameter) and the whole KV cache\n"
           "(batch · ctx · KV bytes per token), and computes 2·N FLOPs per sequence for the weights plus\n"
           "4·ctx·L·d for attention (QKᵀ and AV).\n"
           "Arithmetic intensity = FLOPs / bytes. At batch 1 it is about 2N / 2N = 1 FLOP/B.\n"
           "The ridge point of a GPU is peak FLOP/s / bandwidth: A100-80GB, 312e12 / 2.039e12 ≈ 153 FLOP/B.\n"
           "Below the ridge the step takes bytes / bandwidth: a 7B model in bf16 at batch 1, ctx 1024:\n"
           "(14e9 + 0.54e9) B / 2.039e12 B/s ≈ 7.1 ms, ≈ 140 tokens/s.\n"
           "Batching shares the weight bytes among B sequences but not the KV bytes, so intensity rises with\n"
           "B only while the weights dominate; at long contexts the KV cache pulls it back down\n"
           "(batch 64 × 4096: 128 GiB of KV against 13 GiB of weights, intensity ≈ 6.8).\n"
           "Source: 004 §1.5 (group 5); 000 §1.1, §3.1; 003 Q6.\n";
  }
  bool has_plot() const override { return true; }
  std::string description() const override {
    return "Without --model or --config: 004 §1.5's decode table on an A100-80GB, with the "
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
           "on it (004 §B.2 (c)). --tp N: one of N tensor-parallel devices (vLLM's sharding).";
  }
  void bind(OptionSet& sub) override {
    model_opt_ = sub.add_option("--model", model_, "Catalogue model, e.g. llama-2-7b (data/models)");
    config_opt_ = sub.add_option("--config", config_, "A Hugging Face config.json instead of --model")
                      ->type_name("FILE")
                      ->check(PathGiven());
    model_opt_->excludes(config_opt_);
    gpu_opt_ = sub.add_option("--gpu", gpu_,
                              "Catalogue GPU (data/hardware; default a100-80gb) or your own FILE.json in "
                              "its schema; alone: the course's 7B at batch 1 and 8 on it")
                   ->type_name("NAME|FILE");
    bandwidth_opt_ = sub.add_option("--bandwidth", bandwidth_,
                                    "Memory bandwidth, e.g. 3.35TB/s or 900GiB/s (bare number: bytes/s); "
                                    "overrides --gpu's, or with --peak-flops defines the device")
                         ->type_name("RATE");
    peak_opt_ = sub.add_option("--peak-flops", peak_flops_,
                               "Dense bf16 peak, e.g. 989.5TFLOPS (bare number: FLOP/s); overrides "
                               "--gpu's, or with --bandwidth defines the device")
                    ->type_name("RATE");
    memory_opt_ = sub.add_option("--memory", memory_,
                                 "Device memory, e.g. 80GiB or 141GB (bare number: bytes)")
                      ->type_name("SIZE");
    tp_opt_ = sub.add_option("--tp", tp_, "Tensor-parallel devices: weights and K/V heads split over N "
                                          "(K/V heads replicated when N exceeds them), per device")
                  ->check(IntRange(1, 1024));
    const auto positive = PositiveCount();
    batch_opt_ = sub.add_option("--batch", batch_, "Sequences decoded together (default 1)")->check(positive);
    ctx_opt_ = sub.add_option("--ctx", ctx_, "Cached positions per sequence, e.g. 4096, 4k, 128k (default 4096)")
                   ->transform(TokenCount());
    params_opt_ = sub.add_option("--params", params_,
                                 "All parameters N, every expert of an MoE, e.g. 7e9 (default num_parameters)")
                      ->check(FiniteRange(1.0, 1e15));
    active_opt_ = sub.add_option("--active-params", active_params_,
                                 "MoE: parameters one token uses, e.g. 12.88e9 (default num_parameters_active)")
                      ->check(FiniteRange(1.0, 1e15));
    experts_opt_ = sub.add_option("--experts", experts_,
                                  "MoE: routed experts E per layer (default num_local_experts)")
                       ->check(IntRange(1, std::int64_t{1} << 31));
    per_token_opt_ = sub.add_option("--experts-per-token", experts_per_token_,
                                    "MoE: routed experts k per token (default num_experts_per_tok)")
                         ->check(IntRange(1, std::int64_t{1} << 31));
    wbytes_opt_ = sub.add_option("--weight-bytes", weight_bytes_, "Bytes per parameter (default 2)")
                      ->check(FiniteRange(1.0 / 64, 64.0));
    dtype_opt_ = sub.add_option("--kv-dtype", kv_dtype_, "Cache element type (default bf16)")
                     ->check(IsMember({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}));
  }
  Result run(const RunContext& ctx) override {
    RooflineOptions o;
    if (model_opt_ && model_opt_->given()) o.model = model_;
    if (config_opt_ && config_opt_->given()) o.config = config_;
    if (gpu_opt_ && gpu_opt_->given()) o.gpu = gpu_;
    if (bandwidth_opt_ && bandwidth_opt_->given()) o.bandwidth = bandwidth_;
    if (peak_opt_ && peak_opt_->given()) o.peak_flops = peak_flops_;
    if (memory_opt_ && memory_opt_->given()) o.memory = memory_;
    if (tp_opt_ && tp_opt_->given()) o.tp = tp_;
    if (batch_opt_ && batch_opt_->given()) o.batch = batch_;
    if (ctx_opt_ && ctx_opt_->given()) o.ctx = ctx_;
    if (params_opt_ && params_opt_->given()) o.params = params_;
    if (active_opt_ && active_opt_->given()) o.active_params = active_params_;
    if (experts_opt_ && experts_opt_->given()) o.experts = experts_;
    if (per_token_opt_ && per_token_opt_->given()) o.experts_per_token = experts_per_token_;
    if (wbytes_opt_ && wbytes_opt_->given()) o.weight_bytes = weight_bytes_;
    if (dtype_opt_ && dtype_opt_->given()) o.kv_dtype = kv_dtype_;
    return run_roofline(o, ctx);
  }

 private:
  std::string model_, config_, gpu_, kv_dtype_, bandwidth_, peak_flops_, memory_;
  std::int64_t batch_ = 1, ctx_ = 4096, experts_ = 1, experts_per_token_ = 1, tp_ = 1;
  double params_ = 0.0, active_params_ = 0.0, weight_bytes_ = 2.0;
  Option *model_opt_ = nullptr, *config_opt_ = nullptr, *gpu_opt_ = nullptr, *batch_opt_ = nullptr,
              *ctx_opt_ = nullptr, *params_opt_ = nullptr, *active_opt_ = nullptr,
              *experts_opt_ = nullptr, *per_token_opt_ = nullptr, *wbytes_opt_ = nullptr,
              *dtype_opt_ = nullptr, *bandwidth_opt_ = nullptr, *peak_opt_ = nullptr,
              *memory_opt_ = nullptr, *tp_opt_ = nullptr;
};

KVLAB_REGISTER_CHECK(50, RooflineCheck);

}  // namespace kvlab::checks
