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
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "checks/mla_cache.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "model/mla.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::mla_cache {
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

const std::string kExact = "integer count: exact";
const std::string kRatioWhy = "ratio of exact integers < 2^53: one correctly rounded division each side";

/// The mini-GPT's config: kMiniHeads heads of kMiniHeadDim, the options' layers and widths.
MlaConfig mini_config(const MlaCacheOptions& o) {
  MlaConfig mc;
  mc.n_layer = o.layers;
  mc.d_model = kMiniModel;
  mc.n_head = kMiniHeads;
  mc.head_dim = kMiniHeadDim;
  mc.kv_lora_rank = o.kv_lora_rank;
  mc.rope_head_dim = o.rope_head_dim;
  return mc;
}

/// The real cache of an MLA mini-GPT: prefill half the tokens (naive path), decode the rest one
/// at a time (absorbed path), then count what the LatentCache stored.
void run_mini(MlaCacheMeasured& m, const MlaCacheOptions& o, std::uint64_t seed) {
  const MlaConfig mc = mini_config(o);
  const MlaGPT<double> model(mc, seed);
  const auto ids = random_tokens(seed + 1, o.tokens, mc.vocab_size);
  LatentCache<double> cache = model.make_cache(o.tokens);
  m.mini_prefill = (o.tokens + 1) / 2;
  model.forward(std::span(ids).first(m.mini_prefill), 0, cache, MlaPath::naive);
  for (int t = m.mini_prefill; t < o.tokens; ++t)
    model.forward(std::span(ids).subspan(t, 1), t, cache, MlaPath::absorbed);
  m.mini_written = cache.elements_written();
  m.mini_q_lora_rank = mc.q_lora_rank;
}

std::uint64_t mla_width(const MlaCacheMeasured& m) { return *m.mla.kv_lora_rank + *m.mla.qk_rope_head_dim; }

Expectation ratio_row(std::string quantity, std::uint64_t formula, std::uint64_t counted, const MlaCacheMeasured& m,
                      const char* stated, const char* document) {
  const std::uint64_t w = mla_width(m);
  Expectation e{.quantity = std::move(quantity), .source = "000 §4.4.3", .unit = "×",
                .expected = double(formula) / double(w), .tolerance = 0, .why = kRatioWhy,
                .measured = double(counted) / double(m.mla_n)};
  e.stated = Stated::parse(stated, document);
  e.arithmetic = fmt::format("{} / {} = {:.4f}", formula, w, double(formula) / double(w));
  return e;
}

/// 000 §4.3.2: d_c = 4·d_head ⇒ MHA (2·H·d_head) / d_c = H/2; 64× at H = 128. Nothing without
/// the MLA model's qk_nope_head_dim.
void compression_rows(const MlaCacheMeasured& m, std::vector<Expectation>& rows) {
  if (!m.mla.qk_nope_head_dim) return;
  const std::uint64_t H = m.mla.n_head, dh = *m.mla.qk_nope_head_dim, dc = *m.mla.kv_lora_rank,
                      dr = *m.mla.qk_rope_head_dim;
  if (dc == 4 * dh) {
    Expectation e{.quantity = fmt::format("MHA / latent, {} (d_c = 4·d_head ⇒ H/2, latent only)", m.mla.name),
                  .source = "000 §4.3.2", .unit = "×", .expected = double(H) / 2, .tolerance = 0,
                  .why = "2·H·d_head / (4·d_head) = H/2 exactly", .measured = double(m.mha_own) / double(dc)};
    e.stated = Stated::parse("64", "配 H=128 大概 64×");
    rows.push_back(std::move(e));
  }
  Expectation e{.quantity = fmt::format("MHA / what MLA caches, {} (2·H·d_head / (d_c + d_r))", m.mla.name),
                .source = "000 §4.3.2, §4.4.3 (E20)", .unit = "×", .expected = double(m.mha_own) / double(dc + dr),
                .tolerance = 0, .why = kRatioWhy, .measured = double(m.mha_own) / double(m.mla_n)};
  e.stated = Stated::parse("64", "压缩比约 H/2 倍——配 H=128 大概 64×").flags("E20");
  e.arithmetic = fmt::format("2·{}·{} / ({} + {}) = {} / {} = {:.2f}: the d_r RoPE key is cached too", H, dh, dc, dr,
                             m.mha_own, dc + dr, double(m.mha_own) / double(dc + dr));
  rows.push_back(std::move(e));
}

/// The notes and metrics of 000 §4.3.2's comparison, into `r`; its table, when the MLA model has
/// a qk_nope_head_dim.
std::optional<Table> present_compression(const MlaCacheMeasured& m, Result& r) {
  const ModelSpec& mla = m.mla;
  if (!mla.qk_nope_head_dim) {
    r.notes.push_back(fmt::format("{}: no qk_nope_head_dim in its config, so the H/2 comparison is left out.", mla.name));
    return std::nullopt;
  }
  const std::uint64_t H = mla.n_head, dh = *mla.qk_nope_head_dim, dc = *mla.kv_lora_rank, dr = *mla.qk_rope_head_dim;
  if (dc != 4 * dh)
    r.notes.push_back(fmt::format("{}: d_c = {} is not 4·d_head = {}, so 000 §4.3.2's H/2 premise does not hold; "
                                  "the H/2 row is left out.", mla.name, dc, 4 * dh));
  r.metric("compression_latent_only", double(m.mha_own) / double(dc));
  r.metric("compression_with_rope_key", double(m.mha_own) / double(m.mla_n));
  return Table{"compression against an MHA of the MLA model's own shape (000 §4.3.2)",
               {"model", "H", "d_head", "d_c", "d_r", "MHA 2·H·d_head", "/ d_c", "/ (d_c + d_r)", "H/2"},
               {{mla.name, std::int64_t(H), std::int64_t(dh), std::int64_t(dc), std::int64_t(dr),
                 std::int64_t(m.mha_own), double(m.mha_own) / dc, double(m.mha_own) / double(m.mla_n), double(H) / 2}}};
}

Table counts_table(const MlaCacheMeasured& m) {
  const ModelSpec &mla = m.mla, &gqa = m.gqa;
  Table counts{"cache elements per token per layer, counted from the cache tensors (kv_cache_tensors)",
               {"model", "layout", "elements", "layers", "elements per token, all layers"}, {}};
  counts.rows.push_back({mla.name, fmt::format("MLA d_c {} + d_r {}", *mla.kv_lora_rank, *mla.qk_rope_head_dim),
                         std::int64_t(m.mla_n), std::int64_t(mla.n_layer), std::int64_t(mla.n_layer * m.mla_n)});
  counts.rows.push_back({gqa.name, fmt::format("GQA {} × {} (K and V)", gqa.n_kv_head, gqa.head_dim),
                         std::int64_t(m.gqa_n), std::int64_t(gqa.n_layer), std::int64_t(gqa.n_layer * m.gqa_n)});
  counts.rows.push_back({gqa.name + " as MHA", fmt::format("MHA {} × {} (K and V)", gqa.n_head, gqa.head_dim),
                         std::int64_t(m.mha_n), std::int64_t(gqa.n_layer), std::int64_t(gqa.n_layer * m.mha_n)});
  return counts;
}

void present(const MlaCacheMeasured& m, Result& r) {
  const MlaCacheOptions& o = m.options;
  const std::optional<Table> compression = present_compression(m, r);
  const std::uint64_t mini_mha = 2ull * kMiniHeads * kMiniHeadDim;
  const double mini_per = double(m.mini_written) / (double(o.tokens) * o.layers);
  Table mini{"mini-GPT caches per token per layer (counted from the cache)",
             {"cache", "elements per token per layer", "vs MLA"}, {}};
  mini.rows.push_back({std::string("MLA LatentCache (c_KV + k_R)"), mini_per, 1.0});
  mini.rows.push_back({fmt::format("MHA with the same heads (2·{}·{})", kMiniHeads, kMiniHeadDim), double(mini_mha),
                       double(mini_mha) / mini_per});
  r.tables.push_back(counts_table(m));
  if (compression) r.tables.push_back(*compression);
  r.tables.push_back(std::move(mini));
  r.metric_exact("elements_per_token_layer_mla", m.mla_n);
  r.metric_exact("elements_per_token_layer_gqa", m.gqa_n);
  r.metric_exact("elements_per_token_layer_mha", m.mha_n);
  r.metric("ratio_gqa_over_mla", double(m.gqa_n) / double(m.mla_n));
  r.metric("ratio_mha_over_mla", double(m.mha_n) / double(m.mla_n));
  r.metric_exact("mini_elements_written", m.mini_written);
  r.notes.push_back(fmt::format("models: {} ({}); {} ({})", m.mla.name, m.mla.source, m.gqa.name, m.gqa.source));
  r.notes.push_back(fmt::format("mini-GPT: {} layers, d_model {}, {} heads × {}, d_c {}, d_r {}, query latent {}, "
                                "float64, {} tokens ({} prefilled naive, the rest decoded absorbed), seed {}",
                                o.layers, kMiniModel, kMiniHeads, kMiniHeadDim, o.kv_lora_rank, o.rope_head_dim,
                                m.mini_q_lora_rank, o.tokens, m.mini_prefill, m.seed));
  r.notes.push_back("E20: 64× counts the latent but not the RoPE key the cache also holds. \"约 1/3.5\" and \"约 1/28\" "
                    "hold as truncations of 3.556 and 28.44 (a figure marked approximate allows up to one unit "
                    "above it), per layer as the document counts them (the models have 80 and 60 layers).");
}

}  // namespace

MlaCacheMeasured measure_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts) {
  MlaCacheMeasured m{.options = o, .seed = ctx.seed};
  m.mla = load_named(parts, "--mla-model", o.mla_model);
  m.gqa = load_named(parts, "--gqa-model", o.gqa_model);
  const ModelSpec &mla = m.mla, &gqa = m.gqa;
  if (!mla.is_mla())
    throw InputError(fmt::format("--mla-model: '{}' has no kv_lora_rank/qk_rope_head_dim (not MLA)", o.mla_model));
  if (gqa.is_mla())
    throw InputError(fmt::format("--gqa-model: '{}' uses MLA; give a model with per-head K/V", o.gqa_model));
  const auto per_layer = parts.elements_per_layer ? parts.elements_per_layer : counted_elements;
  m.mla_n = per_layer(mla, 0);
  m.gqa_n = per_layer(gqa, 0);
  m.mha_n = per_layer(gqa, gqa.n_head);  // the GQA model's shape, every head its own K/V
  m.gqa_formula = checked_mul(2 * gqa.n_kv_head, gqa.head_dim, "--gqa-model: 2·n_kv·head_dim");
  m.mha_formula = checked_mul(2 * gqa.n_head, gqa.head_dim, "--gqa-model: 2·H·head_dim");
  m.gqa_model_n = checked_mul(gqa.n_layer, m.gqa_formula, "--gqa-model: elements per token");
  m.mla_model_n = checked_mul(mla.n_layer, mla_width(m), "--mla-model: elements per token");
  if (mla.qk_nope_head_dim)
    m.mha_own = checked_mul(2 * std::uint64_t(mla.n_head), *mla.qk_nope_head_dim, "--mla-model: 2·H·d_head");
  run_mini(m, o, ctx.seed);
  return m;
}

std::vector<Expectation> judge_mla_cache(const MlaCacheMeasured& m) {
  const ModelSpec &mla = m.mla, &gqa = m.gqa;
  const std::uint64_t dc = *mla.kv_lora_rank, dr = *mla.qk_rope_head_dim;
  std::vector<Expectation> rows;
  Expectation e{.quantity = fmt::format("cache elements per token per layer, {} (d_c + d_r = {} + {})", mla.name, dc, dr),
                .source = "000 §4.4.3, §A.2 [c]", .unit = "elements", .expected = double(dc + dr), .tolerance = 0,
                .why = kExact, .measured = double(m.mla_n)};
  e.stated = Stated::parse("576", "每 token 576 个 fp16 元素");
  rows.push_back(std::move(e));
  e = {.quantity = fmt::format("cache elements per token per layer, {} GQA (2·{}·{})", gqa.name, gqa.n_kv_head, gqa.head_dim),
       .source = "000 §4.4.3", .unit = "elements", .expected = double(m.gqa_formula), .tolerance = 0, .why = kExact,
       .measured = double(m.gqa_n)};
  e.stated = Stated::parse("2048", "2·8·128 = 2048");
  rows.push_back(std::move(e));
  e = {.quantity = fmt::format("cache elements per token per layer, {} shape as MHA (2·{}·{})", gqa.name, gqa.n_head,
                               gqa.head_dim),
       .source = "000 §4.4.3", .unit = "elements", .expected = double(m.mha_formula), .tolerance = 0, .why = kExact,
       .measured = double(m.mha_n)};
  e.stated = Stated::parse("16384", "2·64·128 = 16384");
  rows.push_back(std::move(e));
  rows.push_back(ratio_row(fmt::format("GQA / MLA elements per token per layer ({} / {})", gqa.name, mla.name),
                           m.gqa_formula, m.gqa_n, m, "3.5", "MLA 约为 GQA 的 1/3.5"));
  rows.push_back(ratio_row("MHA / MLA elements per token per layer", m.mha_formula, m.mha_n, m, "28", "约 1/28"));
  rows.push_back({.quantity = fmt::format("GQA / MLA elements per token, whole model ({}·{} / ({}·{}))", gqa.n_layer,
                                          m.gqa_formula, mla.n_layer, dc + dr),
                  .source = "000 §4.4.3", .unit = "×", .expected = double(m.gqa_model_n) / double(m.mla_model_n),
                  .tolerance = 0, .why = kRatioWhy,
                  .measured = double(gqa.n_layer * m.gqa_n) / double(mla.n_layer * m.mla_n),
                  .document = "每 token … 个元素: the document compares per layer, and says so"});
  compression_rows(m, rows);
  const MlaCacheOptions& o = m.options;
  const std::uint64_t want = std::uint64_t(o.tokens) * o.layers * (o.kv_lora_rank + o.rope_head_dim);
  rows.push_back({.quantity = fmt::format("mini-GPT MLA cache: elements written for {} tokens × {} layers", o.tokens,
                                          o.layers),
                  .source = "000 §A.2 [c]", .unit = "elements", .expected = double(want), .tolerance = 0,
                  .why = fmt::format("integer count: tokens · layers · (d_c + d_r) = {}·{}·({} + {})", o.tokens,
                                     o.layers, o.kv_lora_rank, o.rope_head_dim),
                  .measured = double(m.mini_written), .document = "MLA cache = d_c + d_r 元素"});
  return rows;
}

const CheckDef<MlaCacheOptions, MlaCacheMeasured>& mla_cache_check() {
  static const CheckDef<MlaCacheOptions, MlaCacheMeasured> def{
      .spec = {.name = "mla-cache",
               .order = 110,
               .source = "000 §4.3.2, §4.4.3, §A.2 [c]",
               .summary = "MLA caches d_c + d_r per token: 576 vs GQA 2048 vs MHA 16384",
               .claim_zh = "MLA 每 token 只缓存 d_c + d_r = 576 个元素，GQA 为 2048，MHA 为 16384",
               .description =
                   "Counts the cache elements per token of an MLA model (DeepSeek-V2), a GQA model\n"
                   "(LLaMA-3-70B) and that model as MHA, from the catalogue's shapes, compares the ratios\n"
                   "with the document's ≈ figures, and runs a mini-GPT with MLA through its real latent\n"
                   "cache, counting what it stores.",
               .derivation =
                   "MLA caches, per token and layer, the latent c_KV (d_c elements) and the decoupled RoPE key k_R\n"
                   "(d_r elements, shared by all heads): d_c + d_r elements. DeepSeek-V2: 512 + 64 = 576.\n"
                   "GQA caches 2 · n_kv_head · head_dim: LLaMA-3-70B 2·8·128 = 2048, so MLA is 576/2048 = 1/3.56\n"
                   "(the course writes 1/3.5); the same shape as MHA, 2·64·128 = 16,384, is 1/28.4.\n"
                   "Against an MHA of DeepSeek-V2's own shape (H = 128, head_dim 128): 2·H·head_dim = 32,768;\n"
                   "divided by d_c = 4·head_dim alone that is H/2 = 64, divided by d_c + d_r it is 56.9.\n"
                   "Per model, the layer counts differ too: 80·2048 / (60·576) = 4.74.\n"
                   "Source: 000 §4.3.2, §4.4.3, §A.2 [c].\n",
               .claim = "MLA caches d_c + d_r elements per token per layer: DeepSeek-V2 576 against LLaMA-3-70B's GQA "
                        "2048 (≈ 1/3.5) and a same-size MHA 16384 (≈ 1/28); d_c = 4·d_head gives ≈ H/2 (64× at H = "
                        "128)."},
      .options = {{"--mla-model", &MlaCacheOptions::mla_model, Allowed::any_value(),
                   "MLA model: catalogue name or config.json"},
                  {"--gqa-model", &MlaCacheOptions::gqa_model, Allowed::any_value(),
                   "GQA/MHA model to compare with: catalogue name or config.json"},
                  {"--tokens", &MlaCacheOptions::tokens, Allowed::integers(1, kMaxTokens),
                   "Mini-GPT: tokens through the MLA cache"},
                  {"--layers", &MlaCacheOptions::layers, Allowed::integers(1, kMaxLayers), "Mini-GPT: layers"},
                  {"--kv-lora-rank", &MlaCacheOptions::kv_lora_rank, Allowed::integers(1, kMaxLatent),
                   "Mini-GPT: latent width d_c"},
                  {"--rope-head-dim", &MlaCacheOptions::rope_head_dim, Allowed::integers(2, kMaxRope),
                   "Mini-GPT: decoupled RoPE width d_r (even)"}},
      .constraints =
          [](const MlaCacheOptions& o) {
            if (o.rope_head_dim % 2 != 0)
              throw InputError(
                  fmt::format("--rope-head-dim: must be even (RoPE rotates pairs) (got {})", o.rope_head_dim));
          },
      .measure = [](const MlaCacheOptions& o, const RunContext& ctx) { return measure_mla_cache(o, ctx); },
      .judge = judge_mla_cache,
      .present = present};
  return def;
}

Result run_mla_cache(const MlaCacheOptions& o, const RunContext& ctx, const MlaCacheParts& parts) {
  return run_check(mla_cache_check(), o, ctx, [&parts](const MlaCacheOptions& opts, const RunContext& c) {
    return measure_mla_cache(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(mla_cache_check);

}  // namespace kvlab::checks::mla_cache
