// mla-cache — 000 §4.3.2, §4.4.3, sanity check [c]: what multi-head latent attention caches.
//
// Claim: MLA caches d_c + d_r elements per token per layer (the latent c_KV and the shared RoPE key
// k_R), DeepSeek-V2 512 + 64 = 576, against 2·8·128 = 2048 for LLaMA-3-70B's GQA (≈ 1/3.5) and
// 2·64·128 = 16384 for a same-size MHA (≈ 1/28); with d_c = 4·d_head the compression against MHA
// is ≈ H/2, 64× at H = 128 (000 §4.3.2). kvlab reads the shapes from data/models through the
// catalogue, counts the elements of the tensors a cache for each model allocates
// (kv_cache_tensors), and runs a mini-GPT with MLA through its real LatentCache, counting what it
// stores. Expected: integer counts exact (tolerance 0); ratios of exact integers, one correctly
// rounded division on each side (tolerance 0); the document's ≈ figures judged at the precision
// it wrote them (Stated), which flags E20 where it mixes bases.
//
//   kvlab mla-cache [--mla-model deepseek-v2] [--gqa-model llama-3-70b] [--tokens 16] [--layers 2]
//                   [--kv-lora-rank 32] [--rope-head-dim 4]
#include <vector>

#include <fmt/format.h>

#include "checks/mla_cache.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "model/mla.hpp"
#include "support/model_setup.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

// Largest mini-GPT accepted: prefill + decode of 256 tokens through 8 layers runs in well under 1 s.
constexpr int kMaxTokens = 256;
constexpr int kMaxLayers = 8;
constexpr int kMaxLatent = 128;
constexpr int kMaxRope = 64;
constexpr int kMiniHeads = 8, kMiniHeadDim = 8, kMiniModel = 64;

ModelSpec load_named(const MlaCacheParts& parts, const std::string& option, const std::string& name) {
  try {
    return parts.load_model ? parts.load_model(name) : kvlab::load_model(name);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", option, e.what()));
  }
}

std::uint64_t counted_elements(const ModelSpec& m, std::uint64_t kv_heads) {
  KvQuery q;
  q.batch = 1;
  q.ctx = 1;
  if (kv_heads != 0) q.kv_heads = kv_heads;
  return count_elements(kv_cache_tensors(m, q)) / m.n_layer;
}

}  // namespace

Result run_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts) {
  require_range("--tokens", o.tokens, 1, kMaxTokens);
  require_range("--layers", o.layers, 1, kMaxLayers);
  require_range("--kv-lora-rank", o.kv_lora_rank, 1, kMaxLatent);
  require_range("--rope-head-dim", o.rope_head_dim, 2, kMaxRope);
  if (o.rope_head_dim % 2 != 0)
    throw InputError(fmt::format("--rope-head-dim: must be even (RoPE rotates pairs) (got {})", o.rope_head_dim));
  const ModelSpec mla = load_named(parts, "--mla-model", o.mla_model);
  const ModelSpec gqa = load_named(parts, "--gqa-model", o.gqa_model);
  if (!mla.is_mla())
    throw InputError(fmt::format("--mla-model: '{}' has no kv_lora_rank/qk_rope_head_dim (not MLA)", o.mla_model));
  if (gqa.is_mla())
    throw InputError(fmt::format("--gqa-model: '{}' uses MLA; give a model with per-head K/V", o.gqa_model));
  const auto per_layer = parts.elements_per_layer ? parts.elements_per_layer : counted_elements;

  const std::uint64_t dc = *mla.kv_lora_rank, dr = *mla.qk_rope_head_dim;
  const std::uint64_t mla_n = per_layer(mla, 0);
  const std::uint64_t gqa_n = per_layer(gqa, 0);
  const std::uint64_t mha_n = per_layer(gqa, gqa.n_head);  // the GQA model's shape, every head its own K/V

  Result r;
  const std::string exact = "integer count: exact";
  Expectation e{.quantity = fmt::format("cache elements per token per layer, {} (d_c + d_r = {} + {})", mla.name, dc, dr),
                .source = "000 §4.4.3, §A.2 [c]", .unit = "elements", .expected = double(dc + dr), .tolerance = 0,
                .why = exact, .measured = double(mla_n)};
  e.stated = Stated::parse("576", "每 token 576 个 fp16 元素");
  r.expect(e);
  const std::uint64_t gqa_formula = checked_mul(2 * gqa.n_kv_head, gqa.head_dim, "--gqa-model: 2·n_kv·head_dim");
  e = {.quantity = fmt::format("cache elements per token per layer, {} GQA (2·{}·{})", gqa.name, gqa.n_kv_head, gqa.head_dim),
       .source = "000 §4.4.3", .unit = "elements", .expected = double(gqa_formula), .tolerance = 0, .why = exact,
       .measured = double(gqa_n)};
  e.stated = Stated::parse("2048", "2·8·128 = 2048");
  r.expect(e);
  const std::uint64_t mha_formula = checked_mul(2 * gqa.n_head, gqa.head_dim, "--gqa-model: 2·H·head_dim");
  e = {.quantity = fmt::format("cache elements per token per layer, {} shape as MHA (2·{}·{})", gqa.name, gqa.n_head, gqa.head_dim),
       .source = "000 §4.4.3", .unit = "elements", .expected = double(mha_formula), .tolerance = 0, .why = exact,
       .measured = double(mha_n)};
  e.stated = Stated::parse("16384", "2·64·128 = 16384");
  r.expect(e);

  const std::string ratio_why = "ratio of exact integers < 2^53: one correctly rounded division each side";
  e = {.quantity = fmt::format("GQA / MLA elements per token per layer ({} / {})", gqa.name, mla.name),
       .source = "000 §4.4.3", .unit = "×", .expected = double(gqa_formula) / double(dc + dr), .tolerance = 0,
       .why = ratio_why, .measured = double(gqa_n) / double(mla_n)};
  e.stated = Stated::parse("3.5", "MLA 约为 GQA 的 1/3.5");
  e.arithmetic = fmt::format("{} / {} = {:.4f}", gqa_formula, dc + dr, double(gqa_formula) / double(dc + dr));
  r.expect(e);
  e = {.quantity = "MHA / MLA elements per token per layer", .source = "000 §4.4.3", .unit = "×",
       .expected = double(mha_formula) / double(dc + dr), .tolerance = 0, .why = ratio_why,
       .measured = double(mha_n) / double(mla_n)};
  e.stated = Stated::parse("28", "约 1/28");
  e.arithmetic = fmt::format("{} / {} = {:.4f}", mha_formula, dc + dr, double(mha_formula) / double(dc + dr));
  r.expect(e);
  const std::uint64_t gqa_model_n = checked_mul(gqa.n_layer, gqa_formula, "--gqa-model: elements per token");
  const std::uint64_t mla_model_n = checked_mul(mla.n_layer, dc + dr, "--mla-model: elements per token");
  const double whole_expected = double(gqa_model_n) / double(mla_model_n);
  r.expect({.quantity = fmt::format("GQA / MLA elements per token, whole model ({}·{} / ({}·{}))", gqa.n_layer,
                                    gqa_formula, mla.n_layer, dc + dr),
            .source = "000 §4.4.3", .unit = "×", .expected = whole_expected, .tolerance = 0, .why = ratio_why,
            .measured = double(gqa.n_layer * gqa_n) / double(mla.n_layer * mla_n),
            .document = "每 token … 个元素: the document compares per layer, and says so"});

  // 000 §4.3.2: d_c = 4·d_head ⇒ MHA (2·H·d_head) / d_c = H/2; 64× at H = 128.
  Table compression{"compression against an MHA of the MLA model's own shape (000 §4.3.2)",
                    {"model", "H", "d_head", "d_c", "d_r", "MHA 2·H·d_head", "/ d_c", "/ (d_c + d_r)", "H/2"}, {}};
  if (mla.qk_nope_head_dim) {
    const std::uint64_t H = mla.n_head, dh = *mla.qk_nope_head_dim,
                        mha_own = checked_mul(2 * H, dh, "--mla-model: 2·H·d_head");
    compression.rows.push_back({mla.name, std::int64_t(H), std::int64_t(dh), std::int64_t(dc), std::int64_t(dr),
                                std::int64_t(mha_own), double(mha_own) / dc, double(mha_own) / double(mla_n),
                                double(H) / 2});
    if (dc == 4 * dh) {
      e = {.quantity = fmt::format("MHA / latent, {} (d_c = 4·d_head ⇒ H/2, latent only)", mla.name),
           .source = "000 §4.3.2", .unit = "×", .expected = double(H) / 2, .tolerance = 0,
           .why = "2·H·d_head / (4·d_head) = H/2 exactly", .measured = double(mha_own) / double(dc)};
      e.stated = Stated::parse("64", "配 H=128 大概 64×");
      r.expect(e);
    } else {
      r.notes.push_back(fmt::format("{}: d_c = {} is not 4·d_head = {}, so 000 §4.3.2's H/2 premise does not hold; "
                                    "the H/2 row is left out.", mla.name, dc, 4 * dh));
    }
    e = {.quantity = fmt::format("MHA / what MLA caches, {} (2·H·d_head / (d_c + d_r))", mla.name),
         .source = "000 §4.3.2, §4.4.3 (E20)", .unit = "×", .expected = double(mha_own) / double(dc + dr),
         .tolerance = 0, .why = ratio_why, .measured = double(mha_own) / double(mla_n)};
    e.stated = Stated::parse("64", "压缩比约 H/2 倍——配 H=128 大概 64×").flags("E20");
    e.arithmetic = fmt::format("2·{}·{} / ({} + {}) = {} / {} = {:.2f}: the d_r RoPE key is cached too", H, dh, dc, dr,
                               mha_own, dc + dr, double(mha_own) / double(dc + dr));
    r.expect(e);
    r.metric("compression_latent_only", double(mha_own) / double(dc));
    r.metric("compression_with_rope_key", double(mha_own) / double(mla_n));
  } else {
    r.notes.push_back(fmt::format("{}: no qk_nope_head_dim in its config, so the H/2 comparison is left out.", mla.name));
  }

  // The real cache of an MLA mini-GPT: prefill half the tokens (naive path), decode the rest one
  // at a time (absorbed path), then count what the LatentCache stored.
  MlaConfig mc;
  mc.n_layer = o.layers;
  mc.d_model = kMiniModel;
  mc.n_head = kMiniHeads;
  mc.head_dim = kMiniHeadDim;
  mc.kv_lora_rank = o.kv_lora_rank;
  mc.rope_head_dim = o.rope_head_dim;
  const MlaGPT<double> model(mc, ctx.seed);
  const auto ids = random_tokens(ctx.seed + 1, o.tokens, mc.vocab_size);
  LatentCache<double> cache = model.make_cache(o.tokens);
  const int prefill = (o.tokens + 1) / 2;
  model.forward(std::span(ids).first(prefill), 0, cache, MlaPath::naive);
  for (int t = prefill; t < o.tokens; ++t) model.forward(std::span(ids).subspan(t, 1), t, cache, MlaPath::absorbed);
  const std::uint64_t written = cache.elements_written();
  const std::uint64_t want = std::uint64_t(o.tokens) * o.layers * (o.kv_lora_rank + o.rope_head_dim);
  r.expect({.quantity = fmt::format("mini-GPT MLA cache: elements written for {} tokens × {} layers", o.tokens, o.layers),
            .source = "000 §A.2 [c]", .unit = "elements", .expected = double(want), .tolerance = 0,
            .why = fmt::format("integer count: tokens · layers · (d_c + d_r) = {}·{}·({} + {})", o.tokens, o.layers,
                               o.kv_lora_rank, o.rope_head_dim),
            .measured = double(written), .document = "MLA cache = d_c + d_r 元素"});
  const std::uint64_t mini_mha = 2ull * kMiniHeads * kMiniHeadDim;
  Table mini{"mini-GPT caches per token per layer (counted from the cache)",
             {"cache", "elements per token per layer", "vs MLA"}, {}};
  const double mini_per = double(written) / (double(o.tokens) * o.layers);
  mini.rows.push_back({std::string("MLA LatentCache (c_KV + k_R)"), mini_per, 1.0});
  mini.rows.push_back({fmt::format("MHA with the same heads (2·{}·{})", kMiniHeads, kMiniHeadDim),
                       double(mini_mha), double(mini_mha) / mini_per});

  Table counts{"cache elements per token per layer, counted from the cache tensors (kv_cache_tensors)",
               {"model", "layout", "elements", "layers", "elements per token, all layers"}, {}};
  counts.rows.push_back({mla.name, fmt::format("MLA d_c {} + d_r {}", dc, dr), std::int64_t(mla_n),
                         std::int64_t(mla.n_layer), std::int64_t(mla.n_layer * mla_n)});
  counts.rows.push_back({gqa.name, fmt::format("GQA {} × {} (K and V)", gqa.n_kv_head, gqa.head_dim),
                         std::int64_t(gqa_n), std::int64_t(gqa.n_layer), std::int64_t(gqa.n_layer * gqa_n)});
  counts.rows.push_back({gqa.name + " as MHA", fmt::format("MHA {} × {} (K and V)", gqa.n_head, gqa.head_dim),
                         std::int64_t(mha_n), std::int64_t(gqa.n_layer), std::int64_t(gqa.n_layer * mha_n)});
  r.tables.push_back(std::move(counts));
  if (!compression.rows.empty()) r.tables.push_back(std::move(compression));
  r.tables.push_back(std::move(mini));

  r.metric_exact("elements_per_token_layer_mla", mla_n);
  r.metric_exact("elements_per_token_layer_gqa", gqa_n);
  r.metric_exact("elements_per_token_layer_mha", mha_n);
  r.metric("ratio_gqa_over_mla", double(gqa_n) / double(mla_n));
  r.metric("ratio_mha_over_mla", double(mha_n) / double(mla_n));
  r.metric_exact("mini_elements_written", written);
  r.notes.push_back(fmt::format("models: {} ({}); {} ({})", mla.name, mla.source, gqa.name, gqa.source));
  r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model {}, {} heads × {}, d_c {}, d_r {}, query latent {}, "
                                "float64, {} tokens ({} prefilled naive, the rest decoded absorbed), seed {}",
                                mc.n_layer, mc.d_model, mc.n_head, mc.head_dim, mc.kv_lora_rank, mc.rope_head_dim,
                                mc.q_lora_rank, o.tokens, prefill, ctx.seed));
  r.notes.push_back("E20: 64× counts the latent but not the RoPE key the cache also holds. \"约 1/3.5\" and \"约 1/28\" "
                    "hold as truncations of 3.556 and 28.44 (a figure marked approximate allows up to one unit "
                    "above it), per layer as the document counts them (the models have 80 and 60 layers).");
  r.check = "mla-cache";
  r.source = "000 §4.3.2, §4.4.3, §A.2 [c]";
  r.claim = "MLA caches d_c + d_r elements per token per layer: DeepSeek-V2 576 against LLaMA-3-70B's GQA 2048 "
            "(≈ 1/3.5) and a same-size MHA 16384 (≈ 1/28); d_c = 4·d_head gives ≈ H/2 (64× at H = 128).";
  return r;
}

namespace {

class MlaCache final : public Check {
 public:
  std::string name() const override { return "mla-cache"; }
  std::string source() const override { return "000 §4.3.2, §4.4.3, §A.2 [c]"; }
  std::string summary() const override { return "MLA caches d_c + d_r per token: 576 vs GQA 2048 vs MHA 16384"; }
  std::string derivation() const override {
    return "MLA caches, per token and layer, the latent c_KV (d_c elements) and the decoupled RoPE key k_R\n"
           "(d_r elements, shared by all heads): d_c + d_r elements. DeepSeek-V2: 512 + 64 = 576.\n"
           "GQA caches 2 · n_kv_head · head_dim: LLaMA-3-70B 2·8·128 = 2048, so MLA is 576/2048 = 1/3.56\n"
           "(the course writes 1/3.5); the same shape as MHA, 2·64·128 = 16,384, is 1/28.4.\n"
           "Against an MHA of DeepSeek-V2's own shape (H = 128, head_dim 128): 2·H·head_dim = 32,768;\n"
           "divided by d_c = 4·head_dim alone that is H/2 = 64, divided by d_c + d_r it is 56.9.\n"
           "Per model, the layer counts differ too: 80·2048 / (60·576) = 4.74.\n"
           "Source: 000 §4.3.2, §4.4.3, §A.2 [c].\n";
  }
  std::string description() const override {
    return "Counts the cache elements per token of an MLA model (DeepSeek-V2), a GQA model\n"
           "(LLaMA-3-70B) and that model as MHA, from the catalogue's shapes, compares the ratios\n"
           "with the document's ≈ figures, and runs a mini-GPT with MLA through its real latent\n"
           "cache, counting what it stores.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--mla-model", opts_.mla_model, "MLA model: catalogue name or config.json");
    sub.add_option("--gqa-model", opts_.gqa_model, "GQA/MHA model to compare with: catalogue name or config.json");
    sub.add_option("--tokens", opts_.tokens, "Mini-GPT: tokens through the MLA cache")->check(IntRange(1, kMaxTokens));
    sub.add_option("--layers", opts_.layers, "Mini-GPT: layers")->check(IntRange(1, kMaxLayers));
    sub.add_option("--kv-lora-rank", opts_.kv_lora_rank, "Mini-GPT: latent width d_c")->check(IntRange(1, kMaxLatent));
    sub.add_option("--rope-head-dim", opts_.rope_head_dim, "Mini-GPT: decoupled RoPE width d_r (even)")
        ->check(IntRange(2, kMaxRope));
  }
  Result run(const RunContext& ctx) override { return run_mla_cache(opts_, ctx); }

 private:
  MlaCacheOptions opts_;
};

KVLAB_REGISTER_CHECK(110, MlaCache);

}  // namespace
}  // namespace kvlab::checks
