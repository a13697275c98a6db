// The mini-GPT trainer: AdamW with decoupled weight decay, global-norm gradient
// clipping, linear warm-up then cosine decay, mini-batches of random windows of the train text,
// data-parallel over threads with a fixed reduction order (so a run replays bit for bit on one
// build for a given --batch, whatever --threads). float32 parameters and arithmetic.
//
//   step s:   lr(s) = lr · (s+1)/warmup                                    for s < warmup
//                   = lr_min + (lr - lr_min) · (1 + cos(π (s-warmup)/(steps-warmup))) / 2   after
//             g = (1/(B·L)) Σ_b ∇ Σ_t CE_t;  g *= min(1, clip / ‖g‖₂)
//             m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²
//             θ -= lr(s) · (m/(1-β1^{s+1}) / (sqrt(v/(1-β2^{s+1})) + ε) + wd · θ [decay tensors only])
// (Loshchilov & Hutter 2019, AdamW; nanoGPT's defaults β = (0.9, 0.95), clip 1.0, lr_min = lr/10.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/gpt.hpp"

namespace kvlab::train {

/// Hyper-parameters of one run. Sequence length L = the model's block_size.
struct TrainConfig {
  int steps = 1000;             ///< optimizer steps
  int batch = 16;               ///< sequences per step
  double lr = 3e-3;             ///< peak learning rate
  double min_lr_ratio = 0.1;    ///< lr_min = lr · min_lr_ratio
  int warmup = 50;              ///< linear warm-up steps (clamped to steps)
  double weight_decay = 0.1;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double grad_clip = 1.0;       ///< global L2 norm; 0 = off
  std::uint64_t seed = 1;       ///< data order (the initial weights come from the model's own seed)
  int threads = 2;              ///< worker threads; results do not depend on it
  /// Run only steps 1..stop_after of the `steps`-step schedule (0 = all): the learning rates are
  /// those of the full run, so its first steps replay exactly (the replay test of the committed
  /// target, tests/lib/train/replay_test.cpp).
  int stop_after = 0;
};

/// What the progress callback sees after each step.
struct StepInfo {
  int step = 0;                 ///< 1-based, of steps
  int steps = 0;
  double loss = 0;              ///< mean cross-entropy of this step's batch (nats/token)
  double lr = 0;
  double grad_norm = 0;         ///< before clipping
  double elapsed_s = 0;
  double tokens_per_s = 0;      ///< trained tokens per wall-clock second so far
};

/// The whole run.
struct TrainResult {
  std::vector<double> losses;   ///< per step
  double wall_s = 0;
  std::size_t tokens = 0;       ///< steps · batch · L
};

/// Learning rate at 0-based step s (see the header). Pure.
double lr_at(const TrainConfig& cfg, int step);

/// Trains `model` in place on `tokens` (each window: L+1 consecutive tokens from a uniformly
/// random offset, Rng(cfg.seed)). Throws InputError when the model is not trainable
/// (require_trainable), when tokens has fewer than L+1 entries or a bad hyper-parameter
/// (steps, batch >= 1; lr finite > 0; threads in [1, 64]). on_step may be empty.
TrainResult train_model(MiniGPT<float>& model, const std::vector<int>& tokens, const TrainConfig& cfg,
                        const std::function<void(const StepInfo&)>& on_step = {});

/// Mean cross-entropy (nats/token) of a model on a text.
struct EvalResult {
  double loss = 0;              ///< nats per predicted token
  std::size_t tokens = 0;       ///< predicted tokens
  std::size_t windows = 0;
};

/// Loss over non-overlapping windows of L+1 tokens (stride L: each token predicted once, from a
/// context of 0..L-1 earlier tokens of its window). max_windows > 0 keeps that many windows,
/// evenly spaced over the text; 0 keeps all. Summed per window in double, windows in order, so
/// the result does not depend on `threads`. Throws InputError when the text is shorter than
/// L+1 tokens.
template <class T>
EvalResult evaluate(const MiniGPT<T>& model, const std::vector<int>& tokens, int max_windows = 0, int threads = 2);

}  // namespace kvlab::train
