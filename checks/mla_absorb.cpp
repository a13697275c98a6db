// mla-absorb — 000 §4.3.3: the absorb trick is an exact rewrite, and it is what keeps decode cheap.
//
// Claim: with W̃_QK,i = W_UQ,i W_UK,iᵀ precomputed and W_UV,i folded into W_O, attention runs on the
// cached latent c_KV directly ("完全不需要还原 K/V") and gives the same result as up-projecting K
// and V; that is why MLA's small cache does not cost decode FLOPs. kvlab runs one MLA mini-GPT
// both ways (prefill, then cached decode) and compares every logit; it counts the multiply-adds
// and elements read of the last decode step where the products are made (mla_attention), checks
// them against the closed form, and evaluates the closed form at DeepSeek-V2's shapes.
// Expected: max |Δlogits| = 0 within 2·n·u·max(1, |logit|) (n the summed lengths along a logit's
// path, the rounding bound of incremental-vs-full); counts exact (tolerance 0).
//
//   kvlab mla-absorb [--prefill 8] [--decode 8] [--layers 2] [--kv-lora-rank 32] [--q-lora-rank 24]
//                    [--rope-head-dim 4] [--model deepseek-v2] [--ctx 4096]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/mla_absorb.hpp"
#include "support/mla_rounding.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "io/catalogue.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::mla_absorb {
namespace {

// Largest sizes accepted: the naive path up-projects the whole cache every step; 64 + 64 tokens
// through 4 layers at d_c 128, d_q 128, d_r 64 is about 0.3 s.
constexpr int kMaxTokens = 64;
constexpr int kMaxLayers = 4;
constexpr int kMaxLatent = 128;
constexpr int kMaxRope = 64;
constexpr std::int64_t kMaxCtx = 1 << 24;
constexpr int kHeads = 8, kHeadDim = 8, kModel = 64;

MlaConfig mini_config(const MlaAbsorbOptions& o) {
  MlaConfig c;
  c.n_layer = o.layers;
  c.d_model = kModel;
  c.n_head = kHeads;
  c.head_dim = kHeadDim;
  c.kv_lora_rank = o.kv_lora_rank;
  c.q_lora_rank = o.q_lora_rank;
  c.rope_head_dim = o.rope_head_dim;
  return c;
}

// Prefill then decode one token at a time, on both paths: the logits of each and the counts of
// the last decode step.
template <class T>
void run_paths(MlaAbsorbMeasured& m, const AbsorbFn<T>& absorb_fn) {
  const MlaConfig& c = m.config;
  const MlaAbsorbOptions& o = m.options;
  MlaGPT<T> model(c, m.context.seed);
  for (int l = 0; l < c.n_layer; ++l) model.absorbed()[l] = absorb_fn(model.blocks()[l].mla, c);
  const int total = o.prefill + o.decode;
  const auto ids = random_tokens(m.context.seed + 1, total, c.vocab_size);
  Mat<T> logits[2];
  MlaCounts* last_step[2] = {&m.naive_step, &m.absorbed_step};
  const MlaPath paths[2] = {MlaPath::naive, MlaPath::absorbed};
  for (int p = 0; p < 2; ++p) {
    LatentCache<T> cache = model.make_cache(total);
    logits[p].resize(total, c.vocab_size);
    logits[p].topRows(o.prefill) = model.forward(std::span(ids).first(o.prefill), 0, cache, paths[p]);
    for (int t = o.prefill; t < total; ++t) {
      MlaCounts step;
      logits[p].row(t) = model.forward(std::span(ids).subspan(t, 1), t, cache, paths[p], &step);
      *last_step[p] = step;
    }
  }
  m.diff = static_cast<double>(max_abs(logits[0] - logits[1]));
  m.max_logit = static_cast<double>(max_abs(logits[0]));
}

double bound(const MlaAbsorbMeasured& m) {
  const double n = mla_reduction_length(m.config, m.options.prefill + m.options.decode);
  return 2 * n * unit_roundoff(m.context.dtype) * std::max(1.0, m.max_logit);
}

// The closed form for one decode step of the mini-GPT with S cached positions.
MlaStepFlops mini_formula(const MlaAbsorbMeasured& m) {
  const MlaConfig& c = m.config;
  return mla_decode_step_formula(c.d_model, c.n_head, c.head_dim, c.kv_lora_rank, c.query_dim(), c.q_lora_rank > 0,
                                 c.rope_head_dim, static_cast<std::uint64_t>(m.options.prefill + m.options.decode));
}

// The decode-step rows: FLOPs and weight elements per path, cache elements of both.
void judge_counts(const MlaAbsorbMeasured& m, std::vector<Expectation>& rows) {
  const MlaConfig& c = m.config;
  const auto S = static_cast<std::uint64_t>(m.options.prefill + m.options.decode);
  const MlaStepFlops f = mini_formula(m);
  const double L = c.n_layer;
  const char* names[2] = {"naive", "absorbed"};
  const std::uint64_t formula[2] = {f.naive, f.absorbed};
  const std::uint64_t weights[2] = {f.naive_weights, f.absorbed_weights};
  const MlaCounts* counted[2] = {&m.naive_step, &m.absorbed_step};
  for (int p = 0; p < 2; ++p) {
    rows.push_back({.quantity = fmt::format("FLOPs of the last decode step ({} cached positions), {}", S, names[p]),
                    .source = "000 §4.3.3", .unit = "FLOP", .expected = L * formula[p], .tolerance = 0,
                    .why = "integer count against the closed form (2 × multiply-adds)",
                    .measured = double(counted[p]->flops)});
    rows.push_back({.quantity = fmt::format("weight elements read, last decode step, {}", names[p]),
                    .source = "000 §4.3.3", .unit = "elements", .expected = L * weights[p], .tolerance = 0,
                    .why = "integer count against the closed form", .measured = double(counted[p]->weight_elements)});
  }
  rows.push_back({.quantity = "cache elements read, last decode step (both paths read only c_KV and k_R)",
                  .source = "000 §4.3.3", .unit = "elements", .expected = L * S * (c.kv_lora_rank + c.rope_head_dim),
                  .tolerance = 0, .why = "integer count: layers · S · (d_c + d_r)",
                  .measured = double(std::max(m.naive_step.cache_elements, m.absorbed_step.cache_elements))});
}

// The mini-GPT's decode step as counted, and the note on the mini-GPT.
void present_mini(const MlaAbsorbMeasured& m, Result& r) {
  const MlaConfig& c = m.config;
  const MlaCounts &naive = m.naive_step, &absorbed = m.absorbed_step;
  r.metric("max_abs_diff_logits", m.diff);
  Table steps{"one decode step (all layers), counted in mla_attention vs the closed form",
              {"quantity", "naive (up-project K, V)", "absorbed", "naive / absorbed"}, {}};
  if (m.options.decode > 0) {
    steps.rows.push_back({std::string("FLOPs (mini-GPT, counted)"), std::int64_t(naive.flops),
                          std::int64_t(absorbed.flops), double(naive.flops) / double(absorbed.flops)});
    steps.rows.push_back({std::string("weight elements read (mini-GPT, counted)"), std::int64_t(naive.weight_elements),
                          std::int64_t(absorbed.weight_elements),
                          double(naive.weight_elements) / double(absorbed.weight_elements)});
    r.metric_exact("flops_decode_step_naive", naive.flops);
    r.metric_exact("flops_decode_step_absorbed", absorbed.flops);
  } else {
    r.notes.push_back("--decode 0: no decode step, so the FLOP counts are left out.");
  }
  r.tables.push_back(std::move(steps));
  r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model {}, {} heads × d_h {}, d_c {}, d_q {}, d_r {}, {} on {}, "
                                "seed {}", c.n_layer, c.d_model, c.n_head, c.head_dim, c.kv_lora_rank,
                                c.q_lora_rank > 0 ? std::to_string(c.q_lora_rank) : std::string("none (c_Q = h)"),
                                c.rope_head_dim, dtype_name(m.context.dtype), device_name(m.context.device),
                                m.context.seed));
}

// The closed form at --model's shapes (not run: W̃_OV alone is H·d_c·D elements).
void present_real(const MlaAbsorbMeasured& m, Result& r) {
  const ModelSpec& spec = m.model;
  const MlaStepFlops& f = m.real;
  const auto S = static_cast<std::uint64_t>(m.options.ctx);
  const double cache = double(S * (*spec.kv_lora_rank + *spec.qk_rope_head_dim));
  Table real{fmt::format("{} per layer, one decode step at {} cached positions (closed form; not run)", spec.name, S),
             {"quantity", "naive (up-project K, V)", "absorbed", "naive / absorbed"}, {}};
  real.rows.push_back({std::string("FLOPs"), double(f.naive), double(f.absorbed), double(f.naive) / f.absorbed});
  real.rows.push_back({std::string("weight elements read"), double(f.naive_weights), double(f.absorbed_weights),
                       double(f.naive_weights) / f.absorbed_weights});
  real.rows.push_back({std::string("cache elements read"), cache, cache, 1.0});
  r.tables.push_back(std::move(real));
  r.metric("real_model_flops_ratio_naive_over_absorbed", double(f.naive) / f.absorbed);
  r.metric("real_model_weight_ratio_naive_over_absorbed", double(f.naive_weights) / f.absorbed_weights);
  r.notes.push_back(fmt::format(
      "{}: absorbing saves the per-step up-projection of all {} cached latents ({}× fewer FLOPs), but the "
      "precomputed W̃_QK (H·d_q·d_c) and W̃_OV (H·d_c·D) are larger than the factors they replace ({}× the weight "
      "elements): at small batch decode reads weights, and applying W_UQ,i then W_UK,iᵀ to the query at run time "
      "(the same association, without storing W̃_QK) keeps them at their factored size.", spec.name, S,
      fmt::format("{:.3g}", double(f.naive) / f.absorbed), fmt::format("{:.3g}", double(f.absorbed_weights) / f.naive_weights)));
  r.notes.push_back("FLOPs are 2 × multiply-adds of the matrix products and dot products; softmax, RoPE and scaling "
                    "(O(S·H), the same in both paths) are not counted. Cache elements are counted once per step.");
}

void present(const MlaAbsorbMeasured& m, Result& r) {
  present_mini(m, r);
  present_real(m, r);
}

}  // namespace

/// Longest chain of summed terms a logit passes through, over both paths (the n of 2·n·u): per
/// layer the projections (D for W_DQ, W_DKV, W_KR; d_q for W_UQ, W_QR, W̃_QK; d_c for W_UK, W_UV,
/// the latent score and output; d_h for forming W̃), the scores (d_h + d_r), softmax and weighted
/// sum (2S), the output projections (H·d_h naive, H·d_c absorbed), the MLP (4D + D); plus the LM head.
MlaStepFlops mla_decode_step_formula(std::uint64_t D, std::uint64_t H, std::uint64_t dh, std::uint64_t dc,
                                     std::uint64_t dq, bool q_latent, std::uint64_t dr, std::uint64_t S) {
  // Shared by both paths: c_Q = h W_DQ, q_R = c_Q W_QR, c_KV = h W_DKV, k_R = h W_KR.
  const std::uint64_t common_w = (q_latent ? D * dq : 0) + dq * H * dr + D * dc + D * dr;
  MlaStepFlops f;
  // naive: q_C = c_Q W_UQ; K_C, V = C W_UK, C W_UV over all S positions; scores (d_h + d_r) and
  // weighted sum (d_h) per head and position; o W_O.
  f.naive_weights = common_w + dq * H * dh + 2 * dc * H * dh + H * dh * D;
  f.naive = 2 * (common_w + dq * H * dh + 2 * S * dc * H * dh + S * H * (dh + dr + dh) + H * dh * D);
  // absorbed: c_Q W̃_QK,i per head; scores (d_c + d_r) and latent sum (d_c) per head and position;
  // Σ_i ĉ_i W̃_OV,i.
  f.absorbed_weights = common_w + H * dq * dc + H * dc * D;
  f.absorbed = 2 * (common_w + H * dq * dc + S * H * (dc + dr + dc) + H * dc * D);
  return f;
}

ModelSpec mla_absorb_model(const MlaAbsorbOptions& o) {
  ModelSpec m;
  try {
    m = load_model(o.model);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--model: {}", e.what()));
  }
  if (!m.is_mla() || !m.qk_nope_head_dim)
    throw InputError(fmt::format("--model: '{}' is not an MLA model with kv_lora_rank, qk_rope_head_dim and "
                                 "qk_nope_head_dim", o.model));
  for (std::uint64_t v : {m.d_model, m.n_head, *m.qk_nope_head_dim, *m.kv_lora_rank, *m.qk_rope_head_dim,
                          m.q_lora_rank.value_or(m.d_model)})
    if (v > (1u << 16)) throw InputError(fmt::format("--model: '{}': sizes above 65536 are not evaluated", o.model));
  const auto S = static_cast<std::uint64_t>(o.ctx);
  const double largest = 4.0 * S * double(*m.kv_lora_rank) * double(m.n_head) * double(*m.qk_nope_head_dim) +
                         2.0 * S * double(m.n_head) * double(*m.kv_lora_rank + *m.qk_rope_head_dim) * 4;
  if (largest > 1e18)
    throw InputError(fmt::format("--ctx: {} cached positions of '{}' need {:.3g} FLOPs per step, beyond the "
                                 "exact 64-bit count (at most 1e18)", o.ctx, m.name, largest));
  return m;
}

MlaAbsorbMeasured measure_mla_absorb(const MlaAbsorbOptions& o, const RunContext& ctx, const MlaAbsorbParts& parts) {
  MlaAbsorbMeasured m{.options = o, .context = ctx, .config = mini_config(o), .model = mla_absorb_model(o)};
  with_dtype(ctx.dtype, [&]<class T>() {
    AbsorbFn<T> fn;
    if constexpr (std::is_same_v<T, double>) fn = parts.absorb_f64;
    else fn = parts.absorb_f32;
    if (!fn) fn = [](const MlaWeights<T>& w, const MlaConfig& c) { return absorb(w, c); };
    run_paths<T>(m, fn);
  });
  const ModelSpec& s = m.model;
  m.real = mla_decode_step_formula(s.d_model, s.n_head, *s.qk_nope_head_dim, *s.kv_lora_rank,
                                   s.q_lora_rank.value_or(s.d_model), s.q_lora_rank.has_value(), *s.qk_rope_head_dim,
                                   static_cast<std::uint64_t>(o.ctx));
  return m;
}

std::vector<Expectation> judge_mla_absorb(const MlaAbsorbMeasured& m) {
  const double n = mla_reduction_length(m.config, m.options.prefill + m.options.decode);
  const Dtype dtype = m.context.dtype;
  std::vector<Expectation> rows;
  rows.push_back({.quantity = fmt::format("max |Δlogits| naive vs absorbed, {} prefill + {} decode", m.options.prefill,
                                          m.options.decode),
                  .source = "000 §4.3.3",
                  .unit = "",
                  .expected = 0,
                  .tolerance = bound(m),
                  .why = fmt::format("rounding: 2·n·u·max(1, |logit|), n = {} summed terms, u = {:.2g} ({})", n,
                                     unit_roundoff(dtype), dtype_name(dtype)),
                  .measured = m.diff,
                  .document = "等价变换: c_Qᵀ W̃ c_KV, W_UV 吸进 W_O"});
  if (m.options.decode > 0) judge_counts(m, rows);
  return rows;
}

const CheckDef<MlaAbsorbOptions, MlaAbsorbMeasured>& mla_absorb_check() {
  static const CheckDef<MlaAbsorbOptions, MlaAbsorbMeasured> def{
      .spec = {.name = "mla-absorb",
               .order = 120,
               .source = "000 §4.3.3",
               .summary = "MLA absorbed = naive logits; FLOPs and bytes per decode step",
               .claim_zh = "MLA 矩阵吸收后的 logits 与朴素计算一致；每个解码步的 FLOPs 与字节",
               .description =
                   "Runs one MLA mini-GPT with the naive path (up-project K and V from the latent cache)\n"
                   "and the absorbed path (W_UQ W_UKᵀ per head, W_UV folded into W_O), prefill then cached\n"
                   "decode, and compares every logit within a float rounding bound; counts FLOPs and elements\n"
                   "read per decode step in the code path, and evaluates the same formula for a real model.",
               .derivation =
                   "Naive MLA up-projects each cached latent: k_j^h = W_UK^h c_j, v_j^h = W_UV^h c_j. The score is\n"
                   "  q_h · k_j^h = (W_UQ^h c_q)ᵀ (W_UK^h c_j) = c_qᵀ (W_UQ^hᵀ W_UK^h) c_j,\n"
                   "and W_UQ^hᵀ W_UK^h can be multiplied once per head, so scores are taken against the cached\n"
                   "latents without materialising K. Likewise o_h = Σ_j a_j W_UV^h c_j = W_UV^h (Σ_j a_j c_j), and\n"
                   "W_UV^h folds into W_O. The two paths are the same mathematics in a different association order:\n"
                   "logits agree to float rounding, while the absorbed step reads only the latent cache.\n"
                   "Source: 000 §4.3.3.\n",
               .claim = "MLA's absorb trick (W_UQᵀW_UK precomputed per head, W_UV folded into W_O) gives the same "
                        "logits as up-projecting K and V, and decodes from the latent cache without forming K or V.",
               .traits = {.dtype = true}},
      .options = {{"--prefill", &MlaAbsorbOptions::prefill, Allowed::integers(1, kMaxTokens), "Prompt tokens"},
                  {"--decode", &MlaAbsorbOptions::decode, Allowed::integers(0, kMaxTokens),
                   "Tokens decoded one at a time"},
                  {"--layers", &MlaAbsorbOptions::layers, Allowed::integers(1, kMaxLayers), "Layers"},
                  {"--kv-lora-rank", &MlaAbsorbOptions::kv_lora_rank, Allowed::integers(1, kMaxLatent),
                   "Latent width d_c"},
                  {"--q-lora-rank", &MlaAbsorbOptions::q_lora_rank, Allowed::integers(0, kMaxLatent),
                   "Query latent d_q (0: none)"},
                  {"--rope-head-dim", &MlaAbsorbOptions::rope_head_dim, Allowed::integers(2, kMaxRope),
                   "Decoupled RoPE width d_r (even)"},
                  {"--model", &MlaAbsorbOptions::model, Allowed::any_value(),
                   "MLA model for the closed-form table: catalogue name or config.json"},
                  {"--ctx", &MlaAbsorbOptions::ctx, Allowed::integers(1, kMaxCtx), "Cached positions for that table"}},
      .constraints =
          [](const MlaAbsorbOptions& o) {
            if (o.rope_head_dim % 2 != 0)
              throw InputError(
                  fmt::format("--rope-head-dim: must be even (RoPE rotates pairs) (got {})", o.rope_head_dim));
            mla_absorb_model(o);
          },
      .measure = [](const MlaAbsorbOptions& o, const RunContext& ctx) { return measure_mla_absorb(o, ctx); },
      .judge = judge_mla_absorb,
      .present = present};
  return def;
}

Result run_mla_absorb(const MlaAbsorbOptions& o, const RunContext& ctx, const MlaAbsorbParts& parts) {
  return run_check(mla_absorb_check(), o, ctx, [&parts](const MlaAbsorbOptions& opts, const RunContext& c) {
    return measure_mla_absorb(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(mla_absorb_check);

}  // namespace kvlab::checks::mla_absorb
