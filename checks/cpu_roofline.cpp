// cpu-roofline — decode is bandwidth-bound and prefill compute-bound on the student's own machine.
// Source: 004 §1.5 (group 5); 000 §3.1; the 80% and 60% thresholds are kvlab's own goals for its fast path.
//
// The machine's two roofs are measured in the same run (lib/bench/machine.hpp): STREAM copy
// bandwidth over arrays far larger than the caches, and the float32 GEMM rate. A bench-size
// mini-GPT (d 1024, 6 layers, GQA 16/4, vocab 8192: ≈ 330 MB of float32 weights, several times
// this VM's effective last-level cache, docs/perf.md) runs on kvlab's fast f32 path
// (model/fast_gpt.hpp). Every decode step (batch 1…64 × context 128…4096) and every prefill
// (prompt 32…512) is timed against its bound max(bytes / bandwidth, FLOPs / rate), bytes and FLOPs
// counted as 004 §1.5 counts them (model/fast_gpt.hpp, decode_step_cost, prefill_cost).
//
// Paired table: at the smallest context, decode at batch 1, 2, 4, 8 and the verify step of
// speculative decoding (FastGpt::extend of K + 1 = 2, 5, 9 tokens over the cached prefix), each
// timing preceded by one copy pass over the same arrays (bench/machine.hpp, CopyProbe): copy,
// step, copy, step …, so that each step's achieved bandwidth is divided by the roof of that moment
// (a roof measured once drifted 17.7–25 GB/s between runs on this shared machine).
//
// Verdict: batch-1 decode reaches at least 80% of the copy rate (median of its --repeats paired
// ratios), and the longest prefill at least 60% of the measured GEMM rate (median of --repeats
// timings); the ranges are in the tables, so a noisy run shows as a spread. The paired batches 2-8
// and the verify steps are shown (metrics bw_fraction_batch_N, bw_fraction_verify_N), not judged.
// The batch where decode turns compute-bound is compared with the ridge point, not judged.
// A benchmark: not in `kvlab all` (only `kvlab all --bench`) nor in ctest's verdict; its logic is
// unit-tested on synthetic timings (tests/test_cpuroof.cpp).
//
//   kvlab cpu-roofline                       about a minute
//   kvlab cpu-roofline --quick               a tiny model, seconds (a smoke test)
//   kvlab cpu-roofline --plot roof.svg
#include "cpu_roofline.hpp"

#include <algorithm>
#include <functional>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "bench/machine.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/work_budget.hpp"
#include "model/f32_kernels.hpp"
#include "model/fast_gpt.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

constexpr const char* kName = "cpu-roofline";
constexpr const char* kSource = "004 §1.5 (group 5); 000 §3.1";
constexpr double kDecodeShare = 0.8;   // kvlab's goal: batch-1 decode ≥ 80% of the measured bandwidth
constexpr double kPrefillShare = 0.6;  // kvlab's goal: long prefill ≥ 60% of the measured GEMM rate
// The paired table: batched decode and the verify step of speculative decoding (K + 1 rows over a
// cached prefix), each timing paired with a copy pass measured just before it.
constexpr int kPairedBatches[] = {1, 2, 4, 8};
constexpr int kPairedVerify[] = {2, 5, 9};
constexpr int kPairedMaxRows = 9;

std::string range_ms(const std::vector<double>& t) {
  const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
  return fmt::format("{:.4g}–{:.4g}", *lo * 1e3, *hi * 1e3);
}

void check_list(const char* option, const std::vector<int>& v, int lo, int hi) {
  if (v.empty()) throw InputError(fmt::format("{}: give at least one value in [{}, {}]", option, lo, hi));
  for (int x : v)
    if (x < lo || x > hi) throw InputError(fmt::format("{}: every value must be in [{}, {}] (got {})", option, lo, hi, x));
}

struct Point {
  int batch = 0, ctx = 0;  // prefill: batch 1, ctx = prompt length
  StepCost cost;
  std::vector<double> times;
  double median_s = 0.0, bound_s = 0.0;
};

// Positions the bench model holds: the longest decode context and its new token, the paired verify
// steps over the smallest context, the longest prompt.
int model_max_ctx(const CpuRooflineOptions& o) {
  return std::max({o.contexts.back() + 1, o.contexts.front() + kPairedMaxRows, o.prompts.back()});
}

}  // namespace

ModelConfig cpu_roofline_config(const CpuRooflineOptions& o) {
  ModelConfig c;
  c.d_model = o.quick ? 128 : o.d_model;
  c.n_layer = o.quick ? 2 : o.layers;
  c.n_head = o.quick ? 4 : o.n_head;
  c.n_kv_head = o.quick ? 2 : o.n_kv_head;
  c.head_dim = c.d_model / c.n_head;
  c.vocab_size = o.quick ? 512 : o.vocab;
  c.block_size = model_max_ctx(o) + 1;
  return c;
}

CpuRooflineWork cpu_roofline_work(const CpuRooflineOptions& o) {
  const ModelConfig c = cpu_roofline_config(o);
  MachineOptions mo;
  mo.stream_bytes_per_array = static_cast<std::uint64_t>(o.stream_mib) << 20;
  mo.repeats = o.repeats;
  mo.gemm_n = o.quick ? 256 : 2048;
  const MachineWork machine = machine_work(mo);
  const double d = c.d_model, kv_w = c.kv_width(), L = c.n_layer;
  const double params = static_cast<double>(streamed_parameters(c)) + (c.vocab_size + c.block_size) * d;
  const int max_batch = std::max(o.batches.back(), kPairedBatches[3]), max_ctx = model_max_ctx(o);
  const double cache_floats = 2.0 * L * kv_w * static_cast<double>(o.max_cached_tokens);
  const double rows = std::max(max_batch, o.prompts.back());
  const double activations = rows * (6.0 * d + 3.0 * kv_w + c.vocab_size) + 2.0 * 256.0 * max_ctx;  // x, h, qkv, att, mlp; scores
  CpuRooflineWork w;
  w.peak_bytes = std::max(machine.peak_bytes, 4.0 * (2.0 * params + cache_floats + activations));
  // Drawing the reference model's weights and the cache's values, then copying the weights.
  double seconds = (params + cache_floats) / kRefRandomFloatsPerSecond + 8.0 * params / kRefStreamBytesPerSecond;
  seconds += machine.stream_bytes / kRefStreamBytesPerSecond + machine.gemm_flops / kRefGemmFlopsPerSecond;
  auto point = [&](const StepCost& s) {
    return (o.repeats + 1) * (s.bytes / kRefStreamBytesPerSecond + s.flops / kRefGemmFlopsPerSecond);
  };
  for (int B : o.batches)
    for (int n : o.contexts)
      if (static_cast<std::int64_t>(B) * (n + 1) <= o.max_cached_tokens) seconds += point(decode_step_cost(c, B, n));
  for (int len : o.prompts) seconds += point(prefill_cost(c, len));
  // The paired table: per repeat and point, one copy pass and a warm-up plus a timed step.
  const double copy_pass = 2.0 * static_cast<double>(mo.stream_bytes_per_array) / kRefStreamBytesPerSecond;
  for (int B : kPairedBatches) seconds += o.repeats * (copy_pass + 2.0 * decode_step_cost(c, B, o.contexts.front()).bytes / kRefStreamBytesPerSecond);
  for (int R : kPairedVerify) seconds += o.repeats * (copy_pass + 2.0 * verify_step_cost(c, R, o.contexts.front()).bytes / kRefStreamBytesPerSecond);
  w.seconds = kBudgetMargin * seconds;
  return w;
}

Result run_cpu_roofline(const CpuRooflineOptions& in, const RunContext& ctx, const CpuRooflineParts& parts) {
  CpuRooflineOptions o = in;
  check_list("--batch", o.batches, 1, 256);
  check_list("--ctx", o.contexts, 1, 65536);
  check_list("--prompt", o.prompts, 1, 8192);
  if (o.d_model % o.n_head != 0)
    throw InputError(fmt::format("--d-model: must be a multiple of --heads = {} (got {})", o.n_head, o.d_model));
  if (o.n_head % o.n_kv_head != 0)
    throw InputError(fmt::format("--kv-heads: must divide --heads = {} (got {})", o.n_head, o.n_kv_head));
  if (o.quick) {
    o.batches = {1, 4};
    o.contexts = {16, 63};
    o.prompts = {16, 64};
    o.repeats = std::min(o.repeats, 2);
    o.stream_mib = 16;
    o.max_cached_tokens = 4 * 64;
  }
  std::sort(o.batches.begin(), o.batches.end());
  o.batches.erase(std::unique(o.batches.begin(), o.batches.end()), o.batches.end());
  std::sort(o.contexts.begin(), o.contexts.end());
  o.contexts.erase(std::unique(o.contexts.begin(), o.contexts.end()), o.contexts.end());
  std::sort(o.prompts.begin(), o.prompts.end());
  o.prompts.erase(std::unique(o.prompts.begin(), o.prompts.end()), o.prompts.end());
  // A decode point holds batch x (ctx + 1) positions (the step's own token too); with none that
  // fits, the decode table would be empty (--batch 256 with the default --ctx was an internal error).
  if (static_cast<std::int64_t>(o.batches.front()) * (o.contexts.front() + 1) > o.max_cached_tokens)
    throw InputError(fmt::format("--max-cached-tokens: must hold at least batch {} x (ctx {} + 1) (got {})",
                                 o.batches.front(), o.contexts.front(), o.max_cached_tokens));
  const ModelConfig c = cpu_roofline_config(o);
  c.validate();
  if (!parts.machine && !parts.time_decode && !parts.time_prefill) {
    // The work budget (core/work_budget.hpp): --d-model 4096 --layers 48 would build 38 GB of
    // weights, and 50 repeats of the largest grid would run for hours.
    const CpuRooflineWork w = cpu_roofline_work(o);
    const std::string flags = fmt::format(
        "--d-model {} x --layers {} x --vocab {} x --batch {} x --ctx {} x --prompt {} x --repeats {} x --stream-mib {}",
        o.d_model, o.layers, o.vocab, o.batches.back(), o.contexts.back(), o.prompts.back(), o.repeats, o.stream_mib);
    require_memory_budget(w.peak_bytes, flags, "a smaller --d-model, --layers or --max-cached-tokens");
    if (!within_work_budget(w.seconds)) {
      CpuRooflineOptions one = o;
      one.repeats = 1;
      std::string hint = "a smaller model or grid: one repeat alone is over it";
      if (within_work_budget(cpu_roofline_work(one).seconds))
        hint = fmt::format("at most --repeats {} with this model and grid", largest_fitting(1, o.repeats, [&](std::int64_t r) {
                             CpuRooflineOptions t = o;
                             t.repeats = static_cast<int>(r);
                             return within_work_budget(cpu_roofline_work(t).seconds);
                           }));
      require_work_budget(w.seconds, flags, hint);
    }
  }

  // ---- the parts: this machine and the fast path, unless injected --------------------------
  CpuRooflineParts p = parts;
  std::shared_ptr<FastGpt> fast;
  auto model = [&]() -> FastGpt& {
    if (!fast) {
      const MiniGPT<float> ref(c, ctx.seed);
      const int max_batch = std::max(o.batches.back(), kPairedBatches[3]);
      const int max_ctx = model_max_ctx(o);
      fast = std::make_shared<FastGpt>(ref, max_batch, max_ctx, std::max(o.prompts.back(), kPairedMaxRows),
                                       std::max<std::int64_t>(o.max_cached_tokens, kPairedBatches[3] * (o.contexts.front() + 1)));
      fast->fill_cache(ctx.seed);
    }
    return *fast;
  };
  if (!p.machine)
    p.machine = [&] {
      MachineOptions mo;
      mo.stream_bytes_per_array = static_cast<std::uint64_t>(o.stream_mib) << 20;
      mo.repeats = o.repeats;
      mo.gemm_n = o.quick ? 256 : 2048;
      const MachineMeasurement m = measure_machine(mo);
      return MachineRoof{m.copy_bytes_per_s, m.gemm_flops_per_s, m.copy_runs, m.gemm_runs,
                         fmt::format("STREAM copy over 2 x {} MiB and an n = {} float32 GEMM ({}), {} threads, "
                                     "load average {:.2f} at the start",
                                     o.stream_mib, mo.gemm_n, m.gemm_backend, m.threads, m.load_average)};
    };
  // One timed step per repeat, each from the same cache length; run 0 warms the caches and threads.
  const auto time_steps = [](FastGpt& f, int n_ctx, int repeats, const std::function<void()>& step) {
    std::vector<double> t;
    for (int r = 0; r <= repeats; ++r) {
      f.set_length(n_ctx);
      const double t0 = steady_seconds();
      step();
      if (r > 0) t.push_back(steady_seconds() - t0);
    }
    return t;
  };
  if (!p.time_decode)
    p.time_decode = [&](const ModelConfig& cfg, int batch, int n_ctx, int repeats) {
      FastGpt& f = model();
      f.set_shape(batch, n_ctx + 1);
      std::vector<int> tok(batch, 1);
      std::vector<float> logits(static_cast<std::size_t>(batch) * cfg.vocab_size);
      return time_steps(f, n_ctx, repeats, [&] { f.decode(tok, logits); });
    };
  if (!p.time_verify)
    p.time_verify = [&](const ModelConfig& cfg, int rows, int n_ctx, int repeats) {
      FastGpt& f = model();
      f.set_shape(1, n_ctx + rows);
      std::vector<int> tok(rows, 1);
      std::vector<float> logits(static_cast<std::size_t>(rows) * cfg.vocab_size);
      return time_steps(f, n_ctx, repeats, [&] { f.extend(tok, logits); });
    };
  std::shared_ptr<CopyProbe> probe;
  if (!p.copy_rate && !parts.machine)
    p.copy_rate = [&] {
      if (!probe) probe = std::make_shared<CopyProbe>(static_cast<std::uint64_t>(o.stream_mib) << 20);
      return probe->measure();
    };
  if (!p.time_prefill)
    p.time_prefill = [&](const ModelConfig& cfg, int len, int repeats) {
      FastGpt& f = model();
      f.set_shape(1, std::max(len, o.contexts.back() + 1));
      std::vector<int> prompt(len);
      for (int i = 0; i < len; ++i) prompt[i] = (i * 7 + 1) % cfg.vocab_size;
      std::vector<float> logits(cfg.vocab_size);
      std::vector<double> t;
      for (int r = 0; r <= repeats; ++r) {
        const double t0 = steady_seconds();
        f.prefill(prompt, logits);
        if (r > 0) t.push_back(steady_seconds() - t0);
      }
      return t;
    };

  // ---- measure -------------------------------------------------------------------------------
  // On a terminal (the real parts only): about how long, up front, then a progress line whose
  // work is the budget's estimate of each part in seconds of the reference machine.
  const bool real = !parts.machine && !parts.time_decode && !parts.time_prefill;
  const CpuRooflineWork est = real ? cpu_roofline_work(o) : CpuRooflineWork{};
  Progress progress = real ? Progress::on_stderr(std::string(kName), est.seconds)
                           : Progress(std::string(kName), 0, "", nullptr, false);
  progress.announce(fmt::format("about {} on the reference machine (machine roof, {} decode and {} prefill points, "
                                "{} repeats each)",
                                duration_text(est.seconds), o.batches.size() * o.contexts.size(), o.prompts.size(),
                                o.repeats));
  const auto step_seconds = [&](const StepCost& s) {
    return (o.repeats + 1) * (s.bytes / kRefStreamBytesPerSecond + s.flops / kRefGemmFlopsPerSecond);
  };
  double est_done = 0;
  const auto advance = [&](double seconds, const std::string& what) {
    est_done += seconds;
    progress.update(est_done, what);
  };
  const MachineRoof roof = p.machine();
  {
    MachineOptions mo;
    mo.stream_bytes_per_array = static_cast<std::uint64_t>(o.stream_mib) << 20;
    mo.repeats = o.repeats;
    mo.gemm_n = o.quick ? 256 : 2048;
    advance(machine_work_seconds(mo), "machine roof");
  }
  if (!(roof.bandwidth_bytes_per_s > 0) || !(roof.flops_per_s > 0) || !std::isfinite(roof.bandwidth_bytes_per_s) ||
      !std::isfinite(roof.flops_per_s))
    throw std::runtime_error("cpu-roofline: the machine measurement gave no finite positive rates");
  const double bw = roof.bandwidth_bytes_per_s, rate = roof.flops_per_s, ridge = rate / bw;
  auto finish = [&](Point& pt) {
    if (pt.times.empty()) throw std::runtime_error("cpu-roofline: a timer returned no timings");
    pt.median_s = median(pt.times);
    pt.bound_s = std::max(pt.cost.bytes / bw, pt.cost.flops / rate);
  };
  std::vector<Point> decode, prefill;
  for (int B : o.batches)
    for (int n : o.contexts) {
      if (static_cast<std::int64_t>(B) * (n + 1) > o.max_cached_tokens) continue;
      Point pt{B, n, decode_step_cost(c, B, n), p.time_decode(c, B, n, o.repeats)};
      finish(pt);
      advance(step_seconds(pt.cost), fmt::format("decode, batch {}, ctx {}", B, n));
      decode.push_back(std::move(pt));
    }
  for (int len : o.prompts) {
    Point pt{1, len, prefill_cost(c, len), p.time_prefill(c, len, o.repeats)};
    finish(pt);
    advance(step_seconds(pt.cost), fmt::format("prefill, {} tokens", len));
    prefill.push_back(std::move(pt));
  }
  // Paired: copy, step, copy, step ... at the smallest context, repeat by repeat over all points,
  // so that each step's achieved bandwidth is divided by a roof measured a moment before it.
  struct Paired {
    std::string what, key;
    StepCost cost;
    std::vector<double> times, rates, fractions;
  };
  std::vector<Paired> paired;
  const int ctx0 = o.contexts.front();
  for (int B : kPairedBatches)
    paired.push_back({fmt::format("decode, batch {}", B), fmt::format("batch_{}", B), decode_step_cost(c, B, ctx0), {}, {}, {}});
  for (int R : kPairedVerify)
    paired.push_back({fmt::format("verify, K + 1 = {} rows", R), fmt::format("verify_{}", R), verify_step_cost(c, R, ctx0), {}, {}, {}});
  for (int rep = 0; rep < o.repeats; ++rep)
    for (std::size_t i = 0; i < paired.size(); ++i) {
      Paired& pp = paired[i];
      const double rate = p.copy_rate ? p.copy_rate() : bw;
      const bool verify = i >= std::size(kPairedBatches);
      const int n = verify ? kPairedVerify[i - std::size(kPairedBatches)] : kPairedBatches[i];
      const std::vector<double> t = verify ? p.time_verify(c, n, ctx0, 1) : p.time_decode(c, n, ctx0, 1);
      if (t.empty() || !(rate > 0) || !std::isfinite(rate)) throw std::runtime_error("cpu-roofline: a paired timing gave no value");
      pp.times.push_back(t.front());
      pp.rates.push_back(rate);
      pp.fractions.push_back(pp.cost.bytes / t.front() / rate);
      advance(2.0 * static_cast<double>(o.stream_mib) * 1048576.0 / kRefStreamBytesPerSecond +
                  2.0 * pp.cost.bytes / kRefStreamBytesPerSecond,
              "paired: " + pp.what);
    }
  progress.finish();

  // ---- report --------------------------------------------------------------------------------
  Result r;
  r.check = kName;
  r.source = kSource;
  r.claim = fmt::format(
      "On this machine decode is bandwidth-bound and prefill compute-bound: batch-1 decode streams its "
      "bytes (weights + KV cache) at ≥ {:.0f}% of the measured memory bandwidth, a long prefill runs at "
      "≥ {:.0f}% of the measured float32 GEMM rate, and decode turns compute-bound near the batch the "
      "ridge point predicts.", kDecodeShare * 100, kPrefillShare * 100);

  Table td{"decode steps against the roof", {"batch", "ctx", "MB", "GFLOP", "FLOP/B", "bound ms", "median ms", "range ms",
                                             "GB/s", "% of bw", "GFLOP/s", "% of rate", "bound by"}, {}};
  std::vector<double> b1_fraction;
  for (const auto& pt : decode) {
    const double gbs = pt.cost.bytes / pt.median_s / 1e9, gfs = pt.cost.flops / pt.median_s / 1e9;
    const bool mem = pt.cost.bytes / bw >= pt.cost.flops / rate;
    td.rows.push_back({static_cast<std::int64_t>(pt.batch), static_cast<std::int64_t>(pt.ctx), pt.cost.bytes / 1e6,
                       pt.cost.flops / 1e9, pt.cost.flops / pt.cost.bytes, pt.bound_s * 1e3, pt.median_s * 1e3,
                       range_ms(pt.times), gbs, 100 * gbs * 1e9 / bw, gfs, 100 * gfs * 1e9 / rate,
                       std::string(mem ? "memory" : "compute")});
    if (pt.batch == o.batches.front()) b1_fraction.push_back(pt.cost.bytes / pt.median_s / bw);
  }
  Table tpair{fmt::format("paired with the copy rate measured just before each step (ctx {}; copy, step, copy, step …)", ctx0),
              {"step", "MB", "median ms", "copy GB/s (median)", "achieved / copy (median)", "range"}, {}};
  for (const auto& pp : paired) {
    const auto [lo, hi] = std::minmax_element(pp.fractions.begin(), pp.fractions.end());
    tpair.rows.push_back({pp.what, pp.cost.bytes / 1e6, median(pp.times) * 1e3, median(pp.rates) / 1e9,
                          median(pp.fractions), fmt::format("{:.3f}–{:.3f}", *lo, *hi)});
  }
  Table tp{"prefill against the roof", {"prompt", "GFLOP", "FLOP/B", "bound ms", "median ms", "range ms", "GFLOP/s",
                                        "% of rate"}, {}};
  for (const auto& pt : prefill) {
    const double gfs = pt.cost.flops / pt.median_s / 1e9;
    tp.rows.push_back({static_cast<std::int64_t>(pt.ctx), pt.cost.flops / 1e9, pt.cost.flops / pt.cost.bytes,
                       pt.bound_s * 1e3, pt.median_s * 1e3, range_ms(pt.times), gfs, 100 * gfs * 1e9 / rate});
  }

  // Decode at the smallest context over batch: where does the step stop costing the same?
  // Predicted: the batch where FLOPs / rate overtakes bytes / bandwidth. Measured: the flat
  // (memory) time of the smallest batch, crossed by the line through the largest batch's time
  // (t ∝ B once compute-bound).
  std::vector<const Point*> sweep;
  for (const auto& pt : decode)
    if (pt.ctx == ctx0) sweep.push_back(&pt);
  double predicted = std::nan(""), measured = std::nan("");
  {
    const StepCost one = decode_step_cost(c, 1, ctx0), two = decode_step_cost(c, 2, ctx0);
    const double per_b_bytes = two.bytes - one.bytes, w_bytes = one.bytes - per_b_bytes, per_b_flops = one.flops;
    const double denom = per_b_flops / rate - per_b_bytes / bw;  // extra compute time per sequence beyond its bytes
    if (denom > 0) predicted = (w_bytes / bw) / denom;
    if (sweep.size() >= 2) {
      const Point& lo = *sweep.front();
      const Point& hi = *sweep.back();
      if (hi.median_s > 1.25 * lo.median_s) measured = lo.median_s / (hi.median_s / hi.batch);
    }
  }
  Table tc{"where decode turns compute-bound (ctx " + std::to_string(ctx0) + ")", {"quantity", "value"}, {}};
  tc.rows.push_back({std::string("ridge point = GEMM rate / bandwidth (FLOP/B)"), ridge});
  tc.rows.push_back({std::string("batch predicted by the roof (FLOPs/rate = bytes/bandwidth)"),
                     std::isnan(predicted) ? Cell(std::string("never (KV bytes grow faster)")) : Cell(predicted)});
  tc.rows.push_back({std::string("batch measured (flat time of the smallest batch meets t ∝ B of the largest)"),
                     std::isnan(measured) ? std::string(fmt::format("not reached by batch {}", o.batches.back()))
                                          : Cell(measured)});

  const double b1_unpaired = median(b1_fraction);
  const double b1 = median(paired.front().fractions);
  const Point& longest = prefill.back();
  const double pf = longest.cost.flops / longest.median_s / rate;
  const std::string judged = fmt::format("judged on the median of {} timings per point; their range is in the table", o.repeats);
  r.expect({fmt::format("decode at batch 1, ctx {}: achieved / copy rate measured just before (median of {} pairs; capped at 1)",
                        ctx0, paired.front().fractions.size()),
            "004 §1.5 (kvlab's goal)", "ratio", 1.0, 1.0 - kDecodeShare,
            fmt::format("the claim's threshold: at least {:.0f}% of the roof; {}", kDecodeShare * 100, judged),
            std::min(1.0, b1)});
  r.expect({fmt::format("prefill of {} tokens: achieved / measured GEMM rate (capped at 1)", longest.ctx),
            "004 §1.5 (kvlab's goal)", "ratio", 1.0, 1.0 - kPrefillShare,
            fmt::format("the claim's threshold: at least {:.0f}% of the roof; {}", kPrefillShare * 100, judged),
            std::min(1.0, pf)});

  r.metric("copy_bytes_per_s", bw);
  r.metric("gemm_flops_per_s", rate);
  r.metric("ridge", ridge);
  r.metric("decode_bandwidth_fraction", b1);
  r.metric("decode_bandwidth_fraction_unpaired", b1_unpaired);
  for (const auto& pp : paired) r.metric("bw_fraction_" + pp.key, median(pp.fractions));
  r.metric("prefill_rate_fraction", pf);
  // 0 where there is none (the roof never turns, or the sweep did not reach the turn): no NaN in
  // the output contract.
  r.metric("crossover_batch_predicted", std::isnan(predicted) ? 0.0 : predicted);
  r.metric("crossover_batch_measured", std::isnan(measured) ? 0.0 : measured);
  r.metric("weight_bytes", 4.0 * static_cast<double>(streamed_parameters(c)));
  r.tables.push_back(std::move(tpair));
  r.tables.push_back(std::move(td));
  r.tables.push_back(std::move(tp));
  r.tables.push_back(std::move(tc));

  const auto [bw_lo, bw_hi] = std::minmax_element(roof.bandwidth_runs.begin(), roof.bandwidth_runs.end());
  const auto [fl_lo, fl_hi] = std::minmax_element(roof.flops_runs.begin(), roof.flops_runs.end());
  r.notes.push_back(fmt::format(
      "machine: {:.3f} GB/s copy (runs {:.3f}–{:.3f}), {:.1f} GFLOP/s float32 GEMM (runs {:.1f}–{:.1f}); {}.", bw / 1e9,
      roof.bandwidth_runs.empty() ? bw / 1e9 : *bw_lo / 1e9, roof.bandwidth_runs.empty() ? bw / 1e9 : *bw_hi / 1e9,
      rate / 1e9, roof.flops_runs.empty() ? rate / 1e9 : *fl_lo / 1e9, roof.flops_runs.empty() ? rate / 1e9 : *fl_hi / 1e9,
      roof.what));
  r.notes.push_back(fmt::format(
      "model: mini-GPT d {}, {} layers, {} heads / {} K/V heads of {}, vocab {}: {:.0f} MB of float32 weights streamed "
      "per step; fast path ({} threads, {} kernels, prefill GEMMs: {}). Bytes = weights + each sequence's KV cache read + the new "
      "K/V written; FLOPs = 2 per weight per token + 4·ctx·d_q per token per layer (model/fast_gpt.hpp).",
      c.d_model, c.n_layer, c.n_head, c.n_kv_head, c.head_dim, c.vocab_size, 4.0 * static_cast<double>(streamed_parameters(c)) / 1e6,
      fast_threads(), fast_isa(), fast_gemm_backend()));
  if (b1 > 1.0)
    r.notes.push_back(fmt::format("batch-1 decode ran at {:.0f}% of the copy bandwidth: reading streams faster than "
                                  "copying (no writes), or part of the model stayed in cache.", b1 * 100));
  if (pf > 1.0)
    r.notes.push_back(fmt::format("the prefill of {} tokens ran at {:.0f}% of the GEMM rate measured in this run: the "
                                  "rate was measured low (a noisy moment; its runs are in the machine line), so the "
                                  "capped verdict says little about the prefill.", longest.ctx, pf * 100));
  if (o.quick) r.notes.push_back("--quick: a tiny model that fits in cache; the verdict means little, the run is a smoke test.");

  // The roofline drawn with the measured points: achieved FLOP/s against arithmetic intensity.
  Plot plot{"cpu-roofline: this machine's roof and kvlab's measured steps", "arithmetic intensity (FLOP/B)",
            "achieved GFLOP/s", true, true, {}, "bottom right"};  // the points sit near the knee, top left
  PlotSeries roof_line{fmt::format("roof: min({:.1f} GFLOP/s, I x {:.2f} GB/s)", rate / 1e9, bw / 1e9), {}, {}, "lines"};
  for (double i = 0.05; i <= 5000; i *= 1.25) {
    roof_line.x.push_back(i);
    roof_line.y.push_back(std::min(rate, i * bw) / 1e9);
  }
  PlotSeries dec{"decode steps (batch x ctx)", {}, {}, "points"}, pre{"prefill", {}, {}, "points"};
  for (const auto& pt : decode) {
    dec.x.push_back(pt.cost.flops / pt.cost.bytes);
    dec.y.push_back(pt.cost.flops / pt.median_s / 1e9);
  }
  for (const auto& pt : prefill) {
    pre.x.push_back(pt.cost.flops / pt.cost.bytes);
    pre.y.push_back(pt.cost.flops / pt.median_s / 1e9);
  }
  plot.series = {roof_line, dec, pre};
  r.plots.push_back(std::move(plot));
  return r;
}

namespace {

class CpuRoofline final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "benchmark: kvlab's f32 decode/prefill against this machine's measured roofline";
  }
  std::string description() const override {
    return "Measures this machine's memory bandwidth and float32 GEMM rate, then times kvlab's fast\n"
           "float32 decode (batch 1..64 x context 128..4096) and prefill of a bench-size mini-GPT against\n"
           "max(bytes / bandwidth, FLOPs / rate). A benchmark (about a minute): `kvlab all` skips it,\n"
           "`kvlab all --bench` runs it. --plot draws the roof with the measured points.";
  }
  std::string derivation() const override {
    return "A decode step of batch B at context n reads every weight once (4N bytes in float32) and each\n"
           "sequence's cache (2·L·kv_w·4 bytes per position), and does 2NB + 4·B·n·L·d_q FLOPs. Its\n"
           "intensity 2NB / 4N = B/2 FLOP/B at small n is far below a CPU's ridge (GEMM rate / bandwidth,\n"
           "~10-20 FLOP/B), so its time is bytes / bandwidth; it turns compute-bound once B/2 passes the\n"
           "ridge (later with long contexts, whose KV bytes grow with B). A prefill of T tokens does 2NT\n"
           "FLOPs on the same 4N bytes: intensity T/2, compute-bound for T well past 2 x ridge.\n"
           "Source: 004 §1.5 (group 5); 000 §3.1.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--d-model", opts_.d_model, "Model width, 64 to 4096 (default 1024)")->check(IntRange(64, 4096));
    sub.add_option("--layers", opts_.layers, "Layers, 1 to 48 (default 6)")->check(IntRange(1, 48));
    sub.add_option("--heads", opts_.n_head, "Query heads, 1 to 64 (default 16)")->check(IntRange(1, 64));
    sub.add_option("--kv-heads", opts_.n_kv_head, "K/V heads, dividing --heads (default 4)")->check(IntRange(1, 64));
    sub.add_option("--vocab", opts_.vocab, "Vocabulary, 2 to 65536 (default 8192)")->check(IntRange(2, 65536));
    sub.add_option("--batch", opts_.batches, "Decode batch sizes, 1 to 256 (default 1 4 16 64)")
        ->check(IntRange(1, 256));
    sub.add_option("--ctx", opts_.contexts, "Decode contexts, 1 to 65536 (default 128 1024 4096)")
        ->check(IntRange(1, 65536));
    sub.add_option("--prompt", opts_.prompts, "Prefill prompt lengths, 1 to 8192 (default 32 128 512)")
        ->check(IntRange(1, 8192));
    sub.add_option("--max-cached-tokens", opts_.max_cached_tokens,
                   "Skip (batch, ctx) with batch x ctx above this, 1 to 1048576 (default 32768)")
        ->check(IntRange(1, 1 << 20));
    sub.add_option("--repeats", opts_.repeats, "Timed runs per point, 1 to 50 (default 3)")->check(IntRange(1, 50));
    sub.add_option("--stream-mib", opts_.stream_mib, "MiB per STREAM array, 16 to 4096 (default 256)")
        ->check(IntRange(16, 4096));
    sub.add_flag("--quick", opts_.quick, "A tiny model and grid (seconds): a smoke test");
  }
  bool has_plot() const override { return true; }
  bool is_bench() const override { return true; }
  std::string weights_refusal() const override {
    return "it times this machine on the shapes its own options set, and a forward's time depends on "
           "the shape, not on the weights' values";
  }
  Result run(const RunContext& ctx) override { return run_cpu_roofline(opts_, ctx); }

 private:
  CpuRooflineOptions opts_;
};

KVLAB_REGISTER_CHECK(505, CpuRoofline);

}  // namespace
}  // namespace kvlab::checks
