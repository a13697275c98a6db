// attn-params — 000 §4.2: the K+V projection parameters of MHA, MQA and GQA.
//
// Claim: MHA has per head W_k, W_v ∈ R^{D × d_head}, H·2·D·d_head = 2D² parameters (K+V); MQA one
// shared pair, 2·D·d_head, H× fewer; GQA G pairs, 2·G·D·d_head. kvlab builds three mini-GPTs of
// one shape (D = H·d_head) with n_kv_head = H, 1 and G, and counts the elements of the K and V
// projection matrices its attention code multiplies by (BlockWeights::w_k, w_v) in every layer.
// Expected: the counts equal the formulas exactly (tolerance 0: counts), and the ratios MHA/MQA = H
// and MHA/GQA = H/G (ratios of exact integers, one correctly rounded division: tolerance 0).
//
//   kvlab attn-params [--heads 16] [--head-dim 8] [--groups 2] [--layers 2]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/attn_params.hpp"
#include "support/head_layout.hpp"
#include "core/error.hpp"

namespace kvlab::checks::attn_params {
namespace {

constexpr int kMaxHeads = 64;
constexpr int kMaxHeadDim = 64;
constexpr int kMaxLayers = 4;
// Largest D = H·d_head: a float64 mini-GPT holds about 12·D² parameters per layer (96 MB at
// D = 512 over 4 layers), built three times.
constexpr int kMaxWidth = 512;

Expectation exact_row(std::string quantity, double expected, double measured, std::string unit,
                      std::string document = "") {
  return {.quantity = std::move(quantity), .source = "000 §4.2", .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count (or a ratio of exact counts): exact", .measured = measured,
          .document = std::move(document)};
}

// The variants in AttnParamsMeasured's order, with 000 §4.2's formula for each.
struct Variant {
  const char* name;
  const char* formula_text;
  const char* document;
};
constexpr Variant kVariants[] = {
    {"MHA", "H·2·D·d_head = 2D²", "共 H·2·D·d_head = 2D² 参数（K+V）"},
    {"MQA", "2·D·d_head", "K+V 参数 = 2·D·d_head，减小 H 倍"},
    {"GQA", "2·G·D·d_head", "K+V 参数 = 2·G·D·d_head"},
};

// K/V heads of variant i: H, 1, G.
int kv_heads(const AttnParamsOptions& o, int i) { return i == 0 ? o.heads : i == 1 ? 1 : o.groups; }

// 000 §4.2: 2·n_kv·D·d_head parameters per layer for n_kv K/V heads.
double formula(const AttnParamsOptions& o, int i) {
  const double H = o.heads, dh = o.head_dim, G = o.groups, D = H * dh;
  return i == 0 ? 2 * D * D : i == 1 ? 2 * D * dh : 2 * G * D * dh;
}

double layer0(const AttnParamsMeasured& m, std::size_t i) {
  return i < m.variants.size() && !m.variants[i].per_layer.empty() ? double(m.variants[i].per_layer[0]) : 0.0;
}

void present(const AttnParamsMeasured& m, Result& r) {
  const AttnParamsOptions& o = m.options;
  Table counts{"K+V projection parameters counted on the mini-GPTs' matrices (biases apart)",
               {"variant", "K/V heads", "w_k shape", "per layer (counted)", "formula", "all layers (counted)",
                "K/V biases per layer"},
               {}};
  for (std::size_t i = 0; i < m.variants.size(); ++i) {
    const AttnVariantMeasured& v = m.variants[i];
    std::uint64_t total = 0;
    for (const std::uint64_t n : v.per_layer) total += n;
    counts.rows.push_back({std::string(kVariants[i].name), std::int64_t{v.n_kv},
                           fmt::format("[{}, {}]", v.w_k_rows, v.w_k_cols), static_cast<std::int64_t>(layer0(m, i)),
                           static_cast<std::int64_t>(formula(o, static_cast<int>(i))), static_cast<std::int64_t>(total),
                           static_cast<std::int64_t>(v.kv_biases)});
  }
  r.metric("mha_kv_params_per_layer", layer0(m, 0));
  r.metric("mqa_kv_params_per_layer", layer0(m, 1));
  r.metric("gqa_kv_params_per_layer", layer0(m, 2));
  r.tables.push_back(std::move(counts));
  r.notes.push_back(fmt::format("Mini-GPTs of D = {} (H = {} × d_head = {}), {} layers, seed {}: the same code "
                                "serves MHA, GQA and MQA (n_kv_head = H, G, 1). w_k and w_v are [D, n_kv·d_head].",
                                double(o.heads) * o.head_dim, double(o.heads), double(o.head_dim), o.layers, m.seed));
  r.notes.push_back("The formulas count weights only; the mini-GPT's K/V biases (2·n_kv·d_head per layer) are shown "
                    "apart, and LLaMA-family models have none.");
}

}  // namespace

std::uint64_t kv_projection_params(const MiniGPT<double>& model, int layer) {
  const auto& b = model.weights().blocks.at(static_cast<std::size_t>(layer));
  return static_cast<std::uint64_t>(b.w_k.size() + b.w_v.size());
}

AttnParamsMeasured measure_attn_params(const AttnParamsOptions& o, const RunContext& ctx,
                                       const AttnParamsParts& parts) {
  const AttnModelBuilder build = parts.build ? parts.build : AttnModelBuilder([](const ModelConfig& c, std::uint64_t s) {
    return MiniGPT<double>(c, s);
  });
  AttnParamsMeasured m{.options = o, .seed = ctx.seed};
  for (int i = 0; i < 3; ++i) {
    ModelConfig c;
    c.n_layer = o.layers;
    c.d_model = o.heads * o.head_dim;
    c.n_head = o.heads;
    c.n_kv_head = kv_heads(o, i);
    c.head_dim = o.head_dim;
    const MiniGPT<double> model = build(c, ctx.seed);
    AttnVariantMeasured v{.n_kv = c.n_kv_head};
    for (int l = 0; l < o.layers; ++l) v.per_layer.push_back(kv_projection_params(model, l));
    const auto& b = model.weights().blocks[0];
    v.w_k_rows = b.w_k.rows();
    v.w_k_cols = b.w_k.cols();
    v.kv_biases = static_cast<std::uint64_t>(b.b_k.size() + b.b_v.size());
    m.variants.push_back(std::move(v));
  }
  return m;
}

std::vector<Expectation> judge_attn_params(const AttnParamsMeasured& m) {
  const AttnParamsOptions& o = m.options;
  const double H = o.heads, dh = o.head_dim, G = o.groups, D = H * dh;
  std::vector<Expectation> rows;
  for (std::size_t i = 0; i < m.variants.size(); ++i) {
    const Variant& v = kVariants[i];
    const double expected = formula(o, static_cast<int>(i));
    double worst = 0;  // largest |counted − formula| over the layers
    for (const std::uint64_t n : m.variants[i].per_layer) worst = std::max(worst, std::abs(double(n) - expected));
    rows.push_back(exact_row(fmt::format("{} K+V parameters per layer, {} (D = {}, H = {}, d_head = {}{})", v.name,
                                         v.formula_text, D, H, dh, i == 2 ? fmt::format(", G = {}", G) : ""),
                             expected, layer0(m, i), "parameters", v.document));
    rows.push_back(exact_row(fmt::format("{}: largest |counted − formula| over the {} layers", v.name, o.layers), 0,
                             worst, "parameters"));
  }
  rows.push_back(exact_row("MHA / MQA K+V parameters (= H)", H, layer0(m, 0) / layer0(m, 1), "×", "减小 H 倍 (H× fewer)"));
  rows.push_back(exact_row("MHA / GQA K+V parameters (= H/G)", H / G, layer0(m, 0) / layer0(m, 2), "×"));
  return rows;
}

const CheckDef<AttnParamsOptions, AttnParamsMeasured>& attn_params_check() {
  static const CheckDef<AttnParamsOptions, AttnParamsMeasured> def{
      .spec = {.name = "attn-params",
               .order = 105,
               .source = "000 §4.2",
               .summary = "K+V parameters: MHA 2D², MQA 2·D·d_head, GQA 2·G·D·d_head",
               .claim_zh = "K+V 投影参数量：MHA 2D²，MQA 2·D·d_head，GQA 2·G·D·d_head",
               .description =
                   "Builds mini-GPTs of one shape (D = H·d_head) as MHA, MQA and GQA and counts the elements\n"
                   "of the K and V projection matrices in every layer, against 000 §4.2's formulas and the\n"
                   "ratios H (MHA/MQA) and H/G (MHA/GQA).",
               .derivation =
                   "A K/V head h has W_k^(h), W_v^(h) in R^{D × d_head}: 2·D·d_head parameters.\n"
                   "MHA: H heads, H·2·D·d_head; with H·d_head = D that is 2D².\n"
                   "MQA: one K/V head shared by all H query heads: 2·D·d_head = 2D²/H, H times fewer.\n"
                   "GQA: G K/V heads, one per group of H/G query heads: 2·G·D·d_head = 2D²·G/H.\n"
                   "The KV cache per token shrinks by the same factor (n_kv·d_head per layer, for K and V).\n"
                   "Source: 000 §4.2.",
               .claim = "K+V projection parameters per layer: MHA 2D², MQA 2·D·d_head (H× fewer), GQA 2·G·D·d_head."},
      .options = {{"--heads", &AttnParamsOptions::heads, Allowed::integers(1, kMaxHeads), "H, query heads (D = H·d_head)"},
                  {"--head-dim", &AttnParamsOptions::head_dim, Allowed::integers(1, kMaxHeadDim), "d_head"},
                  {"--groups", &AttnParamsOptions::groups, Allowed::integers(1, kMaxHeads),
                   "G, K/V heads of the GQA variant (divides H)"},
                  {"--layers", &AttnParamsOptions::layers, Allowed::integers(1, kMaxLayers), "blocks per mini-GPT"}},
      .constraints = [](const AttnParamsOptions& o) { require_head_layout(o.heads, o.head_dim, o.groups, kMaxWidth); },
      .measure = [](const AttnParamsOptions& o, const RunContext& ctx) { return measure_attn_params(o, ctx); },
      .judge = judge_attn_params,
      .present = present};
  return def;
}

Result run_attn_params(const AttnParamsOptions& o, const RunContext& ctx, const AttnParamsParts& parts) {
  return run_check(attn_params_check(), o, ctx, [&parts](const AttnParamsOptions& opts, const RunContext& c) {
    return measure_attn_params(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(attn_params_check);

}  // namespace kvlab::checks::attn_params
