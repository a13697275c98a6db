// The course's numeric tables: one function per table, in document order (see cheatsheet.hpp).
#include "cheatsheet/cheatsheet.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attention/causal_mask.hpp"
#include "core/error.hpp"
#include "cost/capacity.hpp"
#include "cost/generation_flops.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "model/config.hpp"
#include "quant/quant_cache.hpp"
#include "spec/expected_tokens.hpp"
#include "cost/premises.hpp"

namespace kvlab {
namespace {

// ---- shared constants: each is a premise of the documents, not a result ----------------------

constexpr std::uint64_t kDocCtx = premises::kCtx;  // 000 §2.2, §9.1, §9.3: L_ctx = 4096
constexpr const char* kDocGpu = premises::kGpu;    // 004 §1.5, 000 §2.3, §9.2: A100 80GB
constexpr double kCourseParams7b = premises::kParams7b;  // 004 §1.5: "7B", 2N bytes of weights
constexpr double kCourseParams70b = 70e9;          // 000 §2.3: "weights ≈ 140 GB (fp16)"
constexpr double kBytesPerParam = premises::kBytesPerParam;  // fp16/bf16 weights
constexpr std::uint64_t kDeploymentGpus = 8;       // 000 §2.3, §9.3: 8 × A100 80GB
constexpr double kDocKvBudgetBytes = 400e9;        // 000 §2.3: "可分给 KV cache 约 400 GB"
constexpr double kDraft7bParams = premises::kDraftParams7b;  // 000 §9.3: a 7B fp16 draft model
constexpr double kSpecCostRatio = 0.05;            // c: one draft forward = 5% of a target forward
constexpr int kSpecMaxK = 8;                       // drafts per step searched for the α tables
constexpr int kQuantGroup = 128;                   // G of the quantized formats (kv-quant's default)

/// "MHA", "GQA-8", "MQA" or "MLA" for `m` with `kv_heads` K/V heads.
std::string attention_kind(const ModelSpec& m, std::uint64_t kv_heads) {
  if (m.is_mla()) return "MLA";
  if (kv_heads == m.n_head) return "MHA";
  if (kv_heads == 1) return "MQA";
  return fmt::format("GQA-{}", kv_heads);
}

Cell count(std::uint64_t n) { return static_cast<std::int64_t>(n); }
double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / kGiB; }
double gb(double bytes) { return bytes / kGB; }

std::uint64_t cache_bytes(const ModelSpec& m, std::uint64_t batch, std::uint64_t ctx, CacheDtype d,
                          std::optional<std::uint64_t> kv_heads = std::nullopt) {
  return kv_cache_size(m, KvQuery{batch, ctx, d, kv_heads}).total_bytes;
}

/// `m` with DeepSeek-V2's latent cache (d_c, d_r) in place of its K/V heads: "MLA-shaped" (000 §9.1).
ModelSpec mla_shaped(ModelSpec m, const ModelSpec& mla) {
  m.kv_lora_rank = mla.kv_lora_rank;
  m.qk_rope_head_dim = mla.qk_rope_head_dim;
  return m;
}

/// An MLA model as the MHA of its own shape: H heads of qk_nope_head_dim for K and V (000 §4.3.2,
/// the comparison `kvlab mla-cache` makes).
ModelSpec mha_of_mla(ModelSpec m) {
  m.head_dim = m.qk_nope_head_dim.value_or(m.head_dim);
  m.kv_lora_rank.reset();
  m.qk_rope_head_dim.reset();
  m.n_kv_head = m.n_head;
  return m;
}

/// `m` with cross-layer attention sharing each K/V over `share` adjacent layers: its cache holds
/// ModelConfig::n_kv_layer() = ceil(L / share) layers (the rule of lib/model and `kvlab cla`).
ModelSpec cla_shaped(ModelSpec m, int share) {
  ModelConfig cfg;
  cfg.n_layer = static_cast<int>(m.n_layer);
  cfg.cla_share = share;
  m.n_layer = static_cast<std::uint64_t>(cfg.n_kv_layer());
  return m;
}

/// Parameters of `m` with `kv_heads` K/V heads instead of its own: the K and V projections change
/// by 2·d·(kv_heads − own)·head_dim per layer.
double params_with_kv_heads(const ModelSpec& m, double n_params, std::uint64_t kv_heads) {
  const double per_head = 2.0 * static_cast<double>(m.d_model * m.head_dim * m.n_layer);
  return n_params + per_head * (static_cast<double>(kv_heads) - static_cast<double>(m.n_kv_head));
}

/// Bits per cached element of format `f` measured on the real buffers of a QuantKVCache (one layer
/// of `width` channels, 2G positions: whole K groups, so no residual): (codes + scales) · 8 / elements.
double quant_bits_per_element(KvQuantFormat f, int width) {
  const int n = 2 * kQuantGroup;
  QuantKVCache<double> cache(1, width, n, QuantConfig{f, kQuantGroup, KeyAxis::per_channel, {}});
  Mat<double> k(n, width), v(n, width);
  for (int t = 0; t < n; ++t)
    for (int j = 0; j < width; ++j) {
      k(t, j) = std::sin(0.37 * t + 0.11 * j);
      v(t, j) = std::cos(0.23 * t - 0.07 * j);
    }
  cache.append(0, k, v);
  return 8.0 * static_cast<double>(cache.bytes(0).total()) / (2.0 * n * width);
}

// A table's setting: the options given, the document's values where none was.
struct Setup {
  std::uint64_t ctx, batch;
  CacheDtype dtype;
  GpuSpec gpu;
};

Setup setup_of(const CheatsheetParams& p, std::uint64_t ctx, std::uint64_t batch, CacheDtype d) {
  return {p.ctx.value_or(ctx), p.batch.value_or(batch), p.kv_dtype.value_or(d), load_gpu(p.gpu.value_or(kDocGpu))};
}

bool is_default(const CheatsheetParams& p) { return !p.ctx && !p.batch && !p.kv_dtype && !p.gpu; }

// ---- 000 ---------------------------------------------------------------------------------------

/// 000 §2.2: the cache of specific models at 4K, fp16 (body missing from the text).
CheatTable t_000_2_2(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::fp16);
  CheatTable c{"000-2.2", "000 §2.2", fmt::format("ctx {}, batch {}, {} cache, each model's own K/V heads "
                                                 "(`kvlab kv-size`)", r.ctx, r.batch, cache_dtype_name(r.dtype)), {}, {}};
  c.table = {"KV cache of specific models",
             {"model", "attention", "L", "cached per layer", "elements/token", "bytes/token", "bytes (batch × ctx)",
              "GB", "GiB"}, {}};
  for (const char* name : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b",
                           "deepseek-v2"}) {
    const ModelSpec m = load_model(name);
    const KvCacheSize s = kv_cache_size(m, KvQuery{r.batch, r.ctx, r.dtype, {}});
    const std::string per_layer = s.layout.mla ? fmt::format("d_c + d_r = {} + {}", s.layout.latent_dim, s.layout.rope_dim)
                                               : fmt::format("2 · {} · {}", s.layout.kv_heads, s.layout.head_dim);
    c.table.rows.push_back({m.name, attention_kind(m, s.layout.kv_heads), count(m.n_layer), per_layer,
                            count(s.elements_per_token), s.bytes_per_token, count(s.total_bytes),
                            gb(static_cast<double>(s.total_bytes)), gib(s.total_bytes)});
  }
  if (is_default(p)) {
    const std::uint64_t ds = cache_bytes(load_model("deepseek-v2"), 1, kDocCtx, CacheDtype::fp16);
    const std::uint64_t l3 = cache_bytes(load_model("llama-3-70b"), 1, kDocCtx, CacheDtype::fp16);
    c.notes.push_back(fmt::format("000 §2.2 writes deepseek-v2 as 60·4096·576·2 ≈ 0.27 GB: the product is {} B = "
                                  "{:.3f} GB = {:.3f} GiB (E2).", format_number(ds), gb(ds), gib(ds)));
    c.notes.push_back(fmt::format("000 §0 and §2.3 give llama-3-70b as 1.25 GB/sample: {} B = {:.4g} GiB = {:.4g} GB, "
                                  "the \"GB\" is GiB (E3).", format_number(l3), gib(l3), gb(l3)));
  }
  return c;
}

/// 000 §4.1: the KV-cache optimisation routes (body missing), each with its bytes per token.
CheatTable t_000_4_1(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::fp16);
  const ModelSpec base = load_model("llama-3-70b");
  const ModelSpec dsv2 = load_model("deepseek-v2");
  const std::uint64_t window = *load_model("mistral-7b").sliding_window;
  CheatTable c{"000-4.1", "000 §4.1",
               fmt::format("the 70B shape of llama-3-70b (L {}, {} query heads of {}), ctx {}, batch {}, {} cache; "
                           "window {} (mistral-7b); int4 with G = {}", base.n_layer, base.n_head, base.head_dim,
                           r.ctx, r.batch, cache_dtype_name(r.dtype), window, kQuantGroup), {}, {}};
  c.table = {"KV-cache optimisation routes on one 70B shape",
             {"route", "what it shrinks", "bytes/token", "GiB (batch × ctx)", "× smaller than MHA", "paper"}, {}};
  const auto per_token = [&](const ModelSpec& m, std::optional<std::uint64_t> heads = std::nullopt) {
    return kv_cache_size(m, KvQuery{1, 1, r.dtype, heads}).bytes_per_token;
  };
  const double mha = per_token(base, base.n_head);
  const std::uint64_t tokens = checked_mul(r.batch, r.ctx, "--batch × --ctx");
  const auto row = [&](const std::string& route, const std::string& what, double bpt, double cached_tokens,
                       const std::string& paper) {
    c.table.rows.push_back({route, what, bpt, bpt * cached_tokens / kGiB, mha / bpt, paper});
  };
  const double t = static_cast<double>(tokens);
  row("MHA (baseline)", "—", mha, t, "Vaswani et al. 2017, arXiv:1706.03762");
  row("MQA", "heads: 1 K/V head", per_token(base, 1), t, "Shazeer 2019, arXiv:1911.02150");
  row(fmt::format("GQA-{}", base.n_kv_head), fmt::format("heads: {} K/V heads", base.n_kv_head), per_token(base), t,
      "Ainslie et al. 2023, arXiv:2305.13245");
  row("MLA", fmt::format("width: latent d_c + d_r = {} + {}", *dsv2.kv_lora_rank, *dsv2.qk_rope_head_dim),
      per_token(mla_shaped(base, dsv2)), t, "DeepSeek-AI 2024 (DeepSeek-V2), arXiv:2405.04434");
  row(fmt::format("CLA-2 on GQA-{}", base.n_kv_head), "layers: 2 adjacent layers share one K/V",
      per_token(cla_shaped(base, 2)), t, "Brandon et al. 2024, arXiv:2405.12981");
  const double win_tokens = static_cast<double>(r.batch * std::min(r.ctx, window));
  row(fmt::format("sliding window on GQA-{}", base.n_kv_head), fmt::format("positions: at most W = {}", window),
      per_token(base), win_tokens, "Beltagy et al. 2020, arXiv:2004.05150; Mistral 7B, arXiv:2310.06825");
  const double int4_bits = quant_bits_per_element(KvQuantFormat::int4,
                                                  static_cast<int>(base.n_kv_head * base.head_dim));
  row(fmt::format("int4 (KIVI) on GQA-{}", base.n_kv_head),
      fmt::format("bits: {:.4g} per element with scales", int4_bits),
      per_token(base, std::nullopt) * int4_bits / static_cast<double>(cache_dtype_bits(r.dtype)), t,
      "Liu et al. 2024 (KIVI), arXiv:2402.02750");
  row(fmt::format("PagedAttention on GQA-{}", base.n_kv_head), "waste: blocks on demand, not bytes/token",
      per_token(base), t, "Kwon et al. 2023 (vLLM), arXiv:2309.06180");
  c.notes.push_back("Routes combine: the rows after MLA apply to the GQA model, so their ratio is the GQA-8 ratio "
                    "times their own. The sliding window saves only past W (ctx > W); PagedAttention does not "
                    "shrink a token's bytes but the memory reserved and never used (`kvlab fragmentation`).");
  c.notes.push_back("The int4 row's bits are measured on kvlab's real packed buffers (codes + fp16 scale and zero "
                    "per group, `kvlab kv-quant`), relative to the fp16 cache; with another --kv-dtype the row "
                    "scales that dtype's bytes by the same bits.");
  return c;
}

/// 000 §4.5: the KV quantization formats (body missing): bits per element with scales, ratio.
CheatTable t_000_4_5(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::fp16);
  const ModelSpec m = load_model("llama-3-70b");
  const int width = static_cast<int>(m.n_kv_head * m.head_dim);
  CheatTable c{"000-4.5", "000 §4.5",
               fmt::format("group size G = {} (K per channel over G positions, V per token over G channels, "
                           "KIVI's layout); cache of {} at ctx {}, batch {}", kQuantGroup, m.name, r.ctx, r.batch),
               {}, {}};
  c.table = {"KV quantization formats: bytes of the real packed buffers",
             {"format", "code bits", "fp16 params per group", "bits/element", "× smaller than fp16",
              "GiB (batch × ctx)", "scheme / paper"}, {}};
  const double fp16_bytes = static_cast<double>(cache_bytes(m, r.batch, r.ctx, CacheDtype::fp16));
  const std::map<KvQuantFormat, const char*> paper{
      {KvQuantFormat::fp16, "baseline, 2 B per element"},
      {KvQuantFormat::int8, "asymmetric int8 (KIVI's layout at 8 bits)"},
      {KvQuantFormat::int4, "KIVI-4, Liu et al. 2024, arXiv:2402.02750"},
      {KvQuantFormat::int2, "KIVI-2, Liu et al. 2024, arXiv:2402.02750"},
      {KvQuantFormat::fp8_e4m3, "FP8 E4M3, Micikevicius et al. 2022, arXiv:2209.05433"},
      {KvQuantFormat::fp8_e5m2, "FP8 E5M2, Micikevicius et al. 2022, arXiv:2209.05433"}};
  for (KvQuantFormat f : all_kv_quant_formats()) {
    const double bits = quant_bits_per_element(f, width);
    c.table.rows.push_back({kv_quant_format_name(f), std::int64_t{kv_quant_code_bits(f)},
                            std::int64_t{kv_quant_params_per_group(f)}, bits, 16.0 / bits,
                            fp16_bytes * bits / 16.0 / kGiB, paper.at(f)});
  }
  c.notes.push_back(fmt::format("Bits per element = 8 × (codes + scales) / elements, counted on a QuantKVCache of "
                                "{} channels after 2G positions; ints add 32/G bits (scale + zero), fp8 16/G "
                                "(`kvlab kv-quant` judges these bytes against the layout's formula).", width));
  c.notes.push_back("KVQuant (Hooper et al. 2024, arXiv:2401.18079) quantizes keys per channel before RoPE with "
                    "non-uniform levels; kvlab implements the uniform KIVI and fp8 formats only.");
  return c;
}

/// 000 §8.1 (with §9.2's reported speedups): the speculative-decoding variants.
CheatTable t_000_8_1(const CheatsheetParams&) {
  CheatTable c{"000-8.1", "000 §8.1, §9.2",
               fmt::format("a chain of K = 1..{} drafts, each accepted with probability α, one draft forward "
                           "costing c = {} target forwards: speedup = E[τ] / (1 + K·c)", kSpecMaxK, kSpecCostRatio),
               {}, {}};
  c.table = {"speculative-decoding variants and the acceptance rate each speedup needs",
             {"variant", "drafter", "verification", "reported speedup", "α for 2×", "α for the reported low end",
              "K", "paper"}, {}};
  struct Variant {
    const char* name;
    const char* drafter;
    const char* verify;
    const char* reported;
    double low;  // the low end of the reported range (0: none reported)
    const char* paper;
  };
  const Variant variants[] = {
      {"vanilla SD", "separate small LM (68M for LLaMA-2-7B)", "rejection sampling (exact)", "1.6–2.2× (§9.2)", 1.6,
       "Leviathan et al. 2023, arXiv:2211.17192; Chen et al. 2023, arXiv:2302.01318"},
      {"Medusa-1 / -2", "N extra heads on the last hidden state", "typical acceptance, tree", "2.5–3.0× (-2, §9.2)",
       2.5, "Cai et al. 2024, arXiv:2401.10774"},
      {"EAGLE", "one layer on the target's features", "rejection sampling, static tree", "—", 0.0,
       "Li et al. 2024, arXiv:2401.15077"},
      {"EAGLE-2", "as EAGLE", "rejection sampling, dynamic tree", "3.0–3.5× (§9.2)", 3.0,
       "Li et al. 2024, arXiv:2406.16858"},
      {"EAGLE-3", "token prediction, multi-layer feature fusion", "rejection sampling, dynamic tree",
       "~4.0× (§9.2), 4–5× on Vicuna-7B (§8.3)", 4.0, "Li et al. 2025, arXiv:2503.01840"},
      {"Lookahead", "none: Jacobi iteration, n-gram pool", "n-gram verification branch", "1.8× MT-bench (§8.4)", 1.8,
       "Fu et al. 2024, arXiv:2402.02057"},
      {"TriForce", "small LM, then target with sparse KV", "target with full KV", "2–2.5× at 128K+ (§9.2)", 2.0,
       "Sun et al. 2024, arXiv:2404.11912"},
      {"MagicDec", "target with StreamingLLM-style sparse KV", "target with full KV", "2–2.5× at 128K+ (§9.2)", 2.0,
       "Sadhukhan et al. 2024, arXiv:2408.11049"},
      {"self-speculative", "the target's first L_d < L layers", "full target", "1.5–2× (§8.6)", 1.5,
       "Zhang et al. 2024, arXiv:2309.08168"}};
  const auto alpha_text = [](double s) -> std::pair<Cell, Cell> {
    const auto a = alpha_for_speedup(s, kSpecCostRatio, kSpecMaxK);
    if (!a) return {std::string("unreachable"), std::string("—")};
    return {a->alpha, std::int64_t{a->k}};
  };
  const Cell for2 = alpha_text(2.0).first;
  for (const Variant& v : variants) {
    const auto [alpha, k] = v.low > 0 ? alpha_text(v.low) : std::pair<Cell, Cell>{std::string("—"), std::string("—")};
    c.table.rows.push_back({v.name, v.drafter, v.verify, v.reported, for2, alpha, k, v.paper});
  }
  c.notes.push_back(fmt::format("α: the smallest per-token acceptance rate at which some K ≤ {} gives the speedup, "
                                "from E[τ] = (1 − α^(K+1)) / (1 − α) (`kvlab spec-etau`). Tree drafts (Medusa, "
                                "EAGLE-2/3, Lookahead) reach a speedup with a lower per-token α than a chain: their α "
                                "here is the chain's equivalent. The reported figures are the papers' GPU "
                                "measurements, quoted by the document, not computed.", kSpecMaxK));
  return c;
}

/// 000 §9.1: the 70B-class summary across MHA/GQA/MQA/MLA and cache dtypes (body missing).
CheatTable t_000_9_1(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::fp16);
  const ModelSpec base = load_model("llama-2-70b");
  const ModelSpec dsv2 = load_model("deepseek-v2");
  CheatTable c{"000-9.1", "000 §9.1",
               fmt::format("LLaMA-2/3-70B shape: L {}, d_head {}, MHA H = {}; ctx {}, batch {}; MLA-shaped = "
                           "DeepSeek-V2's d_c + d_r on {} layers", base.n_layer, base.head_dim, base.n_head, r.ctx,
                           r.batch, base.n_layer), {}, {}};
  c.table = {"KV cache of a 70B-class model (GiB per batch × ctx)",
             {"attention", "elements/token/layer", "bytes/token fp16", "fp16", "fp8/int8", "int4", "× smaller than MHA"},
             {}};
  struct Variant {
    std::string label;
    ModelSpec m;
    std::optional<std::uint64_t> heads;
  };
  const std::vector<Variant> variants{{"MHA (H = 64)", base, base.n_head},
                                      {fmt::format("GQA-{}", base.n_kv_head), base, std::nullopt},
                                      {"MQA", base, std::uint64_t{1}},
                                      {"MLA-shaped", mla_shaped(base, dsv2), std::nullopt}};
  const double mha = kv_cache_size(base, KvQuery{1, 1, CacheDtype::fp16, base.n_head}).bytes_per_token;
  for (const auto& v : variants) {
    const KvCacheSize s = kv_cache_size(v.m, KvQuery{1, 1, CacheDtype::fp16, v.heads});
    c.table.rows.push_back({v.label, count(s.layout.elements_per_layer), s.bytes_per_token,
                            gib(cache_bytes(v.m, r.batch, r.ctx, CacheDtype::fp16, v.heads)),
                            gib(cache_bytes(v.m, r.batch, r.ctx, CacheDtype::fp8, v.heads)),
                            gib(cache_bytes(v.m, r.batch, r.ctx, CacheDtype::int4, v.heads)),
                            mha / s.bytes_per_token});
  }
  c.notes.push_back("Elements only: int8/int4 scales and zero points add 32/G bits per element (000 §4.5 table).");
  return c;
}

/// 000 §9.2: expected speculative throughput, tokens/s_SD = tokens/s_baseline · E[τ] / (1 + K·c).
CheatTable t_000_9_2(const CheatsheetParams& p) {
  const Setup r = setup_of(p, 1024, 1, CacheDtype::bf16);
  const ModelSpec m = load_model(premises::kModel7b);
  const DecodeStep base = decode_step(m, r.gpu, DecodeQuery{kCourseParams7b, kBytesPerParam,
                                                           KvQuery{r.batch, r.ctx, r.dtype, {}}, {}});
  CheatTable c{"000-9.2", "000 §9.2",
               fmt::format("target {} (N = {}, bf16 weights) on {}, batch {}, ctx {}, {} cache: baseline "
                           "{:.4g} tok/s (roofline bound, `kvlab roofline`); c = {}", m.name,
                           format_number(kCourseParams7b),
                           r.gpu.name, r.batch, r.ctx, cache_dtype_name(r.dtype), base.tokens_per_s, kSpecCostRatio),
               {}, {}};
  c.table = {"expected speculative throughput",
             {"α", "K", "E[τ] tokens/step", "speedup E[τ]/(1+Kc)", "tokens/s"}, {}};
  for (double alpha : {0.5, 0.6, 0.7, 0.8, 0.9})
    for (int k : {2, 4, 8}) {
      const double s = spec::speedup(alpha, k, kSpecCostRatio);
      c.table.rows.push_back({alpha, std::int64_t{k}, spec::expected_tokens(alpha, k), s, base.tokens_per_s * s});
    }
  c.notes.push_back(fmt::format("The document's 68M draft for LLaMA-2-7B would give c ≈ 68e6 / {} = {:.3g} by weights "
                                "read; c = {} leaves room for the draft's own overheads. The papers' measured speedups "
                                "are in the 000 §8.1 table.", format_number(kCourseParams7b),
                                68e6 / kCourseParams7b, kSpecCostRatio));
  return c;
}

/// 000 §9.3 (with §2.3): the budget of a 70B + 4K + GQA deployment, alone and with a draft.
CheatTable t_000_9_3(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::fp16);
  const ModelSpec m = load_model("llama-3-70b");
  // EAGLE's head for this target: one decoder layer of its shape plus the 2d → d fusion (E11).
  const double d = static_cast<double>(m.d_model), kv = static_cast<double>(m.n_kv_head * m.head_dim);
  const double eagle_params = 2.0 * d * d + 2.0 * d * kv + 3.0 * d * static_cast<double>(*m.intermediate_size) +
                              2.0 * d * d;
  CheatTable c{"000-9.3", "000 §9.3, §2.3",
               fmt::format("{} × {}, {} with N = {} fp16 weights, ctx {} per sequence, {} cache; KV budget = "
                           "the document's 400 GB less the draft, or all memory left", kDeploymentGpus, r.gpu.name,
                           m.name, format_number(kCourseParams70b), r.ctx, cache_dtype_name(r.dtype)), {}, {}};
  c.table = {"budget of a 70B + GQA deployment",
             {"deployment", "weights + draft GB", "memory left GB", "KV per sequence GB", "max batch (400 GB − draft)",
              "max batch (all left)"}, {}};
  struct Row {
    const char* label;
    double draft_params;
  };
  for (const Row& row : {Row{"70B alone", 0.0}, Row{"+ vanilla SD draft, 7B fp16", kDraft7bParams},
                         Row{"+ EAGLE head (1 layer + fusion)", eagle_params}}) {
    const double n = kCourseParams70b + row.draft_params;
    try {
      const BatchCapacity all = batch_capacity(m, r.gpu, kDeploymentGpus, n, kBytesPerParam, r.ctx, r.dtype);
      const double budget = std::min(kDocKvBudgetBytes - row.draft_params * kBytesPerParam, all.left_bytes);
      const BatchCapacity doc = batch_capacity(m, r.gpu, kDeploymentGpus, n, kBytesPerParam, r.ctx, r.dtype, budget);
      c.table.rows.push_back({row.label, gb(all.weight_bytes), gb(all.left_bytes),
                              gb(static_cast<double>(all.kv_bytes_per_sequence)), count(doc.max_batch),
                              count(all.max_batch)});
    } catch (const InputError&) {  // the weights do not fit on this GPU
      c.table.rows.push_back({row.label, gb(n * kBytesPerParam), std::string("weights do not fit"), std::string("—"),
                              std::string("—"), std::string("—")});
    }
  }
  c.notes.push_back(fmt::format("vanilla SD adds {} × 2 B = {:.4g} GB = {:.4g} GiB (000 §9.3: +14 GB ✓).",
                                format_number(kDraft7bParams), gb(kDraft7bParams * 2), kDraft7bParams * 2 / kGiB));
  c.notes.push_back(fmt::format("EAGLE's head: 2d² + 2d·{} + 3d·{} + 2d·d = {} parameters = {:.3g} GB fp16 for "
                                "d = {}; 000 §9.3 says ~200 MB (E11).", kv, *m.intermediate_size,
                                format_number(eagle_params), gb(eagle_params * 2), m.d_model));
  if (is_default(p)) {
    const std::uint64_t seq = cache_bytes(m, 1, kDocCtx, CacheDtype::fp16);
    c.notes.push_back(fmt::format("000 §2.3's 400 / 1.25 ≈ 320 divides GB by GiB: one sequence is {} B = {:.4g} GB, "
                                  "and 400 GB / {:.4g} GB = {:.0f} whole sequences (E3, E4).", format_number(seq),
                                  gb(seq), gb(seq), std::floor(kDocKvBudgetBytes / static_cast<double>(seq))));
  }
  return c;
}

// ---- 004 ---------------------------------------------------------------------------------------

/// 004 §1.1 (group 3): cumulative FLOPs of generating T tokens through one layer, d = 4096.
CheatTable t_004_g3(const CheatsheetParams&) {
  constexpr std::uint64_t d = 4096;
  CheatTable c{"004-g3", "004 §1.1 (group 3)",
               fmt::format("one layer, d = {}, MHA, MLP 4d, causal; FLOPs = 2 × multiply-adds (`kvlab cache-flops`)", d),
               {}, {}};
  c.table = {"cumulative FLOPs to generate T tokens, without and with a KV cache",
             {"T", "no cache (O(T²d² + T³d))", "KV cache (O(Td² + T²d))", "no cache / cache"}, {}};
  for (std::uint64_t t : {1, 16, 128, 512, 1024, 2048, 4096}) {
    const std::uint64_t n = naive_generation_flops(t, d), k = cached_generation_flops(t, d);
    c.table.rows.push_back({count(t), count(n), count(k), static_cast<double>(n) / static_cast<double>(k)});
  }
  return c;
}

/// 004 §1.4 (group 4): K+V bytes per token of four models in bf16.
CheatTable t_004_g4(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::bf16);
  CheatTable c{"004-g4", "004 §1.4 (group 4)",
               fmt::format("{} cache; the last column at ctx {}, batch {} (`kvlab kv-size`)", cache_dtype_name(r.dtype),
                           r.ctx, r.batch), {}, {}};
  c.table = {"K+V bytes per token",
             {"model", "attention", "L", "K/V heads", "head_dim", "bytes/token", "KiB/token", "GiB (batch × ctx)"}, {}};
  for (const char* name : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b"}) {
    const ModelSpec m = load_model(name);
    const KvCacheSize s = kv_cache_size(m, KvQuery{1, 1, r.dtype, {}});
    c.table.rows.push_back({m.name, attention_kind(m, s.layout.kv_heads), count(m.n_layer), count(s.layout.kv_heads),
                            count(s.layout.head_dim), s.bytes_per_token, s.bytes_per_token / kKiB,
                            gib(cache_bytes(m, r.batch, r.ctx, r.dtype))});
  }
  c.notes.push_back("004 §1.4: \"Llama 2 7B needs half a megabyte per token\" (0.5 MiB in bf16 ✓); the 70B's "
                    "per-token cache is smaller than the 7B's because of GQA ✓.");
  return c;
}

/// 004 §1.5 (group 5): the decode roofline of a 7B MHA model on an A100.
CheatTable t_004_g5(const CheatsheetParams& p) {
  const Setup r = setup_of(p, 1024, 1, CacheDtype::bf16);
  const ModelSpec m = load_model(premises::kModel7b);
  CheatTable c{"004-g5", "004 §1.5 (group 5)",
               fmt::format("{} as N = {} parameters, bf16 weights, {} cache, on {} (ridge {:.4g} FLOP/B); "
                           "the document's batch × ctx rows (`kvlab roofline`)", m.name, format_number(kCourseParams7b),
                           cache_dtype_name(r.dtype), r.gpu.name, ridge_flops_per_byte(r.gpu)), {}, {}};
  c.table = {"decode roofline, one step",
             {"batch", "ctx", "weights GiB", "KV GiB", "FLOP/B", "bound", "step ms", "tokens/s"}, {}};
  for (const auto& [b, ctx] : {std::pair<std::uint64_t, std::uint64_t>{1, 1024}, {8, 1024}, {64, 4096}}) {
    const DecodeStep s = decode_step(m, r.gpu, DecodeQuery{kCourseParams7b, kBytesPerParam,
                                                          KvQuery{b, ctx, r.dtype, {}}, {}});
    c.table.rows.push_back({count(b), count(ctx), s.weight_bytes / kGiB, gib(s.kv_bytes), s.intensity,
                            bound_name(s.bound), s.time_s * 1e3, s.tokens_per_s});
  }
  if (is_default(p))
    c.notes.push_back("004 §1.5 writes ≈ 140 tok/s and intensity ≈ 1 at batch 1, 892 tok/s at batch 8, 128 GiB of "
                      "KV vs 13 GiB of weights and 6.8 FLOP/B at batch 64 × 4096 (all ✓, judged by `kvlab roofline`).");
  return c;
}

/// 004 §2.3 (group 6): GQA from G = h (MHA) to G = 1 (MQA) on one model.
CheatTable t_004_g6(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::bf16);
  const ModelSpec m = load_model(premises::kModel7b);
  CheatTable c{"004-g6", "004 §2.3 (group 6)",
               fmt::format("{} (h = {} query heads of {}), {} cache, ctx {}, batch {}", m.name, m.n_head, m.head_dim,
                           cache_dtype_name(r.dtype), r.ctx, r.batch), {}, {}};
  c.table = {"the GQA knob: G K/V groups of h/G query heads",
             {"G", "kind", "query heads per K/V head", "query head j reads K/V head", "bytes/token",
              "GiB (batch × ctx)", "× smaller than MHA"}, {}};
  const double mha = kv_cache_size(m, KvQuery{1, 1, r.dtype, m.n_head}).bytes_per_token;
  for (std::uint64_t g = m.n_head; g >= 1; g /= 2) {
    const double bpt = kv_cache_size(m, KvQuery{1, 1, r.dtype, g}).bytes_per_token;
    c.table.rows.push_back({count(g), attention_kind(m, g), count(m.n_head / g), fmt::format("⌊j / {}⌋", m.n_head / g),
                            bpt, gib(cache_bytes(m, r.batch, r.ctx, r.dtype, g)), mha / bpt});
    if (g == 1) break;
  }
  c.notes.push_back("At G = h GQA is MHA: the course's maximum output difference 0 is judged by `kvlab "
                    "gqa-equals-mha`; the mean-pooling control of group 6 by `kvlab gqa-meanpool`.");
  return c;
}

/// 004 §2.5: what GQA saves and what it does not (body missing).
CheatTable t_004_2_5(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::bf16);
  const ModelSpec m = load_model("llama-2-70b");
  const double n_gqa = static_cast<double>(*m.num_parameters);
  const double n_mha = params_with_kv_heads(m, n_gqa, m.n_head);
  const auto step = [&](double n, std::uint64_t heads) {
    return decode_step(m, r.gpu, DecodeQuery{n, kBytesPerParam, KvQuery{r.batch, r.ctx, r.dtype, heads}, {}});
  };
  const DecodeStep mha = step(n_mha, m.n_head), gqa = step(n_gqa, m.n_kv_head);
  // Linear-layer FLOPs per token and layer: 2 × (Q, O: 2·d·H·hd; K, V: 2·d·n_kv·hd; SwiGLU MLP: 3·d·ffn).
  const auto linear = [&](std::uint64_t heads) {
    const double d = static_cast<double>(m.d_model), hd = static_cast<double>(m.head_dim);
    return 2.0 * (2.0 * d * static_cast<double>(m.n_head) * hd + 2.0 * d * static_cast<double>(heads) * hd +
                  3.0 * d * static_cast<double>(*m.intermediate_size));
  };
  CheatTable c{"004-2.5", "004 §2.5",
               fmt::format("{} with its own {} K/V heads vs its MHA variant ({} K/V heads, {} parameters instead "
                           "of {}); one decode step at batch {}, ctx {}, {} cache, bf16 weights, {}", m.name,
                           m.n_kv_head, m.n_head, format_number(n_mha), format_number(n_gqa), r.batch, r.ctx,
                           cache_dtype_name(r.dtype), r.gpu.name),
               {}, {}};
  c.table = {"what GQA saves and what it does not",
             {"quantity", "MHA", fmt::format("GQA-{}", m.n_kv_head), "MHA / GQA", "saved by GQA"}, {}};
  const auto row = [&](const std::string& q, double a, double b) {
    const double ratio = a / b;
    const std::string saved = ratio > 1.5 ? fmt::format("yes, {:.3g}×", ratio)
                              : ratio > 1.0 + 1e-12 ? fmt::format("a little, {:.1f}%", (1.0 - b / a) * 100.0)
                                                    : std::string("no");
    c.table.rows.push_back({q, a, b, ratio, saved});
  };
  row("KV cache, batch × ctx (GiB)", gib(mha.kv_bytes), gib(gqa.kv_bytes));
  row("KV bytes read per decode step (GiB)", gib(mha.kv_bytes), gib(gqa.kv_bytes));
  row("attention FLOPs per decode step (GFLOP)", mha.flops_attention / 1e9, gqa.flops_attention / 1e9);
  row("K/V projection parameters per layer (M)", 2.0 * static_cast<double>(m.d_model * m.n_head * m.head_dim) / 1e6,
      2.0 * static_cast<double>(m.d_model * m.n_kv_head * m.head_dim) / 1e6);
  row("linear-layer FLOPs per token and layer (GFLOP)", linear(m.n_head) / 1e9, linear(m.n_kv_head) / 1e9);
  row("bytes read per decode step (GB)", gb(mha.bytes), gb(gqa.bytes));
  row("decode step time, roofline (ms)", mha.time_s * 1e3, gqa.time_s * 1e3);
  c.notes.push_back("GQA saves capacity and memory traffic, not the attention-score FLOPs: every query head still "
                    "scores every cached key. The K/V projections do shrink (E24: with a 4d MLP, 24d² → 20.5d² "
                    "per token and layer at n_kv = h/8; with Llama's SwiGLU MLP the share is the row above).");
  return c;
}

/// 004 §3.3: the three mask cases when T queries meet S keys.
CheatTable t_004_3_3(const CheatsheetParams&) {
  constexpr int S = 8;
  CheatTable c{"004-3.3", "004 §3.3",
               fmt::format("S = {} keys; lower-right = ones(T, S).tril(diagonal = S − T), top-left = SDPA's "
                           "is_causal=True (tril, diagonal 0) (`kvlab causal-mask`)", S), {}, {}};
  c.table = {"mask cases with a KV cache",
             {"case", "T", "S", "diagonal S − T", "cells allowed (lower-right)", "cells allowed (top-left)",
              "cells top-left wrongly hides", "keys the first query sees (lower-right / top-left)",
              "mismatches vs absolute positions"}, {}};
  struct Case {
    const char* label;
    int t;
  };
  for (const Case& k : {Case{"prefill (T = S)", S}, Case{"decode (T = 1)", 1}, Case{"chunk / verify (1 < T < S)", 3}}) {
    const CausalMaskGrid lower = tril_mask(k.t, S, S - k.t), top = tril_mask(k.t, S, 0);
    const CausalMaskGrid pos = causal_mask_from_positions(k.t, S);
    std::int64_t lr = 0, tl = 0, mismatch = 0, first_lr = 0, first_tl = 0;
    for (int i = 0; i < k.t; ++i)
      for (int j = 0; j < S; ++j) {
        lr += lower.allowed(i, j);
        tl += top.allowed(i, j);
        mismatch += lower.allowed(i, j) != pos.allowed(i, j);
        if (i == 0) {
          first_lr += lower.allowed(i, j);
          first_tl += top.allowed(i, j);
        }
      }
    c.table.rows.push_back({k.label, std::int64_t{k.t}, std::int64_t{S}, std::int64_t{S - k.t}, lr, tl, lr - tl,
                            fmt::format("{} / {}", first_lr, first_tl), mismatch});
  }
  c.notes.push_back("Hidden cells = T·(S − T): none at T = S, all but one key at T = 1 (the trap of the second row).");
  return c;
}

// ---- 003 ---------------------------------------------------------------------------------------

/// 003 Q6: MHA / GQA / MQA compared (cache share, throughput, the catalogue's examples).
CheatTable t_003_q6(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 16, CacheDtype::bf16);
  const ModelSpec m = load_model("llama-2-70b");
  const double n_gqa = static_cast<double>(*m.num_parameters);
  CheatTable c{"003-Q6", "003 Q6",
               fmt::format("{} shape (h = {}) as MHA, GQA-{} and MQA; decode roofline on one {} at batch {}, ctx {}, "
                           "{} cache, bf16 weights; examples: every catalogue model of each kind", m.name, m.n_head,
                           m.n_kv_head, r.gpu.name, r.batch, r.ctx, cache_dtype_name(r.dtype)), {}, {}};
  c.table = {"MHA / GQA / MQA",
             {"attention", "K/V heads", "KV cache vs MHA", "the document says", "bytes/token",
              "decode tokens/s (roofline)", "the document says (throughput)", "catalogue examples",
              "the document's examples"}, {}};
  std::map<std::string, std::string> examples;  // "MHA" / "GQA" / "MQA" -> names
  for (const auto& name : model_names()) {
    const ModelSpec e = load_model(name);
    if (e.is_mla()) continue;
    std::string kind = attention_kind(e, e.n_kv_head);
    if (kind.rfind("GQA", 0) == 0) kind = "GQA";
    examples[kind] += (examples[kind].empty() ? "" : ", ") + name;
  }
  const double mha = kv_cache_size(m, KvQuery{1, 1, r.dtype, m.n_head}).bytes_per_token;
  struct Row {
    const char* label;
    std::uint64_t heads;
    const char* doc;
    const char* doc_throughput;
    const char* doc_examples;
  };
  for (const Row& row : {Row{"MHA", m.n_head, "100% (largest)", "low", "GPT-3, Llama 1"},
                         Row{"GQA", m.n_kv_head, "1/Groups", "high", "Llama 2 (70B), Llama 3"},
                         Row{"MQA", 1, "1/Heads (smallest)", "highest", "Falcon, PaLM"}}) {
    const double bpt = kv_cache_size(m, KvQuery{1, 1, r.dtype, row.heads}).bytes_per_token;
    const DecodeStep s = decode_step(m, r.gpu, DecodeQuery{params_with_kv_heads(m, n_gqa, row.heads), kBytesPerParam,
                                                          KvQuery{r.batch, r.ctx, r.dtype, row.heads}, {}});
    c.table.rows.push_back({row.label, count(row.heads), fmt::format("{}/{} = {:.4g}%", row.heads, m.n_head,
                                                                     100.0 * bpt / mha),
                            row.doc, bpt, s.tokens_per_s, row.doc_throughput, examples[row.label], row.doc_examples});
  }
  c.notes.push_back("GQA's cache is G/h of MHA's, not 1/G: the two coincide only when h = G² (here 64 = 8², so 8/64 = "
                    "1/8); llama-3-8b (h = 32, G = 8) keeps 8/32 = 1/4 (E15). Falcon-40B is GQA, only "
                    "Falcon-7B is MQA (E29).");
  c.notes.push_back("Expressiveness (best / good / worse) is not a number kvlab computes; the roofline throughput "
                    "ignores whether the cache fits in one GPU's memory.");
  return c;
}

/// 003 after Q7: GQA / MLA / CLA, each against the MHA of its own shape.
CheatTable t_003_q7(const CheatsheetParams& p) {
  const Setup r = setup_of(p, kDocCtx, 1, CacheDtype::bf16);
  const ModelSpec l3 = load_model("llama-3-70b");
  const ModelSpec dsv2 = load_model("deepseek-v2");
  CheatTable c{"003-Q7", "003 after Q7",
               fmt::format("{} cache; each technique against the MHA of its own model's shape; CLA-2 shares one K/V "
                           "over 2 adjacent layers of {}, as MHA and as its GQA-{}", cache_dtype_name(r.dtype), l3.name,
                           l3.n_kv_head), {}, {}};
  c.table = {"GQA / MLA / CLA",
             {"technique", "shares along", "model", "bytes/token", "MHA bytes/token", "× smaller than MHA",
              "the document says", "paper"}, {}};
  const auto bpt = [&](const ModelSpec& m, std::optional<std::uint64_t> heads = std::nullopt) {
    return kv_cache_size(m, KvQuery{1, 1, r.dtype, heads}).bytes_per_token;
  };
  const double l3_mha = bpt(l3, l3.n_head), ds_mha = bpt(mha_of_mla(dsv2));
  const auto row = [&](const std::string& tech, const char* axis, const std::string& model, double b, double mha,
                       const char* doc, const char* paper) {
    c.table.rows.push_back({tech, axis, model, b, mha, mha / b, doc, paper});
  };
  row("GQA", "heads", l3.name, bpt(l3), l3_mha, "high", "Ainslie et al. 2023, arXiv:2305.13245");
  row("MLA", "width (latent)", dsv2.name, bpt(dsv2), ds_mha, "very high", "DeepSeek-V2, arXiv:2405.04434");
  const ModelSpec cla = cla_shaped(l3, 2);
  row("CLA-2 alone", "layers", l3.name + " as MHA, CLA-2", bpt(cla, l3.n_head), l3_mha, "very high",
      "Brandon et al. 2024, arXiv:2405.12981");
  row(fmt::format("CLA-2 + GQA-{}", l3.n_kv_head), "layers and heads", l3.name + ", CLA-2", bpt(cla), l3_mha,
      "—", "Brandon et al. 2024, arXiv:2405.12981");
  c.notes.push_back(fmt::format("Sharing one K/V over s layers divides the cache by s: CLA-2 alone saves {:.3g}×, "
                                "less than GQA-{}'s {:.3g}×; its \"very high\" gain holds only stacked on GQA/MQA, as the "
                                "CLA paper uses it ({:.3g}× here on GQA) (E35).",
                                l3_mha / bpt(cla, l3.n_head), l3.n_kv_head,
                                l3_mha / bpt(l3), l3_mha / bpt(cla)));
  c.notes.push_back(fmt::format("deepseek-v2's MHA of its own shape: {} heads × {} for K and V (as `kvlab mla-cache`); "
                                "the ratio leaves out nothing MLA caches (d_r included) (E20).", dsv2.n_head,
                                dsv2.qk_nope_head_dim.value_or(0)));
  return c;
}

const std::vector<std::string> kAll{"--ctx", "--batch", "--kv-dtype"};

}  // namespace

std::optional<AlphaForSpeedup> alpha_for_speedup(double s, double c, int k_max) {
  if (!std::isfinite(s) || s < 1.0) throw InputError(fmt::format("speedup: must be a finite number >= 1 (got {})", s));
  if (!std::isfinite(c) || c < 0.0)
    throw InputError(fmt::format("c (draft/target cost ratio): must be finite and >= 0 (got {})", c));
  if (k_max < 1 || k_max > spec::kMaxDraftTokens)
    throw InputError(fmt::format("K: must be in [1, {}] (got {})", spec::kMaxDraftTokens, k_max));
  std::optional<AlphaForSpeedup> best;
  for (int k = 1; k <= k_max; ++k) {
    const double tokens = s * (1.0 + k * c);
    if (tokens > k + 1.0) continue;
    const double a = spec::alpha_for_expected_tokens(tokens, k);
    if (!best || a < best->alpha) best = AlphaForSpeedup{a, k};
  }
  return best;
}

const std::vector<CheatsheetEntry>& cheatsheet_entries() {
  static const std::vector<CheatsheetEntry> entries{
      {"000-2.2", "000 §2.2", "KV cache of specific models at 4K, fp16", kAll, t_000_2_2},
      {"000-4.1", "000 §4.1", "KV-cache optimisation routes, bytes per token and ratio to MHA", kAll, t_000_4_1},
      {"000-4.5", "000 §4.5", "KV quantization formats: bits per element with scales", {"--ctx", "--batch"}, t_000_4_5},
      {"000-8.1", "000 §8.1, §9.2", "speculative-decoding variants, the α each speedup needs", {}, t_000_8_1},
      {"000-9.1", "000 §9.1", "70B-class cache across MHA/GQA/MQA/MLA and cache dtypes", {"--ctx", "--batch"}, t_000_9_1},
      {"000-9.2", "000 §9.2", "expected speculative throughput from the decode roofline",
       {"--ctx", "--batch", "--kv-dtype", "--gpu"}, t_000_9_2},
      {"000-9.3", "000 §9.3, §2.3", "70B + GQA budget on 8 GPUs, alone and with a draft",
       {"--ctx", "--kv-dtype", "--gpu"}, t_000_9_3},
      {"004-g3", "004 §1.1 (group 3)", "cumulative generation FLOPs without and with a cache", {}, t_004_g3},
      {"004-g4", "004 §1.4 (group 4)", "K+V bytes per token of four models", kAll, t_004_g4},
      {"004-g5", "004 §1.5 (group 5)", "decode roofline of a 7B MHA model", {"--kv-dtype", "--gpu"}, t_004_g5},
      {"004-g6", "004 §2.3 (group 6)", "the GQA knob from G = h to G = 1", kAll, t_004_g6},
      {"004-2.5", "004 §2.5", "what GQA saves and what it does not",
       {"--ctx", "--batch", "--kv-dtype", "--gpu"}, t_004_2_5},
      {"004-3.3", "004 §3.3", "the three mask cases with a KV cache", {}, t_004_3_3},
      {"003-Q6", "003 Q6", "MHA / GQA / MQA compared", {"--ctx", "--batch", "--kv-dtype", "--gpu"}, t_003_q6},
      {"003-Q7", "003 after Q7", "GQA / MLA / CLA compared", {"--kv-dtype"}, t_003_q7},
  };
  return entries;
}

const CheatsheetEntry& cheatsheet_entry(const std::string& name) {
  std::string known;
  for (const auto& e : cheatsheet_entries()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw InputError(fmt::format("cheatsheet: no table named '{}' (known: {})", name, known));
}

std::vector<CheatTable> build_cheatsheet(const std::vector<std::string>& names, const CheatsheetParams& p) {
  if (p.ctx && (*p.ctx < 1 || *p.ctx > kMaxCheatsheetCtx))
    throw InputError(fmt::format("--ctx: must be an integer in [1, {}] (got {})", kMaxCheatsheetCtx, *p.ctx));
  if (p.batch && (*p.batch < 1 || *p.batch > kMaxCheatsheetBatch))
    throw InputError(fmt::format("--batch: must be an integer in [1, {}] (got {})", kMaxCheatsheetBatch, *p.batch));
  if (p.gpu) {
    const auto gpus = gpu_names();
    if (std::find(gpus.begin(), gpus.end(), *p.gpu) == gpus.end()) {
      std::string known;
      for (const auto& g : gpus) known += (known.empty() ? "" : ", ") + g;
      throw InputError(fmt::format("--gpu: unknown GPU '{}' (known: {})", *p.gpu, known));
    }
  }
  std::vector<const CheatsheetEntry*> chosen;
  if (names.empty())
    for (const auto& e : cheatsheet_entries()) chosen.push_back(&e);
  for (const auto& n : names) chosen.push_back(&cheatsheet_entry(n));
  std::vector<CheatTable> out;
  for (const CheatsheetEntry* e : chosen) {
    CheatTable t = e->build(p);
    const std::pair<const char*, bool> given[] = {
        {"--ctx", p.ctx.has_value()}, {"--batch", p.batch.has_value()},
        {"--kv-dtype", p.kv_dtype.has_value()}, {"--gpu", p.gpu.has_value()}};
    for (const auto& [opt, is_given] : given)
      if (is_given && std::find(e->overrides.begin(), e->overrides.end(), opt) == e->overrides.end())
        t.notes.push_back(fmt::format("{} does not apply to this table (its parameters are the document's).", opt));
    out.push_back(std::move(t));
  }
  return out;
}

void write_cheatsheet(std::ostream& out, const std::vector<CheatTable>& tables, Format f) {
  if (f == Format::json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& t : tables) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& row : t.table.rows) {
        nlohmann::json jr = nlohmann::json::array();
        for (const auto& cell : row) std::visit([&](const auto& x) { jr.push_back(x); }, cell);
        rows.push_back(std::move(jr));
      }
      all.push_back({{"name", t.name}, {"source", t.source}, {"assumptions", t.assumptions}, {"title", t.table.title},
                     {"columns", t.table.columns}, {"rows", std::move(rows)}, {"notes", t.notes}});
    }
    out << nlohmann::json{{"tables", std::move(all)}}.dump(2) << '\n';
    return;
  }
  if (f == Format::md)
    out << "# kvlab cheatsheet\n\nThe numeric tables of the course documents, computed by kvlab's library "
           "(the functions its checks use). Regenerate with `kvlab cheatsheet --format md > docs/cheatsheet.md`.\n\n";
  for (const auto& t : tables) {
    Table body = t.table;
    switch (f) {
      case Format::md:
        out << fmt::format("## {} — {}\n\n*Source:* {}. *Assumptions:* {}.\n\n", t.name, t.table.title, t.source,
                           t.assumptions);
        body.title.clear();
        write_table(out, body, f);
        for (std::size_t i = 0; i < t.notes.size(); ++i) out << fmt::format("{}. {}\n", i + 1, t.notes[i]);
        out << '\n';
        break;
      case Format::csv:
        out << fmt::format("# {}: {} ({})\n# assumptions: {}\n", t.name, t.table.title, t.source, t.assumptions);
        body.title.clear();
        write_table(out, body, f);
        for (const auto& n : t.notes) out << "# note: " << n << '\n';
        break;
      default:
        out << fmt::format("== {} — {} ({}) ==\nassumptions: {}\n", t.name, t.table.title, t.source, t.assumptions);
        body.title.clear();
        write_table(out, body, f);
        for (std::size_t i = 0; i < t.notes.size(); ++i) out << fmt::format("  [{}] {}\n", i + 1, t.notes[i]);
        out << '\n';
        break;
    }
  }
}

}  // namespace kvlab
