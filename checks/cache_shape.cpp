// cache-shape — 000 §A.2 sanity check [b]: the MQA/GQA/MHA (and MLA) cache shapes and sizes agree.
//
// Claim: "[b] MQA/GQA/MHA shape + cache size consistent": a cache holds K and V of shape
// [batch, n_kv, ctx, d_head] per layer (n_kv = H, G, 1), so bytes = 2·L·n_kv·d_head·batch·ctx·bytes
// (000 §2.1), and MLA holds c_KV [batch, ctx, d_c] + k_R [batch, ctx, d_r] per layer, no factor 2
// (000 §2.2). kvlab runs `batch` sequences of `ctx` tokens through mini-GPTs of one shape (MHA, GQA,
// MQA through MiniGPT and its PreallocCache; MLA through MlaGPT and its LatentCache, float32),
// reads the shapes and bytes off the caches' buffers and compares them with kvlab's formula
// (kv_cache_size) and with the tensor list (kv_cache_tensors) for the same shape as a ModelSpec.
// Expected: counts, exact (tolerance 0); MHA/GQA = H/G and MHA/MQA = H, ratios of exact counts.
//
//   kvlab cache-shape [--heads 16] [--head-dim 8] [--groups 2] [--layers 2] [--batch 2] [--ctx 24]
#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "checks/cache_shape.hpp"
#include "support/head_layout.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "model/mla.hpp"

namespace kvlab::checks::cache_shape {
namespace {

constexpr int kMaxHeads = 32;
constexpr int kMaxHeadDim = 32;
constexpr int kMaxLayers = 4;
constexpr int kMaxBatch = 8;
constexpr int kMaxCtx = 64;  // the learned position table of the mini-GPT (block_size)
// Largest D = H·d_head: 4 variants × batch × ctx tokens through 12·D² multiply-adds per token and
// layer stay under a second at D = 256 (4 layers, 8 × 64 tokens: 0.6 G per variant).
constexpr int kMaxWidth = 256;

constexpr const char* kNames[] = {"MHA", "GQA", "MQA", "MLA"};  // the order of CacheShapeMeasured::variants
constexpr const char* kMetricNames[] = {"mha", "gqa", "mqa", "mla"};

// DeepSeek-V2's ratios, d_c = 4·d_head and d_r = d_head / 2, with d_r rounded up to even (RoPE pairs).
int latent_dim(const CacheShapeOptions& o) { return 4 * o.head_dim; }
int rope_dim(const CacheShapeOptions& o) { return 2 * ((o.head_dim + 3) / 4); }

Expectation exact_row(std::string quantity, double expected, double measured, std::string unit,
                      std::string document = "") {
  return {.quantity = std::move(quantity), .source = "000 §A.2 [b]", .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count (or a ratio of exact counts): exact", .measured = measured,
          .document = std::move(document)};
}

std::vector<int> tokens_for(Rng& rng, int n, int vocab) {
  std::vector<int> t(static_cast<std::size_t>(n));
  for (int& x : t) x = static_cast<int>(rng.uniform() * vocab) % vocab;
  return t;
}

// Variant i's shape as the formula takes it (n_kv 0: MLA with d_c and d_r).
ModelSpec model_spec(const CacheShapeOptions& o, std::size_t i, int n_kv) {
  const bool mla = n_kv == 0;
  ModelSpec spec;
  spec.name = fmt::format("mini-{}", kNames[i]);
  spec.n_layer = static_cast<std::uint64_t>(o.layers);
  spec.d_model = static_cast<std::uint64_t>(o.heads * o.head_dim);
  spec.n_head = static_cast<std::uint64_t>(o.heads);
  spec.n_kv_head = static_cast<std::uint64_t>(mla ? o.heads : n_kv);
  spec.head_dim = static_cast<std::uint64_t>(o.head_dim);
  spec.vocab_size = 96;
  if (mla) {
    spec.kv_lora_rank = static_cast<std::uint64_t>(latent_dim(o));
    spec.qk_rope_head_dim = static_cast<std::uint64_t>(rope_dim(o));
  }
  return spec;
}

// Elements held per layer, Σ sequences: K (c_KV) and V (k_R).
struct Held {
  std::vector<std::uint64_t> first, second;
};

// Adds one sequence's layer l buffers `a`, `b` to `held` and `v`; layer 0 of sequence 0 gives the shape.
template <class View>
void count(const View& a, const View& b, int seq, int l, Held& held, CacheVariantMeasured& v) {
  held.first[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(a.size());
  held.second[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(b.size());
  v.bytes += static_cast<std::uint64_t>(a.size() + b.size()) * sizeof(float);
  if (seq == 0 && l == 0) v.rows = int(a.rows()), v.width = int(a.cols()), v.second_width = int(b.cols());
}

// Runs every prompt through the variant's float32 mini-GPT (MlaGPT for n_kv 0) and reads its caches.
Held read_caches(const CacheShapeOptions& o, std::uint64_t seed, const std::vector<std::vector<int>>& prompts,
                 CacheVariantMeasured& v) {
  const int L = o.layers, T = o.ctx;
  Held held{std::vector<std::uint64_t>(static_cast<std::size_t>(L), 0),
            std::vector<std::uint64_t>(static_cast<std::size_t>(L), 0)};
  if (v.n_kv == 0) {
    MlaConfig c;
    c.n_layer = L, c.d_model = o.heads * o.head_dim, c.n_head = o.heads, c.head_dim = o.head_dim,
    c.kv_lora_rank = latent_dim(o), c.rope_head_dim = rope_dim(o);
    const MlaGPT<float> model(c, seed);
    for (int b = 0; b < o.batch; ++b) {
      LatentCache<float> cache = model.make_cache(T);
      model.forward(prompts[static_cast<std::size_t>(b)], 0, cache, MlaPath::absorbed);
      for (int l = 0; l < L; ++l) count(cache.latents(l), cache.rope_keys(l), b, l, held, v);
    }
    return held;
  }
  ModelConfig c;
  c.n_layer = L, c.d_model = o.heads * o.head_dim, c.n_head = o.heads, c.n_kv_head = v.n_kv, c.head_dim = o.head_dim;
  const MiniGPT<float> model(c, seed);
  for (int b = 0; b < o.batch; ++b) {
    const std::unique_ptr<KVCache<float>> cache = model.make_cache(CacheKind::prealloc, T);
    model.forward(prompts[static_cast<std::size_t>(b)], 0, *cache);
    for (int l = 0; l < L; ++l) count(cache->keys(l), cache->values(l), b, l, held, v);
  }
  return held;
}

std::string formula_text(const CacheShapeOptions& o, int n_kv) {
  return n_kv == 0 ? fmt::format("L·(d_c + d_r)·batch·ctx·4 = {}·{}·{}·{}·4", o.layers, latent_dim(o) + rope_dim(o),
                                 o.batch, o.ctx)
                   : fmt::format("2·L·n_kv·d_head·batch·ctx·4 = 2·{}·{}·{}·{}·{}·4", o.layers, n_kv, o.head_dim,
                                 o.batch, o.ctx);
}

void present(const CacheShapeMeasured& m, Result& r) {
  const CacheShapeOptions& o = m.options;
  const int B = o.batch, T = o.ctx, d_c = latent_dim(o), d_r = rope_dim(o);
  Table shapes{fmt::format("cache tensors per layer, {} sequences × {} tokens, float32: measured vs formula", B, T),
               {"variant", "tensor", "shape (formula)", "measured [rows × width] × sequences", "bytes (measured)",
                "bytes (kv_cache_size)"},
               {}};
  for (std::size_t i = 0; i < m.variants.size(); ++i) {
    const CacheVariantMeasured& v = m.variants[i];
    const bool mla = v.n_kv == 0;
    shapes.rows.push_back({std::string(kNames[i]), std::string(mla ? "c_kv" : "K"),
                           mla ? fmt::format("[{}, {}, {}] d_c, and [{}, {}, {}] d_r", B, T, d_c, B, T, d_r)
                               : fmt::format("[{}, {}, {}, {}] = [batch, n_kv, ctx, d_head]", B, v.n_kv, T, o.head_dim),
                           fmt::format("[{} × {}] × {}", v.rows, v.width, B), static_cast<std::int64_t>(v.bytes),
                           static_cast<std::int64_t>(v.formula_bytes)});
    if (mla)
      shapes.rows.push_back({std::string(kNames[i]), std::string("k_rope"), std::string("(above)"),
                             fmt::format("[{} × {}] × {}", v.rows, v.second_width, B), std::string(""), std::string("")});
  }
  for (std::size_t i = 0; i < m.variants.size(); ++i)
    r.metric(fmt::format("{}_bytes", kMetricNames[i]), double(m.variants[i].bytes));
  r.tables.push_back(std::move(shapes));
  r.notes.push_back(fmt::format(
      "Mini-GPTs: D = {} (H = {} × d_head = {}), {} layers; GQA G = {}; MLA d_c = 4·d_head = {}, d_r = {} "
      "(DeepSeek-V2's ratios: d_head/2, rounded up to even). {} sequences of {} random tokens (seed {}), one cache each, float32 (4 B/element).",
      o.heads * o.head_dim, o.heads, o.head_dim, o.layers, o.groups, d_c, d_r, B, T, m.seed));
  r.notes.push_back("kvlab's caches store [ctx, n_kv·d_head] per sequence and layer (row t = position t, head-major): "
                    "the same elements as the formula's [batch, n_kv, ctx, d_head], in another order.");
}

}  // namespace

CacheShapeMeasured measure_cache_shape(const CacheShapeOptions& o, const RunContext& ctx,
                                       const CacheShapeParts& parts) {
  const KvSizeFormula formula = parts.formula ? parts.formula : KvSizeFormula(kv_cache_size);
  Rng rng(ctx.seed);
  std::vector<std::vector<int>> prompts;
  for (int b = 0; b < o.batch; ++b) prompts.push_back(tokens_for(rng, o.ctx, 96));
  const KvQuery query{.batch = static_cast<std::uint64_t>(o.batch), .ctx = static_cast<std::uint64_t>(o.ctx),
                      .dtype = CacheDtype::fp32};
  CacheShapeMeasured m{.options = o, .seed = ctx.seed};
  const int n_kv[] = {o.heads, o.groups, 1, 0};
  for (std::size_t i = 0; i < std::size(n_kv); ++i) {
    CacheVariantMeasured v{.n_kv = n_kv[i]};
    const Held held = read_caches(o, ctx.seed, prompts, v);
    const ModelSpec spec = model_spec(o, i, n_kv[i]);
    v.formula_bytes = formula(spec, query).total_bytes;
    // Per layer: the formula's two tensors against the two buffers read off the caches.
    for (const KvTensor& t : kv_cache_tensors(spec, query)) {
      std::uint64_t n = 1;
      for (std::uint64_t s : t.shape) n *= s;
      const auto& got = t.name == "K" || t.name == "c_kv" ? held.first : held.second;
      const double measured = t.layer < got.size() ? double(got[t.layer]) : 0.0;
      v.worst_tensor_diff = std::max(v.worst_tensor_diff, std::abs(measured - double(n)));
    }
    m.variants.push_back(v);
  }
  return m;
}

std::vector<Expectation> judge_cache_shape(const CacheShapeMeasured& m) {
  const CacheShapeOptions& o = m.options;
  std::vector<Expectation> rows;
  for (std::size_t i = 0; i < m.variants.size(); ++i) {
    const CacheVariantMeasured& v = m.variants[i];
    const bool mla = v.n_kv == 0;
    rows.push_back(exact_row(fmt::format("{}: bytes held, read off the caches vs {}", kNames[i], formula_text(o, v.n_kv)),
                             double(v.formula_bytes), double(v.bytes), "B", "[b] MQA/GQA/MHA shape + cache 大小一致"));
    rows.push_back(exact_row(fmt::format("{}: largest |elements held − formula tensor {}| over {} layers × {} tensors",
                                         kNames[i], mla ? "[batch, ctx, width]" : "[batch, n_kv, ctx, d_head]",
                                         o.layers, 2),
                             0, v.worst_tensor_diff, "elements"));
    rows.push_back(exact_row(fmt::format("{}: width of one token's {} in a layer (n_kv·d_head{})", kNames[i],
                                         mla ? "c_KV + k_R" : "K", mla ? "; MLA: d_c + d_r" : ""),
                             mla ? double(latent_dim(o) + rope_dim(o)) : double(v.n_kv) * o.head_dim,
                             mla ? double(v.width + v.second_width) : double(v.width), "elements"));
  }
  const auto bytes = [&](std::size_t i) { return i < m.variants.size() ? double(m.variants[i].bytes) : 0.0; };
  rows.push_back(exact_row(fmt::format("MHA / GQA cache bytes (= H/G = {})", o.heads / o.groups),
                           double(o.heads) / o.groups, bytes(0) / bytes(1), "×",
                           "H = 64, G = 8 ⇒ KV cache 缩小 8× (000 §4.2)"));
  rows.push_back(exact_row(fmt::format("MHA / MQA cache bytes (= H = {})", o.heads), double(o.heads),
                           bytes(0) / bytes(2), "×"));
  return rows;
}

const CheckDef<CacheShapeOptions, CacheShapeMeasured>& cache_shape_check() {
  static const CheckDef<CacheShapeOptions, CacheShapeMeasured> def{
      .spec = {.name = "cache-shape",
               .order = 45,
               .source = "000 §A.2 [b]; 000 §2.1, §2.2, §4.2",
               .summary = "MHA/GQA/MQA/MLA cache shapes and bytes on real buffers = formula",
               .claim_zh = "KV Cache 张量的形状与字节数与公式一致",
               .description =
                   "Runs batch sequences through mini-GPTs of one shape as MHA, GQA, MQA (PreallocCache) and\n"
                   "MLA (LatentCache), reads each cache's tensor shapes and bytes off its buffers, and compares\n"
                   "them with kvlab's KV-size formula and tensor list for the same shape.",
               .derivation =
                   "Per layer and token a cache keeps one K and one V row per K/V head: 2·n_kv·d_head elements,\n"
                   "n_kv = H (MHA), G (GQA), 1 (MQA). Over L layers, batch sequences and ctx tokens:\n"
                   "  bytes = 2·L·n_kv·d_head·batch·ctx·bytes_per_element   (K, V: [batch, n_kv, ctx, d_head]).\n"
                   "MLA keeps the latent c_KV (d_c) and the shared RoPE key k_R (d_r) instead, no factor 2:\n"
                   "  bytes = L·(d_c + d_r)·batch·ctx·bytes_per_element.\n"
                   "So MHA / GQA = H/G and MHA / MQA = H, whatever L, batch and ctx are.\n"
                   "Source: 000 §A.2 [b]; 000 §2.1, §2.2, §4.2.",
               .claim = "MHA/GQA/MQA caches hold K and V of shape [batch, n_kv, ctx, d_head] per layer and MLA c_KV "
                        "+ k_R; the bytes on real buffers equal the KV-size formula."},
      .options = {{"--heads", &CacheShapeOptions::heads, Allowed::integers(1, kMaxHeads), "H, query heads (D = H·d_head)"},
                  {"--head-dim", &CacheShapeOptions::head_dim, Allowed::integers(1, kMaxHeadDim), "d_head"},
                  {"--groups", &CacheShapeOptions::groups, Allowed::integers(1, kMaxHeads),
                   "G, K/V heads of the GQA variant (divides H)"},
                  {"--layers", &CacheShapeOptions::layers, Allowed::integers(1, kMaxLayers), "blocks per mini-GPT"},
                  {"--batch", &CacheShapeOptions::batch, Allowed::integers(1, kMaxBatch), "sequences, one cache each"},
                  {"--ctx", &CacheShapeOptions::ctx, Allowed::integers(1, kMaxCtx), "tokens per sequence"}},
      .constraints = [](const CacheShapeOptions& o) { require_head_layout(o.heads, o.head_dim, o.groups, kMaxWidth); },
      .measure = [](const CacheShapeOptions& o, const RunContext& ctx) { return measure_cache_shape(o, ctx); },
      .judge = judge_cache_shape,
      .present = present};
  return def;
}

Result run_cache_shape(const CacheShapeOptions& o, const RunContext& ctx, const CacheShapeParts& parts) {
  return run_check(cache_shape_check(), o, ctx, [&parts](const CacheShapeOptions& opts, const RunContext& c) {
    return measure_cache_shape(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(cache_shape_check);

}  // namespace kvlab::checks::cache_shape
