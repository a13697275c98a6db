// bench-generate — 004 §B.5 (exercise 5): naive vs cached generation, per-token time against the
// generation length.
//
// Claim (004 §B.5, §C exit criteria): time naive generation (recompute everything) against cached
// generation for lengths 64, 128 and 255, plot the per-token time against the length, and explain
// the speedup by 004 §1.1's complexity: the naive step at n tokens processes n positions, the
// cached step one.
// What is judged: the work, counted. For every length n after a 1-token prompt, the positions each
// generator feeds (naive Σ_{m=1}^{n} m = n(n+1)/2, cached 1 + (n − 1) = n) and the FLOPs of its
// forward calls (count_forward over the real schedule) against closed forms, exact integers
// (tolerance 0); and that both generators emit the same tokens (0 differing, exact). The time per
// token (median of --repeats runs) and the naive/cached time ratio are shown in a "timing" table and
// a plot, never judged: this machine is shared and its clock noisy.
//
//   kvlab bench-generate [--repeats 3] [--long] [--plot FILE.svg|term]
#include "checks/bench_generate.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/error.hpp"
#include "report/writers.hpp"
#include "support/model_setup.hpp"
#include "core/stats.hpp"

namespace kvlab::checks::bench_generate {
namespace {

constexpr const char* kName = "bench-generate";
constexpr const char* kSource = "004 §B.5 (exercise 5); 004 §1.1";
constexpr int kMaxRepeats = 9;
constexpr int kPrompt = 1;

/// The bench model: Day 3's mini-GPT shape scaled down so that --long stays within seconds here:
/// 2 layers, d_model 32, 4 heads of 8, learned positions over a 256-token window (1 + 255).
ModelConfig bench_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 32;
  c.n_head = 4;
  c.n_kv_head = 4;
  c.head_dim = 8;
  c.vocab_size = 96;
  c.block_size = 256;
  return c;
}

__extension__ typedef unsigned __int128 u128;

/// The closed forms of the work of generating n tokens after a P-token prompt with model c.
struct Work {
  u128 positions = 0, flops = 0;
};
Work formula(const ModelConfig& c, u128 P, u128 n, bool cached) {
  const u128 L = static_cast<u128>(c.n_layer), d = static_cast<u128>(c.d_model);
  const u128 qw = static_cast<u128>(c.n_head * c.head_dim), kvw = static_cast<u128>(c.kv_width());
  // Per position: QKV, O, MLP in every layer, and the LM head; per (query, key) pair 4·n_head·hd.
  const u128 per_position = L * (2 * d * (qw + 2 * kvw) + 2 * qw * d + 16 * d * d) + 2 * d * static_cast<u128>(c.vocab_size);
  const u128 per_pair = L * 4 * qw;
  Work w;
  u128 pairs = 0;
  if (!cached) {
    // step j feeds m = P + j tokens (j = 0 .. n − 1): m positions, m(m + 1)/2 pairs
    for (u128 m = P; m < P + n; ++m) w.positions += m, pairs += m * (m + 1) / 2;
  } else {
    // prefill of P, then one token at position t = P .. P + n − 2, seeing t + 1 keys
    w.positions = P + (n - 1);
    pairs = P * (P + 1) / 2;
    for (u128 t = P; t + 1 < P + n; ++t) pairs += t + 1;
  }
  w.flops = w.positions * per_position + pairs * per_pair;
  return w;
}

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::vector<int> bench_lengths(bool long_sweep) {
  if (long_sweep) return {16, 32, 64, 96, 128, 192, 255};
  return {32, 64};
}

namespace {

// The bench model (or the --weights file's model as it is: the counts follow its config; the ×10
// embedding that makes a random model's output follow its input is not applied).
MiniGPT<double> bench_model(const BenchGenerateOptions& o, const RunContext& ctx) {
  const std::vector<int> lengths = bench_lengths(o.long_sweep);
  const int need = kPrompt + lengths.back();
  MiniGPT<double> model = check_model<double>(
      bench_config(), ctx, kName,
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (greedy generation)"},
       {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0"},
       {"block_size", [need](const ModelConfig& c) { return c.block_size >= need; },
        fmt::format(">= prompt {} + the longest length {} = {}{}", kPrompt, lengths.back(), need,
                    o.long_sweep ? " (--long)" : "")}});
  if (ctx.weights.empty()) {
    model.weights().wte *= 10.0;  // as in greedy-generate: make the random model's output follow its input
    model.weights().wpe *= 10.0;
  }
  return model;
}

// |counted − closed form|, at least 1 when they differ (a gap smaller than a double's spacing
// would otherwise read as 0).
double gap(std::uint64_t counted, u128 expected) {
  if (counted == expected) return 0.0;
  return std::max(1.0, std::abs(static_cast<double>(counted) - static_cast<double>(expected)));
}

}  // namespace

BenchGenerateMeasured measure_bench_generate(const BenchGenerateOptions& o, const RunContext& ctx,
                                             const BenchGenerateParts& parts) {
  const auto schedule = parts.schedule ? parts.schedule : [](GenerationMode m, std::int64_t p, std::int64_t n,
                                                             std::optional<std::int64_t> b) {
    return generation_schedule(m, p, n, b);
  };
  const MiniGPT<double> model = bench_model(o, ctx);
  BenchGenerateMeasured m{.options = o, .context = ctx, .config = model.config()};
  const ModelConfig& cfg = m.config;
  const auto prompt = random_tokens(ctx.seed + 1, kPrompt, cfg.vocab_size);
  const auto window = position_window(cfg);
  for (int n : bench_lengths(o.long_sweep)) {
    const auto naive_calls = schedule(GenerationMode::naive, kPrompt, n, window);
    const auto cached_calls = schedule(GenerationMode::cached, kPrompt, n, window);
    BenchLength len{.n = n, .naive = count_schedule(cfg, naive_calls), .cached = count_schedule(cfg, cached_calls)};
    const Work fn = formula(cfg, kPrompt, static_cast<u128>(n), false), fc = formula(cfg, kPrompt, static_cast<u128>(n), true);
    len.positions_gap = std::max(gap(len.naive.positions, fn.positions), gap(len.cached.positions, fc.positions));
    len.flops_gap = std::max(gap(len.naive.total(), fn.flops), gap(len.cached.total(), fc.flops));
    std::vector<double> t_naive, t_cached;
    std::vector<int> out_naive, out_cached;
    for (int rep = 0; rep < o.repeats; ++rep) {
      t_naive.push_back(seconds([&] { out_naive = run_schedule<double>(model, prompt, naive_calls); }));
      t_cached.push_back(seconds([&] { out_cached = run_schedule<double>(model, prompt, cached_calls); }));
    }
    for (std::size_t i = 0; i < std::max(out_naive.size(), out_cached.size()); ++i)
      len.differing += (i < out_naive.size() && i < out_cached.size() && out_naive[i] == out_cached[i]) ? 0 : 1;
    len.seconds_per_token_naive = median(t_naive) / n;
    len.seconds_per_token_cached = median(t_cached) / n;
    m.lengths.push_back(len);
  }
  return m;
}

std::vector<Expectation> judge_bench_generate(const BenchGenerateMeasured& m) {
  double worst_positions = 0, worst_flops = 0, differing = 0;
  for (const BenchLength& len : m.lengths) {
    worst_positions = std::max(worst_positions, len.positions_gap);
    worst_flops = std::max(worst_flops, len.flops_gap);
    differing += len.differing;
  }
  const char* exact = "integer counts against exact closed forms: 0 (measured: the worst |counted − formula| over the lengths)";
  return {{"positions fed, naive n(n+1)/2 and cached n, counted vs formula", "004 §B.5, §1.1", "positions", 0, 0, exact,
           worst_positions},
          {"FLOPs of the forward calls, naive and cached, counted vs formula", "004 §1.1", "FLOP", 0, 0, exact, worst_flops},
          {"generated tokens that differ, naive vs cached (all lengths)", "004 §3.5", "tokens", 0, 0,
           "token ids are integers: the two generators must be compared on the same output", differing}};
}

namespace {

void present(const BenchGenerateMeasured& m, Result& r) {
  const ModelConfig& cfg = m.config;
  const RunContext& ctx = m.context;
  Table work{"work per generation (counted over the generators' real schedules; formula: closed forms)",
             {"length n", "naive positions", "cached positions", "naive FLOPs", "cached FLOPs", "FLOPs naive / cached",
              "differing tokens"}, {}};
  Table timing{fmt::format("timing (varies run to run; median of {} runs per cell; shown, not judged)", m.options.repeats),
               {"length n", "naive ms/token", "cached ms/token", "naive / cached"}, {}};
  Plot plot{"per-token time of greedy generation against its length (004 §B.5)", "generated tokens n", "ms per token (log scale)",
            false, true, {}};
  PlotSeries naive_series{"naive (recompute the window)", {}, {}, "linespoints"};
  PlotSeries cached_series{"KV cache", {}, {}, "linespoints"};
  for (const BenchLength& len : m.lengths) {
    const int n = len.n;
    const double ms_naive = len.seconds_per_token_naive * 1e3, ms_cached = len.seconds_per_token_cached * 1e3;
    work.rows.push_back({std::int64_t{n}, static_cast<std::int64_t>(len.naive.positions),
                         static_cast<std::int64_t>(len.cached.positions), static_cast<double>(len.naive.total()),
                         static_cast<double>(len.cached.total()),
                         static_cast<double>(len.naive.total()) / static_cast<double>(len.cached.total()), len.differing});
    timing.rows.push_back({std::int64_t{n}, ms_naive, ms_cached, ms_naive / ms_cached});
    naive_series.x.push_back(n);
    naive_series.y.push_back(ms_naive);
    cached_series.x.push_back(n);
    cached_series.y.push_back(ms_cached);
    r.metric(fmt::format("seconds_per_token_naive_{}", n), ms_naive / 1e3);
    r.metric(fmt::format("seconds_per_token_cached_{}", n), ms_cached / 1e3);
    r.metric_exact(fmt::format("positions_naive_{}", n), len.naive.positions);
    r.metric_exact(fmt::format("positions_cached_{}", n), len.cached.positions);
  }
  r.tables.push_back(std::move(work));
  r.tables.push_back(std::move(timing));
  plot.series.push_back(std::move(naive_series));
  plot.series.push_back(std::move(cached_series));
  r.plots.push_back(std::move(plot));
  if (!ctx.weights.empty()) r.notes.push_back(weights_note(cfg, ctx.weights) + " (its weights as stored)");
  r.notes.push_back(fmt::format("mini-GPT for the bench: {} layers, d_model {}, {} heads of {}, learned positions, block_size "
                                "{}, float64 on the CPU, seed {}; 1-token prompt, greedy.", cfg.n_layer, cfg.d_model,
                                cfg.n_head, cfg.head_dim, cfg.block_size, ctx.seed));
  r.notes.push_back("the naive step at n tokens costs about n times a cached step (plus attention's n² term), so its "
                    "per-token time grows linearly with n; the cached step only adds one query's attention over n keys. "
                    "Times here are CPU wall-clock on a shared machine: compare their shape, not their digits. "
                    "--long runs 004 §B.5's lengths 64, 128, 255 within a sweep.");
}

}  // namespace

const CheckDef<BenchGenerateOptions, BenchGenerateMeasured>& bench_generate_check() {
  using O = BenchGenerateOptions;
  static const CheckDef<O, BenchGenerateMeasured> def{
      .spec = {.name = kName,
               .order = 360,
               .source = kSource,
               .summary = "naive vs cached generation: work counted (judged), per-token time and plot (shown)",
               .claim_zh = "朴素与带缓存生成：计数的工作量（判定）与每 token 时间（展示）",
               .description =
                   "Generates greedily with a small mini-GPT, naively and with the KV cache, for lengths 32 and\n"
                   "64 (--long: 16 .. 255, with 004 §B.5's 64, 128, 255). Judges the counted work against\n"
                   "n(n+1)/2 vs n positions and the FLOP closed forms; times each (median of --repeats) and\n"
                   "plots ms/token against n (--plot), without judging the times.",
               .derivation =
                   "Naive step j recomputes the whole prefix of P + j tokens; over n steps after a 1-token prompt\n"
                   "that is Σ_{m=1}^{n} m = n(n+1)/2 positions. The cached generator feeds each token once: n.\n"
                   "FLOPs: per position 24d² per layer (+ the LM head), per (query, key) pair 4d: the naive\n"
                   "total is O(n²d² + n³d), the cached O(nd² + n²d) (004 §1.1), so the per-token time of the\n"
                   "naive generator grows with n and the cached one stays nearly flat. Source: 004 §B.5, §1.1.",
               .traits = {.weights = true, .plot = true}},
      .options = {{"--long", &O::long_sweep, Allowed::any_value(), "004 §B.5's lengths 64, 128, 255 in a sweep 16 .. 255"},
                  {"--repeats", &O::repeats, Allowed::integers(1, kMaxRepeats), "Timing runs per cell (median)"}},
      .constraints = {},
      .measure = [](const O& o, const RunContext& ctx) { return measure_bench_generate(o, ctx); },
      .judge = judge_bench_generate,
      .present = present,
      .claim =
          [](const BenchGenerateMeasured& m) {
            return fmt::format("Generating n tokens naively processes n(n+1)/2 positions, with the KV cache n: per-token "
                               "time grows with n for the naive generator and stays nearly flat for the cached one "
                               "(lengths {}).",
                               fmt::join(bench_lengths(m.options.long_sweep), ", "));
          }};
  return def;
}

Result run_bench_generate(const BenchGenerateOptions& o, const RunContext& ctx, const BenchGenerateParts& parts) {
  return run_check(bench_generate_check(), o, ctx, [&parts](const BenchGenerateOptions& opts, const RunContext& c) {
    return measure_bench_generate(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(bench_generate_check);

}  // namespace kvlab::checks::bench_generate
