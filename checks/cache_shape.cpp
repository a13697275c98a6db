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
#include <cmath>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "checks/cache_shape.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "model/mla.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

constexpr int kMaxHeads = 32;
constexpr int kMaxHeadDim = 32;
constexpr int kMaxLayers = 4;
constexpr int kMaxBatch = 8;
constexpr int kMaxCtx = 64;  // the learned position table of the mini-GPT (block_size)
// Largest D = H·d_head: 4 variants × batch × ctx tokens through 12·D² multiply-adds per token and
// layer stay under a second at D = 256 (4 layers, 8 × 64 tokens: 0.6 G per variant).
constexpr int kMaxWidth = 256;

Expectation exact_row(std::string quantity, double expected, double measured, std::string unit,
                      std::string document = "") {
  return {.quantity = std::move(quantity), .source = "000 §A.2 [b]", .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count (or a ratio of exact counts): exact", .measured = measured,
          .document = std::move(document)};
}

/// What was read off one variant's caches.
struct Measured {
  std::uint64_t bytes = 0;                ///< Σ sequences, layers: elements held · sizeof(float)
  std::vector<std::uint64_t> first_elems;  ///< per layer, Σ sequences: K (or c_KV) elements
  std::vector<std::uint64_t> second_elems; ///< per layer, Σ sequences: V (or k_R) elements
  int rows = 0, width = 0, second_width = 0;  ///< rows and widths of layer 0's buffers, sequence 0
};

std::vector<int> tokens_for(Rng& rng, int n, int vocab) {
  std::vector<int> t(static_cast<std::size_t>(n));
  for (int& x : t) x = static_cast<int>(rng.uniform() * vocab) % vocab;
  return t;
}

}  // namespace

Result run_cache_shape(const CacheShapeOptions& o, const RunContext& ctx, const CacheShapeParts& parts) {
  require_range("--heads", o.heads, 1, kMaxHeads);
  require_range("--head-dim", o.head_dim, 1, kMaxHeadDim);
  require_range("--groups", o.groups, 1, o.heads);
  if (o.heads % o.groups != 0)
    throw InputError(fmt::format("--groups: must divide --heads ({}), got {}", o.heads, o.groups));
  if (o.heads * o.head_dim > kMaxWidth)
    throw InputError(fmt::format("--heads × --head-dim: D = H·d_head must be at most {}, got {}", kMaxWidth,
                                 o.heads * o.head_dim));
  require_range("--layers", o.layers, 1, kMaxLayers);
  require_range("--batch", o.batch, 1, kMaxBatch);
  require_range("--ctx", o.ctx, 1, kMaxCtx);
  const KvSizeFormula formula = parts.formula ? parts.formula : KvSizeFormula(kv_cache_size);
  const int H = o.heads, dh = o.head_dim, D = H * dh, L = o.layers, B = o.batch, T = o.ctx;
  // DeepSeek-V2's ratios, d_c = 4·d_head and d_r = d_head / 2, with d_r rounded up to even (RoPE pairs).
  const int d_c = 4 * dh, d_r = 2 * ((dh + 3) / 4);
  Rng rng(ctx.seed);
  std::vector<std::vector<int>> prompts;
  for (int b = 0; b < B; ++b) prompts.push_back(tokens_for(rng, T, 96));

  struct Variant {
    std::string name;
    int n_kv;  // 0: MLA
  };
  const std::vector<Variant> variants = {{"MHA", H}, {"GQA", o.groups}, {"MQA", 1}, {"MLA", 0}};
  Result r;
  Table shapes{fmt::format("cache tensors per layer, {} sequences × {} tokens, float32: measured vs formula", B, T),
               {"variant", "tensor", "shape (formula)", "measured [rows × width] × sequences", "bytes (measured)",
                "bytes (kv_cache_size)"},
               {}};
  double bytes_of[4] = {0, 0, 0, 0};
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& v = variants[vi];
    const bool mla = v.n_kv == 0;
    Measured m;
    m.first_elems.assign(static_cast<std::size_t>(L), 0);
    m.second_elems.assign(static_cast<std::size_t>(L), 0);
    ModelSpec spec;
    spec.name = fmt::format("mini-{}", v.name);
    spec.n_layer = static_cast<std::uint64_t>(L);
    spec.d_model = static_cast<std::uint64_t>(D);
    spec.n_head = static_cast<std::uint64_t>(H);
    spec.n_kv_head = static_cast<std::uint64_t>(mla ? H : v.n_kv);
    spec.head_dim = static_cast<std::uint64_t>(dh);
    spec.vocab_size = 96;
    if (mla) {
      spec.kv_lora_rank = static_cast<std::uint64_t>(d_c);
      spec.qk_rope_head_dim = static_cast<std::uint64_t>(d_r);
      MlaConfig c;
      c.n_layer = L, c.d_model = D, c.n_head = H, c.head_dim = dh, c.kv_lora_rank = d_c, c.rope_head_dim = d_r;
      const MlaGPT<float> model(c, ctx.seed);
      for (int b = 0; b < B; ++b) {
        LatentCache<float> cache = model.make_cache(T);
        model.forward(prompts[static_cast<std::size_t>(b)], 0, cache, MlaPath::absorbed);
        for (int l = 0; l < L; ++l) {
          const auto c_kv = cache.latents(l), k_r = cache.rope_keys(l);
          m.first_elems[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(c_kv.size());
          m.second_elems[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(k_r.size());
          m.bytes += static_cast<std::uint64_t>(c_kv.size() + k_r.size()) * sizeof(float);
          if (b == 0 && l == 0) m.rows = int(c_kv.rows()), m.width = int(c_kv.cols()), m.second_width = int(k_r.cols());
        }
      }
    } else {
      ModelConfig c;
      c.n_layer = L, c.d_model = D, c.n_head = H, c.n_kv_head = v.n_kv, c.head_dim = dh;
      const MiniGPT<float> model(c, ctx.seed);
      for (int b = 0; b < B; ++b) {
        const std::unique_ptr<KVCache<float>> cache = model.make_cache(CacheKind::prealloc, T);
        model.forward(prompts[static_cast<std::size_t>(b)], 0, *cache);
        for (int l = 0; l < L; ++l) {
          const auto k = cache->keys(l), val = cache->values(l);
          m.first_elems[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(k.size());
          m.second_elems[static_cast<std::size_t>(l)] += static_cast<std::uint64_t>(val.size());
          m.bytes += static_cast<std::uint64_t>(k.size() + val.size()) * sizeof(float);
          if (b == 0 && l == 0) m.rows = int(k.rows()), m.width = int(k.cols()), m.second_width = int(val.cols());
        }
      }
    }
    const KvQuery query{.batch = static_cast<std::uint64_t>(B), .ctx = static_cast<std::uint64_t>(T),
                        .dtype = CacheDtype::fp32};
    const KvCacheSize size = formula(spec, query);
    const std::vector<KvTensor> tensors = kv_cache_tensors(spec, query);
    // Per layer: the formula's two tensors against the two buffers read off the caches.
    double worst = 0;
    for (const KvTensor& t : tensors) {
      std::uint64_t n = 1;
      for (std::uint64_t s : t.shape) n *= s;
      const bool first = t.name == "K" || t.name == "c_kv";
      const auto& got = first ? m.first_elems : m.second_elems;
      const double measured = t.layer < got.size() ? double(got[t.layer]) : 0.0;
      worst = std::max(worst, std::abs(measured - double(n)));
    }
    const std::string shape_text =
        mla ? fmt::format("[{}, {}, {}] d_c, and [{}, {}, {}] d_r", B, T, d_c, B, T, d_r)
            : fmt::format("[{}, {}, {}, {}] = [batch, n_kv, ctx, d_head]", B, v.n_kv, T, dh);
    const std::string formula_text =
        mla ? fmt::format("L·(d_c + d_r)·batch·ctx·4 = {}·{}·{}·{}·4", L, d_c + d_r, B, T)
            : fmt::format("2·L·n_kv·d_head·batch·ctx·4 = 2·{}·{}·{}·{}·{}·4", L, v.n_kv, dh, B, T);
    r.expect(exact_row(fmt::format("{}: bytes held, read off the caches vs {}", v.name, formula_text),
                       double(size.total_bytes), double(m.bytes), "B",
                       "[b] MQA/GQA/MHA shape + cache 大小一致"));
    r.expect(exact_row(fmt::format("{}: largest |elements held − formula tensor {}| over {} layers × {} tensors",
                                   v.name, mla ? "[batch, ctx, width]" : "[batch, n_kv, ctx, d_head]", L, 2),
                       0, worst, "elements"));
    r.expect(exact_row(fmt::format("{}: width of one token's {} in a layer (n_kv·d_head{})", v.name,
                                   mla ? "c_KV + k_R" : "K", mla ? "; MLA: d_c + d_r" : ""),
                       mla ? double(d_c + d_r) : double(v.n_kv) * dh,
                       mla ? double(m.width + m.second_width) : double(m.width), "elements"));
    bytes_of[vi] = double(m.bytes);
    shapes.rows.push_back({v.name, std::string(mla ? "c_kv" : "K"), shape_text,
                           fmt::format("[{} × {}] × {}", m.rows, m.width, B), static_cast<std::int64_t>(m.bytes),
                           static_cast<std::int64_t>(size.total_bytes)});
    if (mla)
      shapes.rows.push_back({v.name, std::string("k_rope"), std::string("(above)"),
                             fmt::format("[{} × {}] × {}", m.rows, m.second_width, B), std::string(""), std::string("")});
  }
  r.expect(exact_row(fmt::format("MHA / GQA cache bytes (= H/G = {})", H / o.groups), double(H) / o.groups,
                     bytes_of[0] / bytes_of[1], "×", "H = 64, G = 8 ⇒ KV cache 缩小 8× (000 §4.2)"));
  r.expect(exact_row(fmt::format("MHA / MQA cache bytes (= H = {})", H), double(H), bytes_of[0] / bytes_of[2], "×"));
  r.metric("mha_bytes", bytes_of[0]);
  r.metric("gqa_bytes", bytes_of[1]);
  r.metric("mqa_bytes", bytes_of[2]);
  r.metric("mla_bytes", bytes_of[3]);
  r.tables.push_back(std::move(shapes));
  r.notes.push_back(fmt::format(
      "Mini-GPTs: D = {} (H = {} × d_head = {}), {} layers; GQA G = {}; MLA d_c = 4·d_head = {}, d_r = {} "
      "(DeepSeek-V2's ratios: d_head/2, rounded up to even). {} sequences of {} random tokens (seed {}), one cache each, float32 (4 B/element).",
      D, H, dh, L, o.groups, d_c, d_r, B, T, ctx.seed));
  r.notes.push_back("kvlab's caches store [ctx, n_kv·d_head] per sequence and layer (row t = position t, head-major): "
                    "the same elements as the formula's [batch, n_kv, ctx, d_head], in another order.");
  r.check = "cache-shape";
  r.source = "000 §A.2 [b]; 000 §2.1, §2.2, §4.2";
  r.claim = "MHA/GQA/MQA caches hold K and V of shape [batch, n_kv, ctx, d_head] per layer and MLA c_KV + k_R; the "
            "bytes on real buffers equal the KV-size formula.";
  return r;
}

namespace {

class CacheShape final : public Check {
 public:
  std::string name() const override { return "cache-shape"; }
  std::string source() const override { return "000 §A.2 [b]; 000 §2.1, §2.2, §4.2"; }
  std::string summary() const override { return "MHA/GQA/MQA/MLA cache shapes and bytes on real buffers = formula"; }
  std::string description() const override {
    return "Runs batch sequences through mini-GPTs of one shape as MHA, GQA, MQA (PreallocCache) and\n"
           "MLA (LatentCache), reads each cache's tensor shapes and bytes off its buffers, and compares\n"
           "them with kvlab's KV-size formula and tensor list for the same shape.";
  }
  std::string derivation() const override {
    return "Per layer and token a cache keeps one K and one V row per K/V head: 2·n_kv·d_head elements,\n"
           "n_kv = H (MHA), G (GQA), 1 (MQA). Over L layers, batch sequences and ctx tokens:\n"
           "  bytes = 2·L·n_kv·d_head·batch·ctx·bytes_per_element   (K, V: [batch, n_kv, ctx, d_head]).\n"
           "MLA keeps the latent c_KV (d_c) and the shared RoPE key k_R (d_r) instead, no factor 2:\n"
           "  bytes = L·(d_c + d_r)·batch·ctx·bytes_per_element.\n"
           "So MHA / GQA = H/G and MHA / MQA = H, whatever L, batch and ctx are.\n"
           "Source: 000 §A.2 [b]; 000 §2.1, §2.2, §4.2.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--heads", opts_.heads, "H, query heads (D = H·d_head)")->check(IntRange(1, kMaxHeads));
    sub.add_option("--head-dim", opts_.head_dim, "d_head")->check(IntRange(1, kMaxHeadDim));
    sub.add_option("--groups", opts_.groups, "G, K/V heads of the GQA variant (divides H)")->check(IntRange(1, kMaxHeads));
    sub.add_option("--layers", opts_.layers, "blocks per mini-GPT")->check(IntRange(1, kMaxLayers));
    sub.add_option("--batch", opts_.batch, "sequences, one cache each")->check(IntRange(1, kMaxBatch));
    sub.add_option("--ctx", opts_.ctx, "tokens per sequence")->check(IntRange(1, kMaxCtx));
  }
  Result run(const RunContext& ctx) override { return run_cache_shape(opts_, ctx); }

 private:
  CacheShapeOptions opts_;
};

KVLAB_REGISTER_CHECK(45, CacheShape);

}  // namespace
}  // namespace kvlab::checks
