// cpu-roofline (004 §1.5; 000 §3.1): options and the testable entry point. See
// cpu_roofline.cpp.
#pragma once

#include <functional>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "model/fast_gpt.hpp"

namespace kvlab::checks::cpu_roofline {

struct CpuRooflineOptions {
  int d_model = 1024;
  int layers = 6;
  int n_head = 16;
  int n_kv_head = 4;            ///< GQA, so that batch 64 x long contexts fit in memory
  int vocab = 8192;
  std::vector<int> batches{1, 4, 16, 64};
  std::vector<int> contexts{128, 1024, 4096};
  std::vector<int> prompts{32, 128, 512};
  int max_cached_tokens = 32768;  ///< (batch, ctx) points with batch x ctx above this are skipped
  int repeats = 3;                ///< timed runs per point (the spread is reported)
  int stream_mib = 256;           ///< MiB per STREAM array of the in-run machine measurement
  bool quick = false;             ///< a tiny model and grid (seconds; for the tests and the sweep)
};

/// The machine's two roofs, as measured (bench/machine.hpp) in the same run.
struct MachineRoof {
  double bandwidth_bytes_per_s = 0.0;  ///< STREAM copy, median
  double flops_per_s = 0.0;            ///< float32 GEMM, median
  std::vector<double> bandwidth_runs, flops_runs;  ///< the repeats behind the medians
  std::string what;                    ///< how it was measured (one line)
};

/// Injectable parts; empty: this machine (measure_machine), the fast path's decode and prefill
/// (model/fast_gpt.hpp) on a MiniGPT<float> of the options' shape. The unit tests pass synthetic
/// timings (the roof's bound divided by an efficiency) to test the verdict logic, including a
/// decode that reaches only half of the bandwidth, which must fail.
struct CpuRooflineParts {
  std::function<MachineRoof()> machine;
  /// Seconds of one decode step of `batch` sequences at context `ctx`, one per repeat.
  std::function<std::vector<double>(const ModelConfig&, int batch, int ctx, int repeats)> time_decode;
  /// Seconds of one verify step (FastGpt::extend) of `rows` tokens over `ctx` cached positions, one
  /// per repeat.
  std::function<std::vector<double>(const ModelConfig&, int rows, int ctx, int repeats)> time_verify;
  /// One copy pass's rate in bytes/s (bench/machine.hpp, CopyProbe), measured before each timing
  /// of the paired table; empty with an injected `machine`: every pair then uses its bandwidth.
  std::function<double()> copy_rate;
  /// Seconds of one prefill of `len` tokens, one per repeat.
  std::function<std::vector<double>(const ModelConfig&, int len, int repeats)> time_prefill;
};

/// The bench model's config for `o` (quick: d 128, 2 layers).
ModelConfig cpu_roofline_config(const CpuRooflineOptions& o);

/// What a run with `o` (lists sorted, --quick applied) costs on the reference machine when every
/// part is real (core/work_budget.hpp): seconds (margin included) of the machine measurement,
/// building and copying the model, filling the cache and every timed point; and the memory held
/// at once (the model twice, the cache, the activations; or the three STREAM arrays).
struct CpuRooflineWork {
  double seconds = 0.0;
  double peak_bytes = 0.0;
};
CpuRooflineWork cpu_roofline_work(const CpuRooflineOptions& o);

/// One timed point: a decode step of `batch` sequences at context `ctx`, or a prefill (batch 1, ctx
/// = the prompt's length); its bytes and FLOPs, every repeat's seconds, their median and the
/// roof's bound max(bytes / bandwidth, FLOPs / rate) in seconds.
struct RoofPoint {
  int batch = 0, ctx = 0;
  StepCost cost;
  std::vector<double> times;
  double median_s = 0.0, bound_s = 0.0;
};

/// One row of the paired table: a decode step of `rows` sequences, or the verify step of `rows`
/// tokens (verify), each timing with the copy rate (bytes/s) measured just before it and their
/// ratio achieved / copy.
struct PairedStep {
  bool verify = false;
  int rows = 0;
  StepCost cost;
  std::vector<double> times, rates, fractions;
};

/// What cpu-roofline measured, in numbers: the options as run (lists sorted, --quick applied),
/// the model's config, the machine's roofs and every timed point.
struct CpuRooflineMeasured {
  CpuRooflineOptions options;
  ModelConfig config;
  MachineRoof roof;
  std::vector<RoofPoint> decode, prefill;
  std::vector<PairedStep> paired;  ///< at the smallest context: batches 1, 2, 4, 8, then verify 2, 5, 9
};

/// The options a run uses: --quick's tiny grid, every list sorted without duplicates. Throws
/// InputError for an empty list, a value out of range, heads that do not divide, or a grid whose
/// smallest decode point does not fit --max-cached-tokens.
CpuRooflineOptions cpu_roofline_effective(const CpuRooflineOptions& o);

/// Times every point with `parts` (empty members: this machine and the fast path, after the work
/// and memory budget: InputError when over it). `o` as cpu_roofline_effective returns it.
CpuRooflineMeasured measure_cpu_roofline(const CpuRooflineOptions& o, const RunContext& ctx,
                                         const CpuRooflineParts& parts = {});
/// The verdict rows: batch-1 decode ≥ 80% of the paired copy rate and the longest prefill ≥ 60%
/// of the GEMM rate, each capped at 1 (kvlab's goals for its fast path).
std::vector<Expectation> judge_cpu_roofline(const CpuRooflineMeasured& m);

/// The check as data (registered as `cpu-roofline`, a benchmark).
const CheckDef<CpuRooflineOptions, CpuRooflineMeasured>& cpu_roofline_check();

/// Runs the check. Throws InputError on out-of-range options, and on options whose real parts
/// would be over the work or memory budget (cpu_roofline_work; injected parts are not counted).
Result run_cpu_roofline(const CpuRooflineOptions& o, const RunContext& ctx, const CpuRooflineParts& parts = {});

}  // namespace kvlab::checks::cpu_roofline

namespace kvlab::checks {
using namespace cpu_roofline;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
