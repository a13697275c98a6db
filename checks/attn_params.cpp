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
#include <cmath>

#include <fmt/format.h>

#include "checks/attn_params.hpp"
#include "core/error.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
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

}  // namespace

std::uint64_t kv_projection_params(const MiniGPT<double>& model, int layer) {
  const auto& b = model.weights().blocks.at(static_cast<std::size_t>(layer));
  return static_cast<std::uint64_t>(b.w_k.size() + b.w_v.size());
}

Result run_attn_params(const AttnParamsOptions& o, const RunContext& ctx, const AttnParamsParts& parts) {
  require_range("--heads", o.heads, 1, kMaxHeads);
  require_range("--head-dim", o.head_dim, 1, kMaxHeadDim);
  require_range("--groups", o.groups, 1, o.heads);
  require_range("--layers", o.layers, 1, kMaxLayers);
  if (o.heads % o.groups != 0)
    throw InputError(fmt::format("--groups: must divide --heads ({}), got {}", o.heads, o.groups));
  if (o.heads * o.head_dim > kMaxWidth)
    throw InputError(fmt::format("--heads × --head-dim: D = H·d_head must be at most {}, got {}", kMaxWidth,
                                 o.heads * o.head_dim));
  const AttnModelBuilder build = parts.build ? parts.build : AttnModelBuilder([](const ModelConfig& c, std::uint64_t s) {
    return MiniGPT<double>(c, s);
  });
  const double H = o.heads, dh = o.head_dim, G = o.groups, D = H * dh;
  struct Variant {
    const char* name;
    int n_kv;
    double formula;
    const char* formula_text;
    const char* document;
  };
  const Variant variants[] = {
      {"MHA", o.heads, 2 * D * D, "H·2·D·d_head = 2D²", "共 H·2·D·d_head = 2D² 参数（K+V）"},
      {"MQA", 1, 2 * D * dh, "2·D·d_head", "K+V 参数 = 2·D·d_head，减小 H 倍"},
      {"GQA", o.groups, 2 * G * D * dh, "2·G·D·d_head", "K+V 参数 = 2·G·D·d_head"},
  };
  Result r;
  Table counts{"K+V projection parameters counted on the mini-GPTs' matrices (biases apart)",
               {"variant", "K/V heads", "w_k shape", "per layer (counted)", "formula", "all layers (counted)",
                "K/V biases per layer"},
               {}};
  double per_layer[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const Variant& v = variants[i];
    ModelConfig c;
    c.n_layer = o.layers;
    c.d_model = o.heads * o.head_dim;
    c.n_head = o.heads;
    c.n_kv_head = v.n_kv;
    c.head_dim = o.head_dim;
    const MiniGPT<double> model = build(c, ctx.seed);
    std::uint64_t total = 0, worst = 0;
    for (int l = 0; l < o.layers; ++l) {
      const std::uint64_t n = kv_projection_params(model, l);
      total += n;
      const double off = std::abs(double(n) - v.formula);
      if (off > double(worst)) worst = static_cast<std::uint64_t>(off);
    }
    per_layer[i] = double(kv_projection_params(model, 0));
    r.expect(exact_row(fmt::format("{} K+V parameters per layer, {} (D = {}, H = {}, d_head = {}{})", v.name,
                                   v.formula_text, D, H, dh, i == 2 ? fmt::format(", G = {}", G) : ""),
                       v.formula, per_layer[i], "parameters", v.document));
    r.expect(exact_row(fmt::format("{}: largest |counted − formula| over the {} layers", v.name, o.layers), 0,
                       double(worst), "parameters"));
    const auto& b = model.weights().blocks[0];
    counts.rows.push_back({std::string(v.name), std::int64_t{v.n_kv}, fmt::format("[{}, {}]", b.w_k.rows(), b.w_k.cols()),
                           static_cast<std::int64_t>(per_layer[i]), static_cast<std::int64_t>(v.formula),
                           static_cast<std::int64_t>(total), static_cast<std::int64_t>(b.b_k.size() + b.b_v.size())});
  }
  r.expect(exact_row("MHA / MQA K+V parameters (= H)", H, per_layer[0] / per_layer[1], "×", "减小 H 倍 (H× fewer)"));
  r.expect(exact_row("MHA / GQA K+V parameters (= H/G)", H / G, per_layer[0] / per_layer[2], "×"));
  r.metric("mha_kv_params_per_layer", per_layer[0]);
  r.metric("mqa_kv_params_per_layer", per_layer[1]);
  r.metric("gqa_kv_params_per_layer", per_layer[2]);
  r.tables.push_back(std::move(counts));
  r.notes.push_back(fmt::format("Mini-GPTs of D = {} (H = {} × d_head = {}), {} layers, seed {}: the same code "
                                "serves MHA, GQA and MQA (n_kv_head = H, G, 1). w_k and w_v are [D, n_kv·d_head].",
                                D, H, dh, o.layers, ctx.seed));
  r.notes.push_back("The formulas count weights only; the mini-GPT's K/V biases (2·n_kv·d_head per layer) are shown "
                    "apart, and LLaMA-family models have none.");
  r.check = "attn-params";
  r.source = "000 §4.2";
  r.claim = "K+V projection parameters per layer: MHA 2D², MQA 2·D·d_head (H× fewer), GQA 2·G·D·d_head.";
  return r;
}

namespace {

class AttnParams final : public Check {
 public:
  std::string name() const override { return "attn-params"; }
  std::string source() const override { return "000 §4.2"; }
  std::string summary() const override { return "K+V parameters: MHA 2D², MQA 2·D·d_head, GQA 2·G·D·d_head"; }
  std::string description() const override {
    return "Builds mini-GPTs of one shape (D = H·d_head) as MHA, MQA and GQA and counts the elements\n"
           "of the K and V projection matrices in every layer, against 000 §4.2's formulas and the\n"
           "ratios H (MHA/MQA) and H/G (MHA/GQA).";
  }
  std::string derivation() const override {
    return "A K/V head h has W_k^(h), W_v^(h) in R^{D × d_head}: 2·D·d_head parameters.\n"
           "MHA: H heads, H·2·D·d_head; with H·d_head = D that is 2D².\n"
           "MQA: one K/V head shared by all H query heads: 2·D·d_head = 2D²/H, H times fewer.\n"
           "GQA: G K/V heads, one per group of H/G query heads: 2·G·D·d_head = 2D²·G/H.\n"
           "The KV cache per token shrinks by the same factor (n_kv·d_head per layer, for K and V).\n"
           "Source: 000 §4.2.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--heads", opts_.heads, "H, query heads (D = H·d_head)")->check(IntRange(1, kMaxHeads));
    sub.add_option("--head-dim", opts_.head_dim, "d_head")->check(IntRange(1, kMaxHeadDim));
    sub.add_option("--groups", opts_.groups, "G, K/V heads of the GQA variant (divides H)")->check(IntRange(1, kMaxHeads));
    sub.add_option("--layers", opts_.layers, "blocks per mini-GPT")->check(IntRange(1, kMaxLayers));
  }
  Result run(const RunContext& ctx) override { return run_attn_params(opts_, ctx); }

 private:
  AttnParamsOptions opts_;
};

KVLAB_REGISTER_CHECK(105, AttnParams);

}  // namespace
}  // namespace kvlab::checks
