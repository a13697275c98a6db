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
#include "framework/options.hpp"

namespace kvlab::checks {
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

}  // namespace

Result run_intensity(const IntensityOptions& o, const RunContext& /*ctx*/, const IntensityParts& parts) {
  require_range("--d-model", o.d_model, 8, 65536);
  require_range("--heads", o.heads, 1, 1024);
  if (o.d_model % o.heads != 0)
    throw InputError(fmt::format("--heads: must divide --d-model = {} (got {})", o.d_model, o.heads));
  const int kv_heads = o.kv_heads.value_or(o.heads);
  require_range("--kv-heads", kv_heads, 1, o.heads);
  if (o.heads % kv_heads != 0)
    throw InputError(fmt::format("--kv-heads: must divide --heads = {} (got {})", o.heads, kv_heads));
  require_range("--ctx", o.ctx, 1, std::int64_t{1} << 24);
  const auto count = parts.count ? parts.count : [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    return count_forward(c, n, s);
  };
  const auto lin_bytes = parts.linear_bytes ? parts.linear_bytes : [](std::uint64_t r, std::uint64_t i, std::uint64_t out, double b) {
    return linear_bytes(r, i, out, b);
  };
  const GpuSpec g = with_option("--gpu", [&] { return parts.load_gpu ? parts.load_gpu(o.gpu) : load_gpu(o.gpu); });
  const double ridge = ridge_flops_per_byte(g);

  ModelConfig c;  // one layer; the counts read only the sizes
  c.n_layer = 1;
  c.d_model = o.d_model;
  c.n_head = o.heads;
  c.n_kv_head = kv_heads;
  c.head_dim = o.d_model / o.heads;
  const std::uint64_t D = static_cast<std::uint64_t>(o.d_model), hd = static_cast<std::uint64_t>(c.head_dim);
  const std::uint64_t H = static_cast<std::uint64_t>(o.heads), G = static_cast<std::uint64_t>(kv_heads);
  const std::uint64_t ctx_len = static_cast<std::uint64_t>(o.ctx);
  const bool mha = G == H;

  Result r;
  r.check = kName;
  r.source = kSource;
  r.claim = "Per layer FLOPs 6BLD² + 4BL²D + 2BLD² + 16BLD²; at decode the MLP's arithmetic intensity grows with the "
            "batch B while attention's stays ≈ 1 whatever B is (every sequence reads its own KV cache); prefill's "
            "intensity grows with the prompt length, so prefill is compute-bound and decode memory-bound.";

  // ---- 000 §3.1: the per-layer terms, counted (bidirectional: the document counts every pair) ----
  {
    ModelConfig all = c;
    all.causal = false;
    const OpCount k = count(all, static_cast<std::int64_t>(kL31), 0);
    const auto exact_row = [&](const std::string& term, std::uint64_t counted_one, std::uint64_t formula, const std::string& doc) {
      Expectation e{.quantity = fmt::format("{}, B = {}, L = {}, D = {} (counted vs formula)", term, kB31, kL31, D),
                    .source = "000 §3.1", .unit = "FLOP", .expected = static_cast<double>(formula), .tolerance = 0,
                    .why = "integer counts: exact", .measured = static_cast<double>(checked_mul(kB31, counted_one, "FLOPs"))};
      e.document = doc;
      r.expect(e);
    };
    const std::uint64_t B = kB31, L = kL31;
    if (mha) {
      exact_row("QKV projections", k.qkv, 6 * B * L * D * D, "6BLD²");
      exact_row("attention QKᵀ + AV (every pair)", k.attention_flops(), 4 * B * L * L * D, "4BL²D");
      exact_row("output projection", k.out_proj, 2 * B * L * D * D, "2BLD²");
      exact_row("FFN up + down (4D)", k.mlp, 16 * B * L * D * D, "16BLD²");
    } else {  // GQA: the K and V projections shrink to n_kv·hd columns (E24)
      exact_row("QKV projections (GQA: 2BLD² + 4BLD·n_kv·hd)", k.qkv, 2 * B * L * D * D + 4 * B * L * D * G * hd, "6BLD² (MHA)");
      exact_row("attention QKᵀ + AV (every pair)", k.attention_flops(), 4 * B * L * L * D, "4BL²D");
      exact_row("output projection", k.out_proj, 2 * B * L * D * D, "2BLD²");
      exact_row("FFN up + down (4D)", k.mlp, 16 * B * L * D * D, "16BLD²");
    }
    ModelConfig causal = c;
    r.notes.push_back(fmt::format("000 §3.1 counts every (query, key) pair, 4BL²D = {}; under the causal mask a prefill "
                                  "computes only 2BL(L+1)D = {} (counted: {}).", format_number(4.0 * B * L * L * D),
                                  format_number(2.0 * B * L * (L + 1) * D),
                                  format_number(static_cast<double>(B * count(causal, static_cast<std::int64_t>(L), 0).attention_flops()))));
    // Decode: one query per sequence against ctx keys (ctx − 1 cached + itself).
    const OpCount dk = count(c, 1, static_cast<std::int64_t>(ctx_len - 1));
    Expectation e{.quantity = fmt::format("decode attention term, B = {}, L_ctx = {} (counted vs 4B·L_ctx·D)", kB31, ctx_len),
                  .source = "000 §3.1", .unit = "FLOP", .expected = 4.0 * kB31 * ctx_len * D, .tolerance = 0,
                  .why = "integer counts: exact", .measured = static_cast<double>(kB31 * dk.attention_flops())};
    e.document = "4B·L_ctx·D";
    r.expect(e);
  }

  // ---- decode: MLP intensity against B, attention intensity against B ----
  Table dec{fmt::format("decode step intensity, 16-bit, D = {}, {} heads, {} K/V heads, ctx {} (FLOP/B; ridge of {} = {:.1f})",
                        D, H, G, ctx_len, g.name, ridge),
            {"batch B", "MLP FLOPs", "MLP bytes", "MLP intensity", "MLP intensity / B", "attention FLOPs",
             "attention bytes", "attention intensity", "bound (MLP)"}, {}};
  const double attn_expected = 4.0 * ctx_len * H * hd / (2.0 * (2.0 * ctx_len * G * hd + 2.0 * H * hd));
  double mlp_b1 = 0;
  for (std::uint64_t B : kBatches) {
    // B sequences each decode one token: the MLP sees B rows, attention B separate sequences.
    const OpCount k = count(c, static_cast<std::int64_t>(B), 0);
    const double mlp_flops = static_cast<double>(k.mlp);
    const double mlp_bytes = lin_bytes(B, D, 4 * D, kBytes) + lin_bytes(B, 4 * D, D, kBytes);
    const double mlp_i = mlp_flops / mlp_bytes;
    const double mlp_expected = doc_linear_intensity(static_cast<double>(B), {{double(D), 4.0 * D}, {4.0 * D, double(D)}});
    if (B == 1) mlp_b1 = mlp_i;
    Expectation e{.quantity = fmt::format("MLP intensity at decode, batch {}", B), .source = "003 part 1, Q3",
                  .unit = "FLOP/B", .expected = mlp_expected, .tolerance = kIntensityRel * mlp_expected,
                  .why = "counted FLOPs / bytes vs 2Bmn / (2mn + 2B(m+n)) per layer: γ_18 relative (roundings counted in the source)",
                  .measured = mlp_i};
    if (B == 1) e.stated = Stated::parse("1", "B=1 时算术强度极低；强度约为1 (003 part 1, answer 2)");
    r.expect(e);
    const double attn_flops = static_cast<double>(B * count(c, 1, static_cast<std::int64_t>(ctx_len - 1)).attention_flops());
    const double attn_bytes = decode_attention_bytes(B, ctx_len, H, G, hd, kBytes);
    const double attn_i = attn_flops / attn_bytes;
    e = Expectation{.quantity = fmt::format("decode attention intensity, batch {}, {}", B, mha ? "MHA" : fmt::format("GQA {}/{}", H, G)),
                    .source = "003 part 1, Q3", .unit = "FLOP/B", .expected = attn_expected,
                    .tolerance = kIntensityRel * attn_expected,
                    .why = "counted FLOPs / bytes vs 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)), the same for every B: "
                           "γ_18 relative",
                    .measured = attn_i};
    e.stated = Stated::parse("1", "注意力机制的算术强度大约为 1，且与 Batch Size 完全无关").flags("E17");
    if (!mha) e.arithmetic = fmt::format("with {} query heads per K/V head each cached byte serves {} heads: intensity ≈ h/n_kv = {} (E17)",
                                         H / G, H / G, H / G);
    r.expect(e);
    dec.rows.push_back({static_cast<std::int64_t>(B), mlp_flops, mlp_bytes, mlp_i, mlp_i / static_cast<double>(B), attn_flops,
                        attn_bytes, attn_i, std::string(mlp_i >= ridge ? "compute" : "memory")});
  }
  r.tables.push_back(std::move(dec));
  if (mha) {  // the GQA case of E17 beside the MHA default: h/8 K/V heads
    const std::uint64_t g8 = H % 8 == 0 ? H / 8 : 1;
    const double i = static_cast<double>(count(c, 1, static_cast<std::int64_t>(ctx_len - 1)).attention_flops()) /
                     decode_attention_bytes(1, ctx_len, H, g8, hd, kBytes);
    Expectation e{.quantity = fmt::format("decode attention intensity, GQA {} query / {} K/V heads, any batch", H, g8),
                  .source = "003 part 1, Q3", .unit = "FLOP/B",
                  .expected = 4.0 * ctx_len * H * hd / (2.0 * (2.0 * ctx_len * g8 * hd + 2.0 * H * hd)),
                  .tolerance = 0, .why = "", .measured = i};
    e.tolerance = kIntensityRel * e.expected;
    e.why = "counted FLOPs / bytes vs 4·ctx·h·hd / (2·(2·ctx·n_kv·hd + 2·h·hd)): γ_18 relative";
    e.stated = Stated::parse("1", "注意力机制的算术强度大约为 1").flags("E17");
    e.arithmetic = fmt::format("each cached K/V byte serves h/n_kv = {} query heads: intensity ≈ {}; the '≈ 1' holds for MHA "
                               "with a 16-bit cache (E17)", H / g8, H / g8);
    r.expect(e);
  }

  // ---- prefill: the linear layers' intensity against the prompt length S ----
  Table pre{fmt::format("prefill of one sequence, linear layers (QKV, O, FFN), 16-bit, D = {} (FLOP/B)", D),
            {"prompt S", "FLOPs", "bytes", "intensity", "intensity / S", "bound"}, {}};
  const double q_w = static_cast<double>(H * hd), kv_w = static_cast<double>(G * hd), d = static_cast<double>(D);
  std::uint64_t first_compute = 0;
  double intensity_last = 0;
  for (std::uint64_t S : kPrompts) {
    const OpCount k = count(c, static_cast<std::int64_t>(S), 0);
    const double flops = static_cast<double>(k.linear_flops());
    const double bytes = lin_bytes(S, D, H * hd + 2 * G * hd, kBytes) + lin_bytes(S, H * hd, D, kBytes) +
                         lin_bytes(S, D, 4 * D, kBytes) + lin_bytes(S, 4 * D, D, kBytes);
    const double i = flops / bytes;
    const double expected = doc_linear_intensity(static_cast<double>(S), {{d, q_w + 2 * kv_w}, {q_w, d}, {d, 4 * d}, {4 * d, d}});
    r.expect({fmt::format("prefill intensity of the linear layers, S = {}", S), "003 part 1", "FLOP/B", expected,
              kIntensityRel * expected, "counted FLOPs / bytes vs Σ 2Smn / Σ (2mn + 2S(m+n)): γ_18 relative", i});
    if (first_compute == 0 && i >= ridge) first_compute = S;
    intensity_last = i;
    pre.rows.push_back({static_cast<std::int64_t>(S), flops, bytes, i, i / static_cast<double>(S),
                        std::string(i >= ridge ? "compute" : "memory")});
  }
  r.tables.push_back(std::move(pre));
  Expectation e{.quantity = fmt::format("prefill of {} tokens is compute-bound on {} (1 = yes)", kPrompts[std::size(kPrompts) - 1], g.name),
                .source = "003 part 1", .unit = "", .expected = 1, .tolerance = 0,
                .why = "a yes/no claim: counted intensity >= the GPU's ridge", .measured = intensity_last >= ridge ? 1.0 : 0.0};
  e.document = "预填充阶段 ... 是计算瓶颈 (Compute-limited)";
  e.arithmetic = fmt::format("intensity {:.4g} vs ridge {:.4g} FLOP/B", intensity_last, ridge);
  r.expect(e);
  e = Expectation{.quantity = fmt::format("decode MLP at batch 1 is memory-bound on {} (1 = yes)", g.name), .source = "003 part 1",
                  .unit = "", .expected = 1, .tolerance = 0, .why = "a yes/no claim: counted intensity < the GPU's ridge",
                  .measured = mlp_b1 < ridge ? 1.0 : 0.0};
  e.document = "B=1 ... 完全受限于显存带宽";
  e.arithmetic = fmt::format("intensity {:.4g} vs ridge {:.4g} FLOP/B", mlp_b1, ridge);
  r.expect(e);

  r.metric("ridge", ridge);
  r.metric("mlp_intensity_b1", mlp_b1);
  r.metric("attention_intensity", attn_expected);
  if (first_compute) r.metric("prefill_compute_bound_from_s", static_cast<double>(first_compute));
  r.notes.push_back("FLOPs: count_forward (2 per multiply-add of the forward's matrix products); bytes: every weight, "
                    "input, output and cached K/V element moved once at 2 B (cost/traffic.hpp). Softmax, norms and "
                    "activation functions are left out, as in the course.");
  r.notes.push_back("the MLP's weights are shared by the whole batch, so its FLOPs per byte grow ≈ B (until B nears D); "
                    "attention's bytes are each sequence's own KV cache, which grow with B as fast as its FLOPs.");
  return r;
}

namespace {

class Intensity final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override { return "arithmetic intensity: MLP ∝ batch, decode attention ≈ 1 for any batch, prefill ∝ prompt"; }
  std::string description() const override {
    return "Counts one layer's FLOPs term by term against 000 §3.1, then the intensity (FLOP/B, 16-bit)\n"
           "of the decode MLP and decode attention over batches 1..512 and of prefill over prompt\n"
           "lengths 1..4096, each against the document's formula and the GPU's ridge point.";
  }
  std::string derivation() const override {
    return "A linear layer m → n on B rows: 2Bmn FLOPs, 2mn + 2B(m+n) bytes at 16 bits: intensity\n"
           "Bmn / (mn + B(m+n)) ≈ B for B ≪ m, n: the weights are shared by the batch. Decode attention:\n"
           "per sequence 4·ctx·h·hd FLOPs over its own cache, 2·ctx·n_kv·hd elements of 2 B: ≈ h/n_kv,\n"
           "1 for MHA, whatever B is. Prefill: B = 1 but S rows: intensity ≈ S. A100-80GB ridge:\n"
           "312e12 / 2.039e12 = 153 FLOP/B. Source: 003 part 1, Q3; 000 §3.1.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--d-model", opts_.d_model, "Model width D")->check(IntRange(8, 65536));
    sub.add_option("--heads", opts_.heads, "Query heads (divide D)")->check(IntRange(1, 1024));
    sub.add_option("--kv-heads", opts_.kv_heads, "K/V heads (divide --heads; default MHA)")->check(IntRange(1, 1024));
    sub.add_option("--ctx", opts_.ctx, "Cached positions per decoding sequence")->check(IntRange(1, std::int64_t{1} << 24));
    sub.add_option("--gpu", opts_.gpu, "Catalogue GPU for the ridge point (default a100-80gb)");
  }
  Result run(const RunContext& ctx) override { return run_intensity(opts_, ctx); }

 private:
  IntensityOptions opts_;
};

KVLAB_REGISTER_CHECK(375, Intensity);

}  // namespace
}  // namespace kvlab::checks
