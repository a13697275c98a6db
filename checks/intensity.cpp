// intensity — 003 part 1, Q3 (answers 2, 3); 000 §3.1: arithmetic intensity of the MLP, of decode
// attention and of prefill.
//
// Claims. 000 §3.1: per layer FLOPs ≈ 6BLD² (QKV) + 4BL²D (QKᵀ, AV) + 2BLD² (O) + 16BLD² (FFN), and
// at decode (L = 1 query, L_ctx keys) the attention term becomes 4B·L_ctx·D. 003 part 1: the MLP's
// intensity grows in proportion to the batch B (very low at B = 1); at decode, attention's
// intensity is about 1 whatever B is, since each sequence reads its own KV cache; prefill's
// intensity grows with the prompt length S, so prefill is compute-limited.
// Method: FLOPs counted by count_forward (model/generate.hpp: the forward's matrix products from
// their shapes); bytes by cost/traffic.hpp (each tensor moved once, 16-bit). Expected, by the
// check's own arithmetic: the document's terms (exact integers: tolerance 0), and for intensities
// the 003 linear-layer formula 2·B·m·n / (2mn + 2B(m + n)) per layer summed, or
// 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)) for decode attention (doubles: a few roundings).
// Attention's "≈ 1" holds for MHA with a 16-bit cache; with GQA it is h / n_kv (E17: flagged on the
// GQA row, Llama-3-70B's 64 / 8 = 8).
//
//   kvlab intensity [--d-model 4096] [--heads 32] [--kv-heads 32] [--ctx 4096] [--gpu a100-80gb]
#include "checks/intensity.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/roofline.hpp"
#include "cost/traffic.hpp"
#include "report/writers.hpp"
#include "support/cost_common.hpp"

namespace kvlab::checks::intensity {
namespace {

constexpr const char* kName = "intensity";
constexpr const char* kSource = "003 part 1, Q3; 000 §3.1";
constexpr double kU = std::numeric_limits<double>::epsilon() / 2;
constexpr double kBytes = 2.0;  // 16-bit weights, activations and cache
constexpr std::uint64_t kBatches[] = {1, 8, 64, 512};
constexpr std::uint64_t kPrompts[] = {1, 16, 128, 1024, 4096};
// 000 §3.1's per-layer count is checked at this batch and prompt length.
constexpr std::uint64_t kB31 = 4, kL31 = 1024;
// Relative rounding bound of an intensity: on each path the FLOPs and bytes are exact integers
// converted to double (1 rounding each), summed over ≤ 4 layers (3 + 3), divided (1): 9 roundings,
// γ_18 between the two paths.
constexpr double kIntensityRel = 18 * kU / (1 - 18 * kU);

/// The 003 linear-layer formula summed over layers (m_i → n_i) on `rows` rows: Σ 2·rows·m·n / Σ
/// (2mn + 2·rows·(m + n)) at 16 bits.
double doc_linear_intensity(double rows, std::initializer_list<std::pair<double, double>> layers) {
  double flops = 0, bytes = 0;
  for (const auto& [m, n] : layers) {
    flops += 2 * rows * m * n;
    bytes += 2 * m * n + 2 * rows * (m + n);
  }
  return flops / bytes;
}

/// The sizes every formula reads, as the counts see them.
struct Shape {
  std::uint64_t D, hd, H, G, ctx;
  bool mha() const { return G == H; }
};

Shape shape(const IntensityOptions& o, int kv_heads) {
  return {static_cast<std::uint64_t>(o.d_model), static_cast<std::uint64_t>(o.d_model / o.heads),
          static_cast<std::uint64_t>(o.heads), static_cast<std::uint64_t>(kv_heads), static_cast<std::uint64_t>(o.ctx)};
}

/// With MHA, the GQA comparison of E17: h/8 K/V heads (1 when 8 does not divide h).
std::uint64_t gqa_kv_heads(const Shape& s) { return s.H % 8 == 0 ? s.H / 8 : 1; }

using Count = std::function<OpCount(const ModelConfig&, std::int64_t, std::int64_t)>;
using LinearBytes = std::function<double(std::uint64_t, std::uint64_t, std::uint64_t, double)>;

/// 000 §3.1's terms at B = 4, L = 1024 (every pair, and causal), and the decode attention term.
void count_terms(IntensityMeasured& m, const ModelConfig& c, const Count& count) {
  ModelConfig all = c;
  all.causal = false;
  const OpCount k = count(all, static_cast<std::int64_t>(kL31), 0);
  m.qkv = checked_mul(kB31, k.qkv, "FLOPs");
  m.attention = checked_mul(kB31, k.attention_flops(), "FLOPs");
  m.out_proj = checked_mul(kB31, k.out_proj, "FLOPs");
  m.mlp = checked_mul(kB31, k.mlp, "FLOPs");
  m.attention_causal = kB31 * count(c, static_cast<std::int64_t>(kL31), 0).attention_flops();
  // Decode: one query per sequence against ctx keys (ctx − 1 cached + itself).
  m.decode_attention = kB31 * count(c, 1, static_cast<std::int64_t>(m.options.ctx - 1)).attention_flops();
}

/// The decode rows over kBatches, and with MHA the same attention under h/8 K/V heads (E17).
void count_decode(IntensityMeasured& m, const ModelConfig& c, const Count& count, const LinearBytes& lin_bytes) {
  const Shape s = shape(m.options, m.kv_heads);
  const double attention_one = static_cast<double>(count(c, 1, static_cast<std::int64_t>(s.ctx - 1)).attention_flops());
  for (const std::uint64_t B : kBatches) {
    // B sequences each decode one token: the MLP sees B rows, attention B separate sequences.
    const OpCount k = count(c, static_cast<std::int64_t>(B), 0);
    m.decode.push_back(
        {B, static_cast<double>(k.mlp), lin_bytes(B, s.D, 4 * s.D, kBytes) + lin_bytes(B, 4 * s.D, s.D, kBytes),
         static_cast<double>(B * count(c, 1, static_cast<std::int64_t>(s.ctx - 1)).attention_flops()),
         decode_attention_bytes(B, s.ctx, s.H, s.G, s.hd, kBytes)});
  }
  if (s.mha()) {
    m.gqa_flops = attention_one;
    m.gqa_bytes = decode_attention_bytes(1, s.ctx, s.H, gqa_kv_heads(s), s.hd, kBytes);
  }
}

}  // namespace

IntensityMeasured measure_intensity(const IntensityOptions& o, const IntensityParts& parts) {
  const Count count = parts.count ? parts.count : Count([](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    return count_forward(c, n, s);
  });
  const LinearBytes lin_bytes = parts.linear_bytes ? parts.linear_bytes : LinearBytes(linear_bytes);
  IntensityMeasured m{.options = o, .kv_heads = o.kv_heads.value_or(o.heads)};
  m.gpu = with_option("--gpu", [&] { return parts.load_gpu ? parts.load_gpu(o.gpu) : load_gpu(o.gpu); });
  m.ridge = ridge_flops_per_byte(m.gpu);
  const Shape s = shape(o, m.kv_heads);
  ModelConfig c;  // one layer; the counts read only the sizes
  c.n_layer = 1;
  c.d_model = o.d_model;
  c.n_head = o.heads;
  c.n_kv_head = m.kv_heads;
  c.head_dim = o.d_model / o.heads;
  count_terms(m, c, count);
  count_decode(m, c, count, lin_bytes);
  for (const std::uint64_t S : kPrompts)  // prefill: the linear layers against the prompt length S
    m.prefill.push_back({S, static_cast<double>(count(c, static_cast<std::int64_t>(S), 0).linear_flops()),
                         lin_bytes(S, s.D, s.H * s.hd + 2 * s.G * s.hd, kBytes) + lin_bytes(S, s.H * s.hd, s.D, kBytes) +
                             lin_bytes(S, s.D, 4 * s.D, kBytes) + lin_bytes(S, 4 * s.D, s.D, kBytes)});
  return m;
}

namespace {

/// Decode attention's intensity by the formula 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)).
double attention_formula(const Shape& s, std::uint64_t kv_heads) {
  return 4.0 * s.ctx * s.H * s.hd / (2.0 * (2.0 * s.ctx * kv_heads * s.hd + 2.0 * s.H * s.hd));
}

std::vector<Expectation> term_rows(const IntensityMeasured& m, const Shape& s) {
  const std::uint64_t B = kB31, L = kL31, D = s.D;
  const auto exact_row = [&](const std::string& term, std::uint64_t measured, std::uint64_t formula,
                             const std::string& doc) {
    return Expectation{.quantity = fmt::format("{}, B = {}, L = {}, D = {} (counted vs formula)", term, B, L, D),
                       .source = "000 §3.1", .unit = "FLOP", .expected = static_cast<double>(formula), .tolerance = 0,
                       .why = "integer counts: exact", .measured = static_cast<double>(measured), .document = doc};
  };
  std::vector<Expectation> rows;
  if (s.mha())
    rows.push_back(exact_row("QKV projections", m.qkv, 6 * B * L * D * D, "6BLD²"));
  else  // GQA: the K and V projections shrink to n_kv·hd columns (E24)
    rows.push_back(exact_row("QKV projections (GQA: 2BLD² + 4BLD·n_kv·hd)", m.qkv,
                             2 * B * L * D * D + 4 * B * L * D * s.G * s.hd, "6BLD² (MHA)"));
  rows.push_back(exact_row("attention QKᵀ + AV (every pair)", m.attention, 4 * B * L * L * D, "4BL²D"));
  rows.push_back(exact_row("output projection", m.out_proj, 2 * B * L * D * D, "2BLD²"));
  rows.push_back(exact_row("FFN up + down (4D)", m.mlp, 16 * B * L * D * D, "16BLD²"));
  rows.push_back({.quantity = fmt::format("decode attention term, B = {}, L_ctx = {} (counted vs 4B·L_ctx·D)", B, s.ctx),
                  .source = "000 §3.1", .unit = "FLOP", .expected = 4.0 * B * s.ctx * D, .tolerance = 0,
                  .why = "integer counts: exact", .measured = static_cast<double>(m.decode_attention),
                  .document = "4B·L_ctx·D"});
  return rows;
}

void decode_rows(const IntensityMeasured& m, const Shape& s, std::vector<Expectation>& rows) {
  const double attn_expected = attention_formula(s, s.G);
  for (const DecodeIntensityRow& d : m.decode) {
    const double mlp_expected =
        doc_linear_intensity(static_cast<double>(d.batch), {{double(s.D), 4.0 * s.D}, {4.0 * s.D, double(s.D)}});
    Expectation e{.quantity = fmt::format("MLP intensity at decode, batch {}", d.batch), .source = "003 part 1, Q3",
                  .unit = "FLOP/B", .expected = mlp_expected, .tolerance = kIntensityRel * mlp_expected,
                  .why = "counted FLOPs / bytes vs 2Bmn / (2mn + 2B(m+n)) per layer: γ_18 relative (roundings counted "
                         "in the source)",
                  .measured = d.mlp_flops / d.mlp_bytes};
    if (d.batch == 1) e.stated = Stated::parse("1", "B=1 时算术强度极低；强度约为1 (003 part 1, answer 2)");
    rows.push_back(std::move(e));
    e = Expectation{.quantity = fmt::format("decode attention intensity, batch {}, {}", d.batch,
                                            s.mha() ? "MHA" : fmt::format("GQA {}/{}", s.H, s.G)),
                    .source = "003 part 1, Q3", .unit = "FLOP/B", .expected = attn_expected,
                    .tolerance = kIntensityRel * attn_expected,
                    .why = "counted FLOPs / bytes vs 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)), the same for every B: "
                           "γ_18 relative",
                    .measured = d.attention_flops / d.attention_bytes};
    e.stated = Stated::parse("1", "注意力机制的算术强度大约为 1，且与 Batch Size 完全无关").flags("E17");
    if (!s.mha())
      e.arithmetic = fmt::format("with {} query heads per K/V head each cached byte serves {} heads: intensity ≈ "
                                 "h/n_kv = {} (E17)", s.H / s.G, s.H / s.G, s.H / s.G);
    rows.push_back(std::move(e));
  }
  if (!s.mha()) return;
  const std::uint64_t g8 = gqa_kv_heads(s);  // the GQA case of E17 beside the MHA default
  Expectation e{.quantity = fmt::format("decode attention intensity, GQA {} query / {} K/V heads, any batch", s.H, g8),
                .source = "003 part 1, Q3", .unit = "FLOP/B", .expected = attention_formula(s, g8),
                .tolerance = kIntensityRel * attention_formula(s, g8),
                .why = "counted FLOPs / bytes vs 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)): γ_18 relative",
                .measured = m.gqa_flops / m.gqa_bytes};
  e.stated = Stated::parse("1", "注意力机制的算术强度大约为 1").flags("E17");
  e.arithmetic = fmt::format("each cached K/V byte serves h/n_kv = {} query heads: intensity ≈ {}; the '≈ 1' holds for "
                             "MHA with a 16-bit cache (E17)", s.H / g8, s.H / g8);
  rows.push_back(std::move(e));
}

void bound_rows(const IntensityMeasured& m, std::vector<Expectation>& rows) {
  const double intensity_last = m.prefill.back().flops / m.prefill.back().bytes;
  const double mlp_b1 = m.decode.front().mlp_flops / m.decode.front().mlp_bytes;
  Expectation e{.quantity = fmt::format("prefill of {} tokens is compute-bound on {} (1 = yes)", m.prefill.back().prompt,
                                        m.gpu.name),
                .source = "003 part 1", .unit = "", .expected = 1, .tolerance = 0,
                .why = "a yes/no claim: counted intensity >= the GPU's ridge",
                .measured = intensity_last >= m.ridge ? 1.0 : 0.0, .document = "预填充阶段 ... 是计算瓶颈 (Compute-limited)"};
  e.arithmetic = fmt::format("intensity {:.4g} vs ridge {:.4g} FLOP/B", intensity_last, m.ridge);
  rows.push_back(std::move(e));
  e = Expectation{.quantity = fmt::format("decode MLP at batch 1 is memory-bound on {} (1 = yes)", m.gpu.name),
                  .source = "003 part 1", .unit = "", .expected = 1, .tolerance = 0,
                  .why = "a yes/no claim: counted intensity < the GPU's ridge", .measured = mlp_b1 < m.ridge ? 1.0 : 0.0,
                  .document = "B=1 ... 完全受限于显存带宽"};
  e.arithmetic = fmt::format("intensity {:.4g} vs ridge {:.4g} FLOP/B", mlp_b1, m.ridge);
  rows.push_back(std::move(e));
}

void present(const IntensityMeasured& m, Result& r) {
  const Shape s = shape(m.options, m.kv_heads);
  const std::uint64_t B = kB31, L = kL31;
  r.notes.push_back(fmt::format("000 §3.1 counts every (query, key) pair, 4BL²D = {}; under the causal mask a prefill "
                                "computes only 2BL(L+1)D = {} (counted: {}).", format_number(4.0 * B * L * L * s.D),
                                format_number(2.0 * B * L * (L + 1) * s.D),
                                format_number(static_cast<double>(m.attention_causal))));
  Table dec{fmt::format("decode step intensity, 16-bit, D = {}, {} heads, {} K/V heads, ctx {} (FLOP/B; ridge of {} = "
                        "{:.1f})", s.D, s.H, s.G, s.ctx, m.gpu.name, m.ridge),
            {"batch B", "MLP FLOPs", "MLP bytes", "MLP intensity", "MLP intensity / B", "attention FLOPs",
             "attention bytes", "attention intensity", "bound (MLP)"}, {}};
  for (const DecodeIntensityRow& d : m.decode) {
    const double mlp_i = d.mlp_flops / d.mlp_bytes;
    dec.rows.push_back({static_cast<std::int64_t>(d.batch), d.mlp_flops, d.mlp_bytes, mlp_i,
                        mlp_i / static_cast<double>(d.batch), d.attention_flops, d.attention_bytes,
                        d.attention_flops / d.attention_bytes, std::string(mlp_i >= m.ridge ? "compute" : "memory")});
  }
  Table pre{fmt::format("prefill of one sequence, linear layers (QKV, O, FFN), 16-bit, D = {} (FLOP/B)", s.D),
            {"prompt S", "FLOPs", "bytes", "intensity", "intensity / S", "bound"}, {}};
  std::uint64_t first_compute = 0;
  for (const PrefillIntensityRow& p : m.prefill) {
    const double i = p.flops / p.bytes;
    if (first_compute == 0 && i >= m.ridge) first_compute = p.prompt;
    pre.rows.push_back({static_cast<std::int64_t>(p.prompt), p.flops, p.bytes, i, i / static_cast<double>(p.prompt),
                        std::string(i >= m.ridge ? "compute" : "memory")});
  }
  r.tables.push_back(std::move(dec));
  r.tables.push_back(std::move(pre));
  r.metric("ridge", m.ridge);
  r.metric("mlp_intensity_b1", m.decode.front().mlp_flops / m.decode.front().mlp_bytes);
  r.metric("attention_intensity", attention_formula(s, s.G));
  if (first_compute) r.metric("prefill_compute_bound_from_s", static_cast<double>(first_compute));
  r.notes.push_back("FLOPs: count_forward (2 per multiply-add of the forward's matrix products); bytes: every weight, "
                    "input, output and cached K/V element moved once at 2 B (cost/traffic.hpp). Softmax, norms and "
                    "activation functions are left out, as in the course.");
  r.notes.push_back("the MLP's weights are shared by the whole batch, so its FLOPs per byte grow ≈ B (until B nears D); "
                    "attention's bytes are each sequence's own KV cache, which grow with B as fast as its FLOPs.");
}

}  // namespace

std::vector<Expectation> judge_intensity(const IntensityMeasured& m) {
  const Shape s = shape(m.options, m.kv_heads);
  std::vector<Expectation> rows = term_rows(m, s);
  decode_rows(m, s, rows);
  for (const PrefillIntensityRow& p : m.prefill) {
    const double q_w = static_cast<double>(s.H * s.hd), kv_w = static_cast<double>(s.G * s.hd), d = static_cast<double>(s.D);
    const double expected =
        doc_linear_intensity(static_cast<double>(p.prompt), {{d, q_w + 2 * kv_w}, {q_w, d}, {d, 4 * d}, {4 * d, d}});
    rows.push_back({fmt::format("prefill intensity of the linear layers, S = {}", p.prompt), "003 part 1", "FLOP/B",
                    expected, kIntensityRel * expected,
                    "counted FLOPs / bytes vs Σ 2Smn / Σ (2mn + 2S(m+n)): γ_18 relative", p.flops / p.bytes});
  }
  bound_rows(m, rows);
  return rows;
}

const CheckDef<IntensityOptions, IntensityMeasured>& intensity_check() {
  static const CheckDef<IntensityOptions, IntensityMeasured> def{
      .spec = {.name = kName,
               .order = 375,
               .source = kSource,
               .summary = "arithmetic intensity: MLP ∝ batch, decode attention ≈ 1 for any batch, prefill ∝ prompt",
               .claim_zh = "算术强度：MLP 随 batch 增长，解码注意力对任何 batch 都约为 1，预填充随提示长度增长",
               .description =
                   "Counts one layer's FLOPs term by term against 000 §3.1, then the intensity (FLOP/B, 16-bit)\n"
                   "of the decode MLP and decode attention over batches 1..512 and of prefill over prompt\n"
                   "lengths 1..4096, each against the document's formula and the GPU's ridge point.",
               .derivation =
                   "A linear layer m → n on B rows: 2Bmn FLOPs, 2mn + 2B(m+n) bytes at 16 bits: intensity\n"
                   "Bmn / (mn + B(m+n)) ≈ B for B ≪ m, n: the weights are shared by the batch. Decode attention:\n"
                   "per sequence 4·ctx·h·hd FLOPs over its own cache, 2·ctx·n_kv·hd elements of 2 B: ≈ h/n_kv,\n"
                   "1 for MHA, whatever B is. Prefill: B = 1 but S rows: intensity ≈ S. A100-80GB ridge:\n"
                   "312e12 / 2.039e12 = 153 FLOP/B. Source: 003 part 1, Q3; 000 §3.1.",
               .claim = "Per layer FLOPs 6BLD² + 4BL²D + 2BLD² + 16BLD²; at decode the MLP's arithmetic intensity "
                        "grows with the batch B while attention's stays ≈ 1 whatever B is (every sequence reads its "
                        "own KV cache); prefill's intensity grows with the prompt length, so prefill is compute-bound "
                        "and decode memory-bound."},
      .options = {{"--d-model", &IntensityOptions::d_model, Allowed::integers(8, 65536), "Model width D"},
                  {"--heads", &IntensityOptions::heads, Allowed::integers(1, 1024), "Query heads (divide D)"},
                  {"--kv-heads", &IntensityOptions::kv_heads, Allowed::integers(1, 1024),
                   "K/V heads (divide --heads; default MHA)"},
                  {"--ctx", &IntensityOptions::ctx, Allowed::integers(1, std::int64_t{1} << 24),
                   "Cached positions per decoding sequence"},
                  {"--gpu", &IntensityOptions::gpu, Allowed::any_value(), "Catalogue GPU for the ridge point"}},
      .constraints =
          [](const IntensityOptions& o) {
            if (o.d_model % o.heads != 0)
              throw InputError(fmt::format("--heads: must divide --d-model = {} (got {})", o.d_model, o.heads));
            const int kv_heads = o.kv_heads.value_or(o.heads);
            require_range("--kv-heads", kv_heads, 1, o.heads);
            if (o.heads % kv_heads != 0)
              throw InputError(fmt::format("--kv-heads: must divide --heads = {} (got {})", o.heads, kv_heads));
          },
      .measure = [](const IntensityOptions& o, const RunContext&) { return measure_intensity(o); },
      .judge = judge_intensity,
      .present = present};
  return def;
}

Result run_intensity(const IntensityOptions& o, const RunContext& ctx, const IntensityParts& parts) {
  return run_check(intensity_check(), o, ctx, [&parts](const IntensityOptions& opts, const RunContext&) {
    return measure_intensity(opts, parts);
  });
}

KVLAB_REGISTER_SPEC(intensity_check);

}  // namespace kvlab::checks::intensity
