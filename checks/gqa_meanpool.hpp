// gqa-meanpool: options, injectable parts, what it measures and its testable steps
// (gqa_meanpool.cpp; the trained mode in gqa_meanpool_trained.cpp). Its tests inject a pooler that
// averages the wrong heads, or drops the K/V biases.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "model/gpt.hpp"

namespace kvlab::checks::gqa_meanpool {

struct GqaMeanpoolOptions {
  int tokens = 16;  ///< positions of the sequence the outputs are compared on
  /// Trained mode: the committed target (data/weights/target.safetensors), or this file.
  std::string trained_weights;
  std::string fortunes;   ///< fortunes directory; empty: /usr/share/games/fortunes
  int windows = 4;        ///< validation windows of the trained mode (--long: at least 64)
  bool long_run = false;  ///< trained mode: 64 windows and uptraining (~5% of the steps)
};

/// MHA model → GQA model with n_kv_head K/V heads (as kvlab::mean_pool_kv_heads).
using Pooler = std::function<MiniGPT<double>(const MiniGPT<double>& mha, int n_kv_head)>;
/// The same in float32, the trained mode's precision.
using PoolerF32 = std::function<MiniGPT<float>(const MiniGPT<float>&, int)>;

/// Injectable parts; empty: kvlab::mean_pool_kv_heads (float64 runs only; f32 always uses the
/// library). Unit tests pass one that pools the tiled groups (heads g, g + G, ...) to show the
/// check fails.
struct GqaMeanpoolParts {
  Pooler pool_f64;
  PoolerF32 pool_f32;  ///< the trained mode's pooler; empty: kvlab::mean_pool_kv_heads
};

/// Layer 1's attention output [S, n_head·head_dim] of `model` on `ids` (before W_O), computed with
/// the library's ops as MiniGPT::forward does. T: float or double.
template <class T>
Mat<T> layer1_attention(const MiniGPT<T>& model, const std::vector<int>& ids);

// ---- the trained mode (004 §2.4 group 6, §B.4; GQA paper §2.1, §3) ----

struct GqaTrainedOptions {
  std::string weights;     ///< target checkpoint; empty: data/weights/target.safetensors
  std::string fortunes;    ///< text directory; empty: the default
  int windows = 4;         ///< validation windows of block_size bytes (--long: 64)
  bool uptrain = false;    ///< --long: uptrain each conversion for uptrain_share of the steps
  double uptrain_share = 0.05;
};

/// One mean-pooled conversion of the trained target.
struct GqaTrainedConversion {
  int G = 0;                    ///< K/V heads after pooling
  std::vector<double> losses;   ///< validation loss per window (nats/byte)
  double rel_logits = 0;        ///< relative max |Δlogits| against the MHA on the first window
  double att_trained = 0;       ///< layer-1 relative attention error of the conversion (G < n_kv_head)
  double att_random = 0;        ///< the same for a random model of the target's shape (seed 1234)
  double loss_after = 0;        ///< --long: mean validation loss after uptraining
};

/// What the trained mode measured: the MHA target's per-window losses and each conversion's.
struct GqaTrainedMeasured {
  GqaTrainedOptions options;
  std::string skipped;          ///< non-empty: why the trained mode did not run (no checkpoint or text)
  ModelConfig config;           ///< the target's
  std::vector<double> base;     ///< the MHA's validation loss per window (nats/byte)
  std::vector<GqaTrainedConversion> conversions;  ///< G = n_kv_head, n_kv_head / 2, ... 1 (dividing it)
  int original_steps = 0, original_batch = 0;     ///< --long: the checkpoint's training run
  int uptrain_steps = 0;
  double uptrain_lr = 0;
  double control_loss = 0;      ///< --long: the MHA trained as long as the conversions
};

/// Loads the target and the text (a note-only skip when absent), pools with `pool`, evaluates, and
/// with o.uptrain uptrains. Throws InputError naming --trained-weights/--fortunes for unreadable
/// files and --windows/--long for work over the budget (core/work_budget.hpp).
GqaTrainedMeasured measure_gqa_trained(const GqaTrainedOptions& o, const PoolerF32& pool);
/// The trained mode's rows: the identity conversion exact, pooling costs loss on every window,
/// and with uptraining most of the gap recovered.
std::vector<Expectation> judge_gqa_trained(const GqaTrainedMeasured& m);
/// The trained mode's tables, metrics and notes. `random_rel` maps G to the random mode's relative
/// layer-1 error at ε = 1.
void present_gqa_trained(const GqaTrainedMeasured& m, const std::map<int, double>& random_rel, Result& r);

// ---- the check ----

/// One conversion of the random model with its heads spread by ε within each group.
struct GqaMeanpoolRow {
  int G = 0;
  double eps = 0;
  double err = 0;         ///< max |Δ| of layer 1's attention output
  double scale = 1;       ///< max(1, max |MHA attention|)
  double rel = 0;         ///< max |Δ| / max |MHA attention|
  double rel_logits = 0;  ///< relative max |Δlogits|
};

/// What gqa-meanpool measured: the ε sweep for G = 2 and G = 1, then the trained mode.
struct GqaMeanpoolMeasured {
  GqaMeanpoolOptions options;
  Dtype dtype = Dtype::f64;
  std::uint64_t seed = 0;
  double reduction_length = 0;        ///< n, the summed terms of layer 1's attention output
  int n_head = 0;
  std::vector<GqaMeanpoolRow> rows;   ///< G = 2 then 1, ε = 1, 0.3, 0.1, 0.03, 0.01, 0
  GqaTrainedMeasured trained;
};

/// Runs the sweep and the trained mode. Throws InputError as measure_gqa_trained.
GqaMeanpoolMeasured measure_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx,
                                         const GqaMeanpoolParts& parts = {});
/// The verdict rows: per G, exact at ε = 0 up to the rounding bound and shrinking at every step
/// of ε; then the trained mode's.
std::vector<Expectation> judge_gqa_meanpool(const GqaMeanpoolMeasured& m);

/// The check as data (registered as `gqa-meanpool`).
const CheckDef<GqaMeanpoolOptions, GqaMeanpoolMeasured>& gqa_meanpool_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx, const GqaMeanpoolParts& parts = {});

}  // namespace kvlab::checks::gqa_meanpool

namespace kvlab::checks {
using namespace gqa_meanpool;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
