// linear-attention — 003 part 3: linear attention / SSMs keep a constant-size state and do constant
// work per token, where a KV cache grows with t.
//
// Claim: "SSMs and linear attention ... are like RNNs: inference time is linear, the state (cache)
// has constant size." kvlab decodes T tokens one at a time through one linear-attention head
// (attention/linear_attention.hpp, φ = elu + 1; with decay γ = 1 and γ = 0.9, the RetNet/SSM-style
// gated form) and, on the same q, k, v, through softmax attention over kvlab's KV cache
// (ConcatCache, grouped_query_attention). It reads the bytes each holds off their buffers after
// every token and counts the multiply-adds of every step (the linear layer's loops; CountMacs in
// the attention kernel).
// Expected, all exact counts (tolerance 0): linear state = (d_k·d_v + d_k)·8 B at every t; linear
// work = 2·d_k·d_v + 2·d_k multiply-adds at every t; KV cache = 2·t·d·8 B and softmax work 2·t·d
// at step t. The recurrent outputs equal the parallel (training) form to rounding.
//
//   kvlab linear-attention [--steps 64] [--head-dim 16]
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "cache/kv_cache.hpp"
#include "checks/linear_attention.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/op_count.hpp"
#include "core/rng.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

constexpr int kMaxSteps = 1024;
constexpr int kMaxHeadDim = 128;

Expectation exact_row(std::string quantity, double expected, double measured, std::string unit,
                      std::string document = "") {
  return {.quantity = std::move(quantity), .source = "003 part 3", .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count: exact", .measured = measured, .document = std::move(document)};
}

Mat<double> normal_matrix(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = rng.normal();
  return m;
}

}  // namespace

Result run_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx, const LinearAttentionParts& parts) {
  require_range("--steps", o.steps, 2, kMaxSteps);
  require_range("--head-dim", o.head_dim, 1, kMaxHeadDim);
  const LinearLayerFactory make = parts.make_layer ? parts.make_layer : LinearLayerFactory([](int dk, int dv, double g) {
    return std::make_unique<LinearAttention>(dk, dv, g);
  });
  const int T = o.steps, d = o.head_dim;
  Rng rng(ctx.seed);
  const Mat<double> q = normal_matrix(rng, T, d), k = normal_matrix(rng, T, d), v = normal_matrix(rng, T, d);
  const double state_formula = (double(d) * d + d) * sizeof(double);
  const double macs_formula = 2.0 * d * d + 2.0 * d;
  Result r;
  Table growth{"state held and work per token, decoding one token at a time (γ = 1)",
               {"t", "linear state (B)", "KV cache (B)", "linear work (multiply-adds)", "softmax work (multiply-adds)"},
               {}};
  Table forms{"recurrent (decode) vs parallel (training) form", {"decay γ", "max |Δy|", "bound", "max |y|"}, {}};
  for (const double gamma : {1.0, 0.9}) {
    std::unique_ptr<LinearAttention> layer = make(d, d, gamma);
    ConcatCache<double> cache(1, d);
    Mat<double> y_rec(T, d);
    double state_min = std::numeric_limits<double>::infinity(), state_max = 0, macs_min = state_min, macs_max = 0;
    double state_worst = 0, macs_worst = 0;  // largest |measured − formula| over t
    double kv_worst = 0, softmax_worst = 0;
    std::uint64_t kv_last = 0, softmax_last = 0;
    for (int t = 0; t < T; ++t) {
      y_rec.row(t) = layer->step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose()).transpose();
      const Mat<double> q_t = q.row(t), k_t = k.row(t), v_t = v.row(t);
      const double sb = static_cast<double>(layer->state_bytes()), m = static_cast<double>(layer->last_step_macs());
      state_min = std::min(state_min, sb), state_max = std::max(state_max, sb);
      macs_min = std::min(macs_min, m), macs_max = std::max(macs_max, m);
      state_worst = std::max(state_worst, std::abs(sb - state_formula));
      macs_worst = std::max(macs_worst, std::abs(m - macs_formula));
      // The same token through softmax attention over a KV cache: append, then attend.
      cache.append(0, k_t, v_t);
      std::uint64_t attn = 0;
      {
        CountMacs count;
        grouped_query_attention<double>(q_t, cache.keys(0), cache.values(0), 1, 1, d, t, true);
        attn = count.count().attention;
      }
      const std::uint64_t kv_bytes = static_cast<std::uint64_t>(cache.keys(0).size() + cache.values(0).size()) *
                                     sizeof(double);
      kv_worst = std::max(kv_worst, std::abs(double(kv_bytes) - 2.0 * (t + 1) * d * sizeof(double)));
      softmax_worst = std::max(softmax_worst, std::abs(double(attn) - 2.0 * (t + 1) * d));
      kv_last = kv_bytes, softmax_last = attn;
      if (gamma == 1.0 && (t == 0 || t + 1 == T / 4 || t + 1 == T / 2 || t + 1 == T))
        growth.rows.push_back({std::int64_t{t + 1}, static_cast<std::int64_t>(sb), static_cast<std::int64_t>(kv_bytes),
                               static_cast<std::int64_t>(m), static_cast<std::int64_t>(attn)});
    }
    const std::string tag = gamma == 1.0 ? "linear attention (γ = 1)" : "decayed, SSM-style (γ = 0.9)";
    r.expect(exact_row(fmt::format("{}: state bytes, largest − smallest over t = 1..{}", tag, T), 0,
                       state_max - state_min, "B", "状态（Cache）大小是常数 (the state has constant size)"));
    r.expect(exact_row(fmt::format("{}: state bytes vs (d_k·d_v + d_k)·8 = {}, worst t", tag, state_formula), 0,
                       state_worst, "B"));
    r.expect(exact_row(fmt::format("{}: multiply-adds per token, largest − smallest over t", tag), 0,
                       macs_max - macs_min, "multiply-adds", "推理时间是线性的 (linear inference time)"));
    r.expect(exact_row(fmt::format("{}: multiply-adds per token vs 2·d_k·d_v + 2·d_k = {}, worst t", tag, macs_formula),
                       0, macs_worst, "multiply-adds"));
    if (gamma == 1.0) {
      r.expect(exact_row(fmt::format("KV cache bytes at t = {} (2·t·d·8, grows with t)", T), 2.0 * T * d * sizeof(double),
                         double(kv_last), "B"));
      r.expect(exact_row("KV cache bytes vs 2·t·d·8, worst t", 0, kv_worst, "B"));
      r.expect(exact_row(fmt::format("softmax attention multiply-adds at step t = {} (2·t·d)", T), 2.0 * T * d,
                         double(softmax_last), "multiply-adds"));
      r.expect(exact_row("softmax attention multiply-adds vs 2·t·d, worst t", 0, softmax_worst, "multiply-adds"));
      r.metric("linear_state_bytes", state_max);
      r.metric("kv_cache_bytes_at_T", double(kv_last));
      r.metric("linear_macs_per_token", macs_max);
      r.metric("softmax_macs_at_T", double(softmax_last));
    }
    // Recurrent = parallel. y_t is a convex combination of the v_s with positive weights; each
    // weight carries the relative rounding of a d_k-term dot product, of γ^{t−s} (pow vs t − s
    // products) and of a sum of up to T terms on each side of the ratio: |Δy| <= 2(2T + d_k + 4)·u·max|v|.
    const Mat<double> y_par = linear_attention_parallel(q, k, v, gamma);
    const double u = std::numeric_limits<double>::epsilon() / 2;
    const double bound = 2.0 * (2.0 * T + d + 4) * u * max_abs(v);
    const double diff = max_abs_diff(y_rec, y_par);  // NaN in either form is NaN here, never skipped
    r.expect({.quantity = fmt::format("{}: max |y recurrent − y parallel| over {} tokens × {}", tag, T, d),
              .source = "003 part 3",
              .unit = "",
              .expected = 0,
              .tolerance = bound,
              .why = "float64 rounding: 2(2T + d_k + 4)·u·max|v|, u = 2^-53 (sums of positive weights)",
              .measured = diff,
              .document = "类似 RNN (like an RNN): the same function as attention over all past tokens"});
    forms.rows.push_back({gamma, diff, bound, max_abs(y_rec)});
  }
  r.tables.push_back(std::move(growth));
  r.tables.push_back(std::move(forms));
  r.notes.push_back(fmt::format(
      "One head, d_k = d_v = d = {}, q, k, v ~ N(0, 1) (seed {}), float64. Linear state: S [d_k, d_v] and z [d_k]; "
      "the KV cache holds K and V [t, d] (ConcatCache: its buffers are exactly t rows).",
      d, ctx.seed));
  r.notes.push_back("What the constant state gives up (003 part 3: associative recall, finding one far-back key "
                    "exactly) is a quality claim, not a size: kvlab does not judge it.");
  r.check = "linear-attention";
  r.source = "003 part 3";
  r.claim = "Linear attention and SSMs decode like an RNN: a state of constant size and constant work per token, "
            "where softmax attention's KV cache and per-token work grow with t.";
  return r;
}

namespace {

class LinearAttentionCheck final : public Check {
 public:
  std::string name() const override { return "linear-attention"; }
  std::string source() const override { return "003 part 3"; }
  std::string summary() const override { return "linear attention / SSM: constant state and work per token; KV grows"; }
  std::string description() const override {
    return "Decodes T tokens through one linear-attention head (φ = elu + 1; decay 1 and 0.9) and,\n"
           "on the same q, k, v, through softmax attention over a KV cache. Measures the bytes each\n"
           "holds after every token and counts each step's multiply-adds: the linear state and work\n"
           "stay constant, the cache and softmax work grow as t. Also checks that the recurrent form\n"
           "equals the parallel (training) form to float64 rounding.";
  }
  std::string derivation() const override {
    return "Replace exp(q·k) by φ(q)·φ(k) with φ > 0 (φ = elu + 1). Then\n"
           "  y_t = Σ_{s<=t} γ^{t−s} φ(q_t)ᵀφ(k_s) v_s / Σ_{s<=t} γ^{t−s} φ(q_t)ᵀφ(k_s)\n"
           "      = φ(q_t)ᵀ S_t / φ(q_t)ᵀ z_t,  S_t = γ S_{t−1} + φ(k_t) v_tᵀ,  z_t = γ z_{t−1} + φ(k_t):\n"
           "associativity moves the sum over s inside a d_k × d_v matrix. The state is d_k·d_v + d_k\n"
           "numbers for every t; a step costs d_k·d_v + d_k to update it and as many to read it.\n"
           "Softmax attention cannot factor exp(q·k): it keeps K and V of all t tokens (2·t·d numbers)\n"
           "and spends t·d multiply-adds on q·k and t·d on the weighted sum of V at step t.\n"
           "Over T tokens: O(T) total for the recurrence, O(T²) for attention with a cache.\n"
           "Source: 003 part 3 (SSMs / linear attention, e.g. Mamba, MiniMax-01).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--steps", opts_.steps, "T, tokens decoded one at a time")->check(IntRange(2, kMaxSteps));
    sub.add_option("--head-dim", opts_.head_dim, "d = d_k = d_v of the head")->check(IntRange(1, kMaxHeadDim));
  }
  Result run(const RunContext& ctx) override { return run_linear_attention(opts_, ctx); }

 private:
  LinearAttentionOptions opts_;
};

KVLAB_REGISTER_CHECK(165, LinearAttentionCheck);

}  // namespace
}  // namespace kvlab::checks
