// kv-invariance — 004 §1.2 (group 1): past K and V never change.
//
// Claim: in a causal model, appending a token leaves the K and V of every earlier position, in
// every layer, unchanged — not "close", bit-identical. Run a 12-token and a 13-token prefix of the
// same sequence through a two-layer mini-GPT and compare the first 12 positions' K and V.
// Expected: max |ΔK|, |ΔV| = 0 exactly (tolerance 0: the course's proof by induction says equal,
// and kvlab computes every position in a fixed summation order, so equal means the same bits).
//
//   kvlab kv-invariance [--tokens 12] [--layers 2] [--kv-heads 8] [--positional learned|rope]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/kv_invariance.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "support/options.hpp"
#include "model/gpt.hpp"
#include "support/check.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks {
namespace {

// Largest sizes accepted: the two forwards then take under a second on a 2-core machine.
constexpr int kMaxTokens = 512;
constexpr int kMaxLayers = 12;

// The model of the options (or of the --weights file), with room for --tokens + 1 positions.
template <class T>
MiniGPT<T> invariance_model(const KvInvarianceOptions& o, const RunContext& ctx) {
  ModelConfig base;
  base.n_layer = o.layers;
  base.n_kv_head = o.kv_heads;
  base.block_size = std::max(64, o.tokens + 1);
  base.positional = parse_positional(o.positional);
  base.causal = o.causal;
  const int need = o.tokens + 1;
  return check_model<T>(
      base, ctx, "kv-invariance",
      {{"causal", [](const ModelConfig& c) { return c.causal; },
        "true (a bidirectional model has no KV cache; the bidirectional check shows why)"},
       {"block_size", [need](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= need; },
        fmt::format(">= --tokens + 1 = {} with learned positions", need)}});
}

template <class T>
Result run_impl(const KvInvarianceOptions& o, const RunContext& ctx) {
  const MiniGPT<T> model = invariance_model<T>(o, ctx);
  const ModelConfig& cfg = model.config();
  const auto ids = random_tokens(ctx.seed + 1, o.tokens + 1, cfg.vocab_size);

  auto short_cache = model.make_cache(CacheKind::prealloc, o.tokens);
  auto long_cache = model.make_cache(CacheKind::prealloc, o.tokens + 1);
  model.forward(std::span(ids).first(o.tokens), 0, *short_cache);
  model.forward(std::span(ids), 0, *long_cache);

  Result r;
  Table per_layer{"K/V of the first positions: prefix of n vs n + 1 tokens",
                  {"layer", "positions compared", "max |ΔK|", "max |ΔV|", "max |K|"}, {}};
  double max_dk = 0, max_dv = 0;
  for (int l = 0; l < cfg.n_kv_layer(); ++l) {  // cache layers (CLA shares one per group)
    const auto k_short = short_cache->keys(l), v_short = short_cache->values(l);
    const auto k_long = long_cache->keys(l).topRows(o.tokens), v_long = long_cache->values(l).topRows(o.tokens);
    const double dk = static_cast<double>(max_abs(k_short - k_long));
    const double dv = static_cast<double>(max_abs(v_short - v_long));
    max_dk = nan_max(max_dk, dk);
    max_dv = nan_max(max_dv, dv);
    per_layer.rows.push_back({std::int64_t{l}, std::int64_t{o.tokens}, dk, dv,
                              static_cast<double>(max_abs(k_short))});
  }
  const double max_diff = nan_max(max_dk, max_dv);
  const std::string why = "exactly equal: fixed summation order per position (design.md numerics)";
  Expectation e{.quantity = fmt::format("max |ΔK| over {} layers, first {} positions", cfg.n_kv_layer(), o.tokens),
                .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = 0, .why = why,
                .measured = max_dk};
  e.stated = Stated{"恰好是 0 (exactly 0)", 0, 0};
  r.expect(e);
  e.quantity = fmt::format("max |ΔV| over {} layers, first {} positions", cfg.n_kv_layer(), o.tokens);
  e.measured = max_dv;
  r.expect(e);
  r.metric("max_abs_diff", max_diff);
  r.metric("max_abs_diff_k", max_dk);
  r.metric("max_abs_diff_v", max_dv);
  r.tables.push_back(std::move(per_layer));
  r.notes.push_back(fmt::format(
      "model: {}{} layers, d_model {}, {} heads, {} KV heads, {} positions, {} mask, {} on {}, seed {}",
      ctx.weights.empty() ? "" : ctx.weights + " (--weights: --layers, --kv-heads, --positional, --bidirectional "
                                               "do not apply), ",
      cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.positional == Positional::rope ? "rope" : "learned",
      cfg.causal ? "causal" : "bidirectional", dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed));
  r.notes.push_back("Why: position j's K and V depend only on tokens 0..j (proof by induction over layers, "
                    "004 §1.2), so token n cannot change them. Under a bidirectional mask (BERT) it can.");
  return r;
}

// --device cuda (issue 8): the same two prefills on the device (backend/device_gpt.hpp), plus
// the cache itself: the device cache's rows 0..n-1 before and after token n is appended.
Result run_device(const KvInvarianceOptions& o, const RunContext& ctx) {
  if (!o.causal) throw InputError("--device cuda: the device runs causal models only; use --device cpu");
  const MiniGPT<float> model = invariance_model<float>(o, ctx);
  const ModelConfig& cfg = model.config();
  const auto ids = random_tokens(ctx.seed + 1, o.tokens + 1, cfg.vocab_size);
  const auto ops = device_ops(ctx);
  gpu::DeviceGpt shorter(model, *ops, {.max_ctx = o.tokens + 1});
  gpu::DeviceGpt longer(model, *ops, {.max_ctx = o.tokens + 1});
  shorter.forward(0, std::span(ids).first(o.tokens));
  longer.forward(0, std::span(ids));

  Result r;
  Table per_layer{"K/V of the first positions on the device: prefill of n vs n + 1 tokens, and the cache before vs "
                  "after token n is appended",
                  {"layer", "positions compared", "max |ΔK| prefill", "max |ΔV| prefill", "max |ΔK| append",
                   "max |ΔV| append", "max |K|"}, {}};
  double prefill_diff = 0, append_diff = 0, max_k = 1;
  std::vector<Mat<float>> k_before, v_before;
  for (int l = 0; l < cfg.n_layer; ++l) {
    k_before.push_back(shorter.keys(l, 0));
    v_before.push_back(shorter.values(l, 0));
  }
  shorter.forward(0, std::span(ids).subspan(static_cast<std::size_t>(o.tokens), 1));  // token n into the cache
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto n = static_cast<Eigen::Index>(o.tokens);
    const double dk = max_abs_diff(k_before[l], longer.keys(l, 0).topRows(n));
    const double dv = max_abs_diff(v_before[l], longer.values(l, 0).topRows(n));
    const double ak = max_abs_diff(k_before[l], shorter.keys(l, 0).topRows(n));
    const double av = max_abs_diff(v_before[l], shorter.values(l, 0).topRows(n));
    const double mk = max_abs(k_before[l]);
    prefill_diff = worst(prefill_diff, worst(dk, dv));
    append_diff = worst(append_diff, worst(ak, av));
    max_k = worst(max_k, mk);
    per_layer.rows.push_back({std::int64_t{l}, std::int64_t{o.tokens}, dk, dv, ak, av, mk});
  }
  const double bound = rounding_bound(cfg, Dtype::f32, max_k);
  Expectation e{.quantity = fmt::format("max |ΔK|, |ΔV| over {} layers, first {} positions: prefill of {} vs {} tokens",
                                        cfg.n_layer, o.tokens, o.tokens, o.tokens + 1),
                .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = bound,
                .why = fmt::format("float32 rounding 2·n·u·max(1, |K|), n = {}: the GPU's GEMM library may block a "
                                   "{}-row and a {}-row product differently (design.md numerics)",
                                   reduction_length(cfg), o.tokens, o.tokens + 1),
                .measured = prefill_diff};
  e.stated = Stated{"恰好是 0 (exactly 0)", 0, 0};
  r.expect(e);
  r.expect({.quantity = fmt::format("max |ΔK|, |ΔV| of positions 0..{} in the device cache, before vs after appending "
                                    "token {}", o.tokens - 1, o.tokens),
            .source = "004 §1.2 (group 1)", .unit = "", .expected = 0, .tolerance = 0,
            .why = "exactly equal: an append writes one new slot and nothing else", .measured = append_diff});
  r.metric("max_abs_diff", prefill_diff);
  r.metric("max_abs_diff_append", append_diff);
  r.tables.push_back(std::move(per_layer));
  r.notes.push_back(fmt::format("model: {}{} layers, d_model {}, {} heads, {} KV heads, {} positions, seed {}",
                                ctx.weights.empty() ? "" : ctx.weights + " (--weights), ", cfg.n_layer, cfg.d_model,
                                cfg.n_head, cfg.n_kv_head, cfg.positional == Positional::rope ? "rope" : "learned",
                                ctx.seed));
  r.notes.push_back(device_note(*ops));
  return r;
}

}  // namespace

Result run_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx) {
  require_range("--tokens", o.tokens, 1, kMaxTokens);
  require_range("--layers", o.layers, 1, kMaxLayers);
  require_range("--kv-heads", o.kv_heads, 1, 8);
  if (8 % o.kv_heads != 0)
    throw InputError(fmt::format("--kv-heads: must divide the 8 query heads: 1, 2, 4 or 8 (got {})", o.kv_heads));
  Result r = ctx.device == Device::cuda ? run_device(o, ctx)
                                        : with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx); });
  r.check = "kv-invariance";
  r.source = "004 §1.2 (group 1)";
  r.claim = fmt::format("Appending token {} leaves the K and V of positions 0..{} unchanged in every layer: "
                        "max |ΔK|, |ΔV| is exactly 0.", o.tokens, o.tokens - 1);
  return r;
}

namespace {

class KvInvariance final : public Check {
 public:
  std::string name() const override { return "kv-invariance"; }
  std::string source() const override { return "004 §1.2 (group 1)"; }
  std::string summary() const override { return "past K/V never change: n vs n+1 tokens, max diff exactly 0"; }
  std::string derivation() const override {
    return "Induction over the layers of a causal model.\n"
           "Layer 1: k_i = x_i W_K and v_i = x_i W_V depend only on token i and its position, so appending\n"
           "token t+1 leaves k_1..k_t and v_1..v_t as they were.\n"
           "Layer l: the input h_i at position i is computed from positions j <= i of layer l-1 (the causal\n"
           "mask hides j > i); by the induction hypothesis those did not change, so neither do h_i,\n"
           "k_i = h_i W_K and v_i = h_i W_V.\n"
           "Hence every past position's K and V, in every layer, are fixed once computed: they can be cached,\n"
           "and the check expects max |K_13 - K_12| over the first 12 positions to be exactly 0.\n"
           "With a bidirectional mask the step for layer l fails (position i attends to j > i): that is why\n"
           "BERT has no KV cache.\n"
           "Source: 004 §1.2.\n";
  }
  std::string description() const override {
    return "Runs an n-token and an (n+1)-token prefix of one seeded sequence through a mini-GPT and\n"
           "compares the cached K and V of the first n positions in every layer. The course's\n"
           "induction proof says they are equal; kvlab expects exactly 0, not 'small'.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--tokens", opts_.tokens, "Shorter prefix length n (the other is n + 1)")
        ->check(IntRange(1, kMaxTokens));
    sub.add_option("--layers", opts_.layers, "Number of layers")->check(IntRange(1, kMaxLayers));
    sub.add_option("--kv-heads", opts_.kv_heads, "K/V heads (divisor of 8: 8 MHA, 2 GQA, 1 MQA)")
        ->check(IntRange(1, 8));
    sub.add_option("--positional", opts_.positional, "learned (default) or rope")
        ->check(IsMember({"learned", "rope"}));
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  bool has_cuda() const override { return true; }
  std::string cuda_gap(const RunContext& ctx) const override {
    return opts_.causal ? weights_device_gap(ctx) : "a bidirectional model has no KV cache on the device";
  }
  Result run(const RunContext& ctx) override { return run_kv_invariance(opts_, ctx); }

 private:
  KvInvarianceOptions opts_;
};

KVLAB_REGISTER_CHECK(10, KvInvariance);

}  // namespace
}  // namespace kvlab::checks
