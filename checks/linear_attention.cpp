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

namespace kvlab::checks::linear_attention {
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

// The smallest and largest value of a step field over t, and its largest |value − formula(t)|.
struct Spread {
  double min = std::numeric_limits<double>::infinity(), max = 0, worst = 0;
};

template <class F>
Spread spread(const LinearDecayRun& run, double LinearStep::*field, F&& formula) {
  Spread s;
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const double x = run.steps[i].*field;
    s.min = std::min(s.min, x), s.max = std::max(s.max, x);
    s.worst = std::max(s.worst, std::abs(x - formula(static_cast<double>(i + 1))));
  }
  return s;
}

double state_formula(int d) { return (double(d) * d + d) * sizeof(double); }
double macs_formula(int d) { return 2.0 * d * d + 2.0 * d; }

// Recurrent = parallel. y_t is a convex combination of the v_s with positive weights; each
// weight carries the relative rounding of a d_k-term dot product, of γ^{t−s} (pow vs t − s
// products) and of a sum of up to T terms on each side of the ratio: |Δy| <= 2(2T + d_k + 4)·u·max|v|.
double forms_bound(const LinearAttentionMeasured& m) {
  const double u = std::numeric_limits<double>::epsilon() / 2;
  return 2.0 * (2.0 * m.options.steps + m.options.head_dim + 4) * u * m.max_v;
}

const char* tag(double gamma) { return gamma == 1.0 ? "linear attention (γ = 1)" : "decayed, SSM-style (γ = 0.9)"; }

// The rows of one decay: constant state and work; with γ = 1 also the cache and softmax work growing as t.
void judge_run(const LinearAttentionMeasured& m, const LinearDecayRun& run, std::vector<Expectation>& rows) {
  const int T = m.options.steps, d = m.options.head_dim;
  const Spread state = spread(run, &LinearStep::state_bytes, [d](double) { return state_formula(d); });
  const Spread macs = spread(run, &LinearStep::macs, [d](double) { return macs_formula(d); });
  rows.push_back(exact_row(fmt::format("{}: state bytes, largest − smallest over t = 1..{}", tag(run.gamma), T), 0,
                           state.max - state.min, "B", "状态（Cache）大小是常数 (the state has constant size)"));
  rows.push_back(exact_row(fmt::format("{}: state bytes vs (d_k·d_v + d_k)·8 = {}, worst t", tag(run.gamma),
                                       state_formula(d)),
                           0, state.worst, "B"));
  rows.push_back(exact_row(fmt::format("{}: multiply-adds per token, largest − smallest over t", tag(run.gamma)), 0,
                           macs.max - macs.min, "multiply-adds", "推理时间是线性的 (linear inference time)"));
  rows.push_back(exact_row(fmt::format("{}: multiply-adds per token vs 2·d_k·d_v + 2·d_k = {}, worst t", tag(run.gamma),
                                       macs_formula(d)),
                           0, macs.worst, "multiply-adds"));
  if (run.gamma == 1.0) {
    const auto kv = spread(run, &LinearStep::kv_bytes, [d](double t) { return 2.0 * t * d * sizeof(double); });
    const auto softmax = spread(run, &LinearStep::softmax_macs, [d](double t) { return 2.0 * t * d; });
    const LinearStep last = run.steps.empty() ? LinearStep{} : run.steps.back();
    rows.push_back(exact_row(fmt::format("KV cache bytes at t = {} (2·t·d·8, grows with t)", T),
                             2.0 * T * d * sizeof(double), last.kv_bytes, "B"));
    rows.push_back(exact_row("KV cache bytes vs 2·t·d·8, worst t", 0, kv.worst, "B"));
    rows.push_back(exact_row(fmt::format("softmax attention multiply-adds at step t = {} (2·t·d)", T), 2.0 * T * d,
                             last.softmax_macs, "multiply-adds"));
    rows.push_back(exact_row("softmax attention multiply-adds vs 2·t·d, worst t", 0, softmax.worst, "multiply-adds"));
  }
  rows.push_back({.quantity = fmt::format("{}: max |y recurrent − y parallel| over {} tokens × {}", tag(run.gamma), T, d),
                  .source = "003 part 3",
                  .unit = "",
                  .expected = 0,
                  .tolerance = forms_bound(m),
                  .why = "float64 rounding: 2(2T + d_k + 4)·u·max|v|, u = 2^-53 (sums of positive weights)",
                  .measured = run.diff,
                  .document = "类似 RNN (like an RNN): the same function as attention over all past tokens"});
}

void present(const LinearAttentionMeasured& m, Result& r) {
  const int T = m.options.steps;
  Table growth{"state held and work per token, decoding one token at a time (γ = 1)",
               {"t", "linear state (B)", "KV cache (B)", "linear work (multiply-adds)", "softmax work (multiply-adds)"},
               {}};
  Table forms{"recurrent (decode) vs parallel (training) form", {"decay γ", "max |Δy|", "bound", "max |y|"}, {}};
  for (const LinearDecayRun& run : m.runs) {
    if (run.gamma == 1.0) {
      for (int t = 0; t < static_cast<int>(run.steps.size()); ++t) {
        const LinearStep& s = run.steps[static_cast<std::size_t>(t)];
        if (t == 0 || t + 1 == T / 4 || t + 1 == T / 2 || t + 1 == T)
          growth.rows.push_back({std::int64_t{t + 1}, static_cast<std::int64_t>(s.state_bytes),
                                 static_cast<std::int64_t>(s.kv_bytes), static_cast<std::int64_t>(s.macs),
                                 static_cast<std::int64_t>(s.softmax_macs)});
      }
      const LinearStep last = run.steps.empty() ? LinearStep{} : run.steps.back();
      const auto any = [](double) { return 0.0; };  // only the largest value is shown
      r.metric("linear_state_bytes", spread(run, &LinearStep::state_bytes, any).max);
      r.metric("kv_cache_bytes_at_T", last.kv_bytes);
      r.metric("linear_macs_per_token", spread(run, &LinearStep::macs, any).max);
      r.metric("softmax_macs_at_T", last.softmax_macs);
    }
    forms.rows.push_back({run.gamma, run.diff, forms_bound(m), run.max_y});
  }
  r.tables.push_back(std::move(growth));
  r.tables.push_back(std::move(forms));
  r.notes.push_back(fmt::format(
      "One head, d_k = d_v = d = {}, q, k, v ~ N(0, 1) (seed {}), float64. Linear state: S [d_k, d_v] and z [d_k]; "
      "the KV cache holds K and V [t, d] (ConcatCache: its buffers are exactly t rows).",
      m.options.head_dim, m.seed));
  r.notes.push_back("What the constant state gives up (003 part 3: associative recall, finding one far-back key "
                    "exactly) is a quality claim, not a size: kvlab does not judge it.");
}

// Decodes q, k, v one token at a time through `layer` and through softmax attention over a KV cache.
LinearDecayRun decode(LinearAttention& layer, double gamma, const Mat<double>& q, const Mat<double>& k,
                      const Mat<double>& v) {
  const int T = static_cast<int>(q.rows()), d = static_cast<int>(q.cols());
  LinearDecayRun run{.gamma = gamma};
  ConcatCache<double> cache(1, d);
  Mat<double> y_rec(T, d);
  for (int t = 0; t < T; ++t) {
    y_rec.row(t) = layer.step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose()).transpose();
    LinearStep s{.state_bytes = static_cast<double>(layer.state_bytes()),
                 .macs = static_cast<double>(layer.last_step_macs())};
    // The same token through softmax attention over a KV cache: append, then attend.
    const Mat<double> q_t = q.row(t), k_t = k.row(t), v_t = v.row(t);
    cache.append(0, k_t, v_t);
    {
      CountMacs count;
      grouped_query_attention<double>(q_t, cache.keys(0), cache.values(0), 1, 1, d, t, true);
      s.softmax_macs = static_cast<double>(count.count().attention);
    }
    s.kv_bytes = static_cast<double>(static_cast<std::uint64_t>(cache.keys(0).size() + cache.values(0).size()) *
                                     sizeof(double));
    run.steps.push_back(s);
  }
  run.diff = max_abs_diff(y_rec, linear_attention_parallel(q, k, v, gamma));  // NaN in either form stays NaN
  run.max_y = max_abs(y_rec);
  return run;
}

}  // namespace

LinearAttentionMeasured measure_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx,
                                                 const LinearAttentionParts& parts) {
  const LinearLayerFactory make = parts.make_layer ? parts.make_layer : LinearLayerFactory([](int dk, int dv, double g) {
    return std::make_unique<LinearAttention>(dk, dv, g);
  });
  const int T = o.steps, d = o.head_dim;
  Rng rng(ctx.seed);
  const Mat<double> q = normal_matrix(rng, T, d), k = normal_matrix(rng, T, d), v = normal_matrix(rng, T, d);
  LinearAttentionMeasured m{.options = o, .seed = ctx.seed, .max_v = max_abs(v)};
  for (const double gamma : {1.0, 0.9}) m.runs.push_back(decode(*make(d, d, gamma), gamma, q, k, v));
  return m;
}

std::vector<Expectation> judge_linear_attention(const LinearAttentionMeasured& m) {
  std::vector<Expectation> rows;
  for (const LinearDecayRun& run : m.runs) judge_run(m, run, rows);
  return rows;
}

const CheckDef<LinearAttentionOptions, LinearAttentionMeasured>& linear_attention_check() {
  static const CheckDef<LinearAttentionOptions, LinearAttentionMeasured> def{
      .spec = {.name = "linear-attention",
               .order = 165,
               .source = "003 part 3",
               .summary = "linear attention / SSM: constant state and work per token; KV grows",
               .claim_zh = "线性注意力：状态大小不随 t 增长，而 KV Cache 与 softmax 计算随 t 线性增长",
               .description =
                   "Decodes T tokens through one linear-attention head (φ = elu + 1; decay 1 and 0.9) and,\n"
                   "on the same q, k, v, through softmax attention over a KV cache. Measures the bytes each\n"
                   "holds after every token and counts each step's multiply-adds: the linear state and work\n"
                   "stay constant, the cache and softmax work grow as t. Also checks that the recurrent form\n"
                   "equals the parallel (training) form to float64 rounding.",
               .derivation =
                   "Replace exp(q·k) by φ(q)·φ(k) with φ > 0 (φ = elu + 1). Then\n"
                   "  y_t = Σ_{s<=t} γ^{t−s} φ(q_t)ᵀφ(k_s) v_s / Σ_{s<=t} γ^{t−s} φ(q_t)ᵀφ(k_s)\n"
                   "      = φ(q_t)ᵀ S_t / φ(q_t)ᵀ z_t,  S_t = γ S_{t−1} + φ(k_t) v_tᵀ,  z_t = γ z_{t−1} + φ(k_t):\n"
                   "associativity moves the sum over s inside a d_k × d_v matrix. The state is d_k·d_v + d_k\n"
                   "numbers for every t; a step costs d_k·d_v + d_k to update it and as many to read it.\n"
                   "Softmax attention cannot factor exp(q·k): it keeps K and V of all t tokens (2·t·d numbers)\n"
                   "and spends t·d multiply-adds on q·k and t·d on the weighted sum of V at step t.\n"
                   "Over T tokens: O(T) total for the recurrence, O(T²) for attention with a cache.\n"
                   "Source: 003 part 3 (SSMs / linear attention, e.g. Mamba, MiniMax-01).",
               .claim = "Linear attention and SSMs decode like an RNN: a state of constant size and constant work per "
                        "token, where softmax attention's KV cache and per-token work grow with t."},
      .options = {{"--steps", &LinearAttentionOptions::steps, Allowed::integers(2, kMaxSteps),
                   "T, tokens decoded one at a time"},
                  {"--head-dim", &LinearAttentionOptions::head_dim, Allowed::integers(1, kMaxHeadDim),
                   "d = d_k = d_v of the head"}},
      .measure = [](const LinearAttentionOptions& o, const RunContext& ctx) { return measure_linear_attention(o, ctx); },
      .judge = judge_linear_attention,
      .present = present};
  return def;
}

Result run_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx, const LinearAttentionParts& parts) {
  return run_check(linear_attention_check(), o, ctx, [&parts](const LinearAttentionOptions& opts, const RunContext& c) {
    return measure_linear_attention(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(linear_attention_check);

}  // namespace kvlab::checks::linear_attention
