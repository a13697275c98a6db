// incremental-vs-full — 004 §1.3, §3.5 (group 2): the KV cache saves work, it does not approximate.
//
// Claim: prefill 8 tokens, then decode 12 one at a time through the cache; the logits equal those
// of one forward over all 20 tokens, for MHA, GQA and MQA, and also when the prompt is prefilled in
// chunks (the lower-right causal mask of 004 §3.3). The course measured 3.6e-15 (MHA), 6.2e-15
// (GQA), 5.8e-15 (MQA): float64 rounding. Expected: max |Δlogits| within a rounding bound derived
// from the dtype's unit roundoff and the reduction lengths (support/model_setup.hpp).
// Also always run (000 §4.4, 004 §1.6): a GQA model with RoPE (decode rotates q and k at
// the token's true position) and the MLA model of model/mla.hpp, whose LatentCache holds only c_KV
// and k_R, on its naive and absorbed paths (bound: 2·n·u·max|logit| with n from
// mla_reduction_length, checks/mla_absorb.hpp).
// kvlab's differences are exactly 0 (both paths sum in one order, docs/design.md Numerics); beside
// each 0 the table shows the same full forward summed in another order (train_forward's Eigen
// products), a nonzero rounding difference of the course's size, so that the 0 reads as "the same
// arithmetic", not "a buffer compared with itself".
//
//   kvlab incremental-vs-full [--prefill 8] [--decode 12] [--chunk 3] [--cache prealloc|concat]
#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "checks/incremental_vs_full.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "framework/options.hpp"
#include "model/gpt.hpp"
#include "model/mla.hpp"
#include "train/backprop.hpp"
#include "checks/mla_absorb.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks {
namespace {

// Largest --prefill and --decode accepted: 5 variants and 2 MLA paths × (1 full + up to 2·256
// cached forwards) then take about a second on a 2-core machine.
constexpr int kMaxTokens = 256;

struct Variant {
  const char* name;       // metric suffix: mha, gqa, mqa, chunked, rope
  int kv_heads;           // of 8 query heads
  bool chunked;           // prefill in chunks of o.chunk tokens
  const char* course;     // what 004 §1.3 measured
  bool rope = false;      // RoPE instead of learned positions
};

constexpr Variant kVariants[] = {
    {"mha", 8, false, "3.6e-15"},
    {"gqa", 2, false, "6.2e-15"},
    {"mqa", 1, false, "5.8e-15"},
    {"chunked", 2, true, "— (004 §3.5 test 1)"},
    {"rope", 2, false, "— (000 §4.4, 004 §1.6: RoPE at the true position on decode)", true},
};

// The rows a run has: the five seeded variants, or the --weights file's model prefilled at once
// and in chunks.
std::vector<Variant> variants_for(const RunContext& ctx) {
  if (!ctx.weights.empty()) return {{"weights", 0, false, "— (--weights)"}, {"weights_chunked", 0, true, "— (--weights)"}};
  return {std::begin(kVariants), std::end(kVariants)};
}

// The model of variant v (or of the --weights file), with the shape the claim needs.
template <class T>
MiniGPT<T> variant_model(const Variant& v, int total, const RunContext& ctx) {
  ModelConfig base;
  base.n_kv_head = v.kv_heads;
  base.block_size = std::max(64, total);
  if (v.rope) base.positional = Positional::rope;
  return check_model<T>(
      base, ctx, "incremental-vs-full",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"},
       {"block_size", [total](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= total; },
        fmt::format(">= --prefill + --decode = {} with learned positions", total)}});
}

// max |Δlogits| between the full forward and the same model's forward through train_forward
// (train/backprop.hpp: Eigen's blocked matrix products, so every dot product and softmax sum runs
// in another order): the size of a rounding difference when two paths do NOT sum alike, the
// course's 3.6e-15. Empty where train_forward does not apply (RoPE, a window, CLA, bidirectional).
template <class T>
std::optional<double> reordered_diff(const MiniGPT<T>& model, std::span<const int> ids, const Mat<T>& full) {
  const ModelConfig& c = model.config();
  if (c.positional != Positional::learned || !c.causal || c.sliding_window != 0 || c.cla_share != 1)
    return std::nullopt;
  return max_abs_diff(train::train_forward<T>(c, model.weights(), ids), full);
}

// One variant's expectation, metric and table row: max |Δlogits| `diff` against the rounding bound
// of `dtype` for the model `cfg`, scaled by max(1, max_logit), with `reordered` (reordered_diff)
// beside it when there is one. `where`: "" or " on the device".
void record_variant(const Variant& v, const IncrementalOptions& o, const ModelConfig& cfg, Dtype dtype,
                    const std::string& where, double diff, double max_logit, Result& r, Table& detail,
                    std::optional<double> reordered = std::nullopt) {
  const double scale = std::max(1.0, max_logit);
  const double bound = rounding_bound(cfg, dtype, scale);
  Expectation e{.quantity = fmt::format("max |Δlogits| {}{}{}", v.name,
                                        v.chunked ? fmt::format(" (prefill in chunks of {})", *o.chunk) : "", where),
                .source = v.chunked ? "004 §3.3, §3.5" : v.rope ? "004 §1.3, §1.6; 000 §4.4.1" : "004 §1.3 (group 2)",
                .unit = "",
                .expected = 0,
                .tolerance = bound,
                .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({}{}){}",
                                   reduction_length(cfg), unit_roundoff(dtype), dtype_name(dtype), where,
                                   reordered ? fmt::format("; the full forward summed in another order differs "
                                                           "by {:.2g} (table)", *reordered)
                                             : std::string()),
                .measured = diff};
  e.document = v.course;
  r.expect(e);
  r.metric(std::string("max_abs_diff_") + v.name, diff);
  if (reordered) r.metric(std::string("max_abs_diff_reordered_") + v.name, *reordered);
  detail.rows.push_back({std::string(v.name), std::int64_t{cfg.n_kv_head},
                         v.chunked ? fmt::format("{} in chunks of {}", o.prefill, *o.chunk) : std::to_string(o.prefill),
                         std::int64_t{o.decode}, diff,
                         reordered ? Cell{*reordered} : Cell{std::string("—")}, scale, bound});
}

// The MLA mini-GPT (model/mla.hpp): prefill, then decode one token at a time through its
// LatentCache (c_KV and k_R only), against one full forward on the same path.
template <class T>
void mla_rows(const IncrementalOptions& o, const RunContext& ctx, Result& r, Table& detail) {
  const int total = o.prefill + o.decode;
  const MlaConfig c;
  const MlaGPT<T> model(c, ctx.seed);
  const auto ids = random_tokens(ctx.seed + 1, total, c.vocab_size);
  for (const MlaPath path : {MlaPath::naive, MlaPath::absorbed}) {
    const char* name = path == MlaPath::naive ? "mla_naive" : "mla_absorbed";
    LatentCache<T> full_cache = model.make_cache(total);
    const Mat<T> full = model.forward(ids, 0, full_cache, path);
    LatentCache<T> cache = model.make_cache(total);
    Mat<T> incremental(total, c.vocab_size);
    incremental.topRows(o.prefill) = model.forward(std::span(ids).first(o.prefill), 0, cache, path);
    for (int pos = o.prefill; pos < total; ++pos)
      incremental.row(pos) = model.forward(std::span(ids).subspan(pos, 1), pos, cache, path);
    const double diff = static_cast<double>(max_abs(incremental - full));
    const double scale = std::max(1.0, static_cast<double>(max_abs(full)));
    const double n = mla_reduction_length(c, total);
    const double bound = 2.0 * n * unit_roundoff(ctx.dtype) * scale;
    Expectation e{.quantity = fmt::format("max |Δlogits| {} (MLA, cache = c_KV [{}] + k_R [{}] per token)", name,
                                          c.kv_lora_rank, c.rope_head_dim),
                  .source = "000 §4.3–4.4; 004 §1.3",
                  .unit = "",
                  .expected = 0,
                  .tolerance = bound,
                  .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", n,
                                     unit_roundoff(ctx.dtype), dtype_name(ctx.dtype)),
                  .measured = diff};
    e.document = "— (000 §4.4: MLA caches c_KV and k_R)";
    r.expect(e);
    r.metric(std::string("max_abs_diff_") + name, diff);
    detail.rows.push_back({std::string(name), std::int64_t{c.n_head}, std::to_string(o.prefill), std::int64_t{o.decode},
                           diff, std::string("—"), scale, bound});
  }
}

template <class T>
Result run_impl(const IncrementalOptions& o, const RunContext& ctx, const CacheMaker<T>& make_cache) {
  const int total = o.prefill + o.decode;
  Result r;
  Table detail{"max |Δlogits|, cached vs one full forward",
               {"variant", "KV heads", "prefill", "decode steps", "max |Δlogits|",
                "full forward vs itself summed in another order", "scale max(1, |logit|)", "bound"},
               {}};
  const std::vector<Variant> variants = variants_for(ctx);
  for (const Variant& v : variants) {
    const MiniGPT<T> model = variant_model<T>(v, total, ctx);
    const ModelConfig& cfg = model.config();
    const auto ids = random_tokens(ctx.seed + 1, total, cfg.vocab_size);

    auto full_cache = model.make_cache(CacheKind::prealloc, total);
    const Mat<T> full = model.forward(ids, 0, *full_cache);

    auto cache = make_cache(cfg.n_kv_layer(), cfg.kv_width(), total);
    Mat<T> incremental(total, cfg.vocab_size);
    int pos = 0;
    const int step = v.chunked ? *o.chunk : o.prefill;
    while (pos < o.prefill) {  // prefill: at once, or in chunks
      const int n = std::min(step, o.prefill - pos);
      incremental.middleRows(pos, n) = model.forward(std::span(ids).subspan(pos, n), pos, *cache);
      pos += n;
    }
    for (; pos < total; ++pos)  // decode: one token at a time, at its true position (004 §3.2)
      incremental.row(pos) = model.forward(std::span(ids).subspan(pos, 1), pos, *cache);

    record_variant(v, o, cfg, ctx.dtype, "", max_abs_diff(incremental, full), static_cast<double>(max_abs(full)), r,
                   detail, reordered_diff(model, ids, full));
  }
  mla_rows<T>(o, ctx, r, detail);
  r.tables.push_back(std::move(detail));
  if (!ctx.weights.empty())
    r.notes.push_back(fmt::format("rows weights, weights_chunked: the model of {} (--weights)", ctx.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, learned positions (row rope: RoPE), {} on {}, "
                                  "{} cache, seed {}", dtype_name(ctx.dtype), device_name(ctx.device), o.cache, ctx.seed));
  r.notes.push_back("Rows mla_naive and mla_absorbed: the MLA mini-GPT (2 layers, 8 heads, d_c 32, d_q 24, d_r 4) with its "
                    "own LatentCache (--cache does not apply); the KV heads column shows its 8 query heads.");
  r.notes.push_back("Why exactly 0: kvlab's linear layers, LayerNorm and attention rows are per-row loops that sum "
                    "each position's terms in one fixed order, whatever the number of tokens in the call, so the "
                    "cached and the full forward do the same operations on the same numbers and round alike, bit "
                    "for bit. Column \"full forward vs itself summed in another order\" is the same full forward "
                    "through Eigen's blocked matrix products (the trainer's forward, train/backprop.hpp): a nonzero "
                    "rounding difference of a few units in the last place of the logits, the kind the course "
                    "measured (3.6e-15 in float64 on its model) with BLAS kernels whose blocking depends on T. "
                    "\"—\": that forward covers learned positions without CLA only.");
  return r;
}

// --device cuda: the MiniGPT variants on the device (backend/device_gpt.hpp), float32.
// The full forward is one prefill of every token into its own device cache; the incremental one
// prefills (at once or in chunks) and decodes one token at a time. MLA has no device path.
Result run_device(const IncrementalOptions& o, const RunContext& ctx) {
  const int total = o.prefill + o.decode;
  Result r;
  Table detail{"max |Δlogits| on the device, cached vs one full forward",
               {"variant", "KV heads", "prefill", "decode steps", "max |Δlogits|",
                "full forward vs itself summed in another order", "scale max(1, |logit|)", "bound"},
               {}};
  const std::vector<Variant> variants = variants_for(ctx);
  const auto ops = device_ops(ctx);
  for (const Variant& v : variants) {
    const MiniGPT<float> model = variant_model<float>(v, total, ctx);
    const ModelConfig& cfg = model.config();
    const auto ids = random_tokens(ctx.seed + 1, total, cfg.vocab_size);
    gpu::DeviceGpt full_model(model, *ops, {.max_ctx = total});
    const Mat<float> full = full_model.forward(0, ids);
    gpu::DeviceGpt cached(model, *ops, {.max_ctx = total});
    Mat<float> incremental(total, cfg.vocab_size);
    const int step = v.chunked ? *o.chunk : o.prefill;
    for (int pos = 0; pos < total;) {  // prefill at once or in chunks, then one token at a time
      const int n = pos < o.prefill ? std::min(step, o.prefill - pos) : 1;
      incremental.middleRows(pos, n) = cached.forward(0, std::span(ids).subspan(static_cast<std::size_t>(pos), n));
      pos += n;
    }
    record_variant(v, o, cfg, Dtype::f32, " on the device", max_abs_diff(incremental, full),
                   static_cast<double>(max_abs(full)), r, detail);
  }
  r.tables.push_back(std::move(detail));
  r.notes.push_back(ctx.weights.empty() ? fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, learned positions "
                                                      "(row rope: RoPE), seed {}", ctx.seed)
                                        : fmt::format("rows weights, weights_chunked: the model of {} (--weights)", ctx.weights));
  r.notes.push_back(device_note(*ops));
  r.notes.push_back("MLA (rows mla_naive, mla_absorbed) has no device path: `--device cpu` runs them; --cache does not "
                    "apply on the device (its cache is preallocated).");
  return r;
}

}  // namespace

Result run_incremental_vs_full(const IncrementalOptions& o, const RunContext& ctx, const IncrementalParts& parts) {
  require_range("--prefill", o.prefill, 1, kMaxTokens);
  require_range("--decode", o.decode, 0, kMaxTokens);
  // --chunk defaults to min(3, --prefill), so that a short prompt needs no --chunk of its own.
  const int chunk = o.chunk.value_or(std::min(3, o.prefill));
  require_range("--chunk", chunk, 1, o.prefill);
  IncrementalOptions resolved = o;
  resolved.chunk = chunk;
  const CacheKind kind = o.cache == "concat" ? CacheKind::concat : CacheKind::prealloc;
  if (o.cache != "concat" && o.cache != "prealloc")
    throw InputError("--cache: must be prealloc or concat (got '" + o.cache + "')");
  Result r = ctx.device == Device::cuda ? run_device(resolved, ctx) : with_dtype(ctx.dtype, [&]<class T>() {
    CacheMaker<T> maker;
    if constexpr (std::is_same_v<T, double>) maker = parts.cache_f64;
    else maker = parts.cache_f32;
    if (!maker) maker = [kind](int n_layer, int width, int max_len) { return make_cache<T>(kind, n_layer, width, max_len); };
    return run_impl<T>(resolved, ctx, maker);
  });
  r.check = "incremental-vs-full";
  r.source = "004 §1.3, §3.5 (group 2)";
  r.claim = fmt::format("Prefill {} tokens then decode {} one at a time with the KV cache: the logits equal one "
                        "full forward over {} tokens up to rounding, for MHA, GQA, MQA, a chunked prefill, a RoPE "
                        "model{}.",
                        o.prefill, o.decode, o.prefill + o.decode,
                        ctx.device == Device::cuda ? " (on the device; MLA runs with --device cpu)"
                                                   : " and MLA (latent cache; naive and absorbed paths)");
  return r;
}

namespace {

class IncrementalVsFull final : public Check {
 public:
  std::string name() const override { return "incremental-vs-full"; }
  std::string source() const override { return "004 §1.3, §3.5 (group 2)"; }
  std::string summary() const override {
    return "cached decode = full forward (MHA, GQA, MQA, chunked prefill, RoPE, MLA)";
  }
  std::string derivation() const override {
    return "The full forward computes, at position t, q_t against k_1..k_t and v_1..v_t of every layer.\n"
           "Prefill stores k_i, v_i for the prompt; by kv-invariance they equal the full forward's values.\n"
           "A decode step at position t computes q_t, k_t, v_t from the same input, appends k_t, v_t and\n"
           "attends over the cache k_1..k_t: the same function of the same numbers as the full forward's row t.\n"
           "So the logits are equal. In floating point that holds bit for bit only when both paths sum in the\n"
           "same order (kvlab's per-row arithmetic does, design.md Numerics); the tolerance is still a\n"
           "rounding bound 2·n·u·scale, because mathematics only promises equality in exact arithmetic.\n"
           "Chunked prefill is the same argument with several new rows at once (lower-right causal mask).\n"
           "RoPE: k_t is rotated by its own position t before it is cached, so decode must rotate at t too.\n"
           "MLA: the cache holds c_KV and k_R, from which both paths rebuild (or absorb) K and V exactly.\n"
           "Source: 004 §1.3, §3.5; 004 §1.6; 000 §4.3-4.4.\n";
  }
  std::string description() const override {
    return "Prefills a prompt, decodes the rest one token at a time through the KV cache, and\n"
           "compares every logit with one forward pass over the whole sequence; then again with\n"
           "the prompt prefilled in chunks, for a RoPE model, and for the MLA model whose cache\n"
           "holds only c_KV and k_R. The tolerance is a float rounding bound, stated.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--prefill", opts_.prefill, "Prompt tokens")->check(IntRange(1, kMaxTokens));
    sub.add_option("--decode", opts_.decode, "Tokens decoded one at a time")->check(IntRange(0, kMaxTokens));
    sub.add_option("--chunk", opts_.chunk, "Chunk size of the chunked prefill (<= --prefill; default min(3, --prefill))")
        ->check(IntRange(1, kMaxTokens));
    sub.add_option("--cache", opts_.cache, "prealloc (default) or concat")->check(IsMember({"prealloc", "concat"}));
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  bool has_cuda() const override { return true; }
  std::string cuda_gap(const RunContext&) const override { return "the MLA rows have no device path"; }
  Result run(const RunContext& ctx) override { return run_incremental_vs_full(opts_, ctx); }

 private:
  IncrementalOptions opts_;
};

KVLAB_REGISTER_CHECK(20, IncrementalVsFull);

}  // namespace
}  // namespace kvlab::checks
