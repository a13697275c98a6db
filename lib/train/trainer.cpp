#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "train/backprop.hpp"

namespace kvlab::train {

namespace {

constexpr int kMaxShards = 4;  // gradient buffers; fixed so the sum order ignores --threads

/// Runs job(i) for i in [0, n) on up to `threads` threads (i handled by thread i % threads).
template <class F>
void parallel_for(int n, int threads, F&& job) {
  threads = std::max(1, std::min(threads, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) job(i);
    return;
  }
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex mu;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int i = t; i < n; i += threads) job(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

double lr_at(const TrainConfig& cfg, int step) {
  const int warmup = std::min(cfg.warmup, cfg.steps);
  if (step < warmup) return cfg.lr * (step + 1) / warmup;
  const double lr_min = cfg.lr * cfg.min_lr_ratio;
  const int span = std::max(1, cfg.steps - warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
  return lr_min + (cfg.lr - lr_min) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
}

TrainResult train_model(MiniGPT<float>& model, const std::vector<int>& tokens, const TrainConfig& cfg,
                        const std::function<void(const StepInfo&)>& on_step) {
  const ModelConfig& c = model.config();
  require_trainable(c);
  require_range("steps", cfg.steps, 1, 100000000);
  require_range("batch", cfg.batch, 1, 65536);
  require_range("threads", cfg.threads, 1, 64);
  require_range("warmup", cfg.warmup, 0, 100000000);
  require_finite_range("lr", cfg.lr, 1e-12, 10.0);
  const int L = c.block_size;
  if (tokens.size() < static_cast<std::size_t>(L) + 1)
    throw InputError(fmt::format("text: {} tokens, need at least block_size + 1 = {}", tokens.size(), L + 1));

  GptWeights<float>& w = model.weights();
  auto params = param_refs(w);
  GptWeights<float> m_buf = zeros_like(w), v_buf = zeros_like(w);
  auto m_refs = param_refs(m_buf), v_refs = param_refs(v_buf);
  const int shards = std::min(cfg.batch, kMaxShards);
  std::vector<GptWeights<float>> grads(shards, zeros_like(w));
  std::vector<std::vector<ParamRef<float>>> grad_refs;
  for (auto& g : grads) grad_refs.push_back(param_refs(g));

  Rng rng(cfg.seed);
  const std::uint64_t n_offsets = tokens.size() - static_cast<std::size_t>(L);  // offsets 0 .. n-L-1
  std::vector<std::size_t> offsets(cfg.batch);
  std::vector<double> shard_loss(shards);
  const float grad_scale = 1.0f / static_cast<float>(static_cast<double>(cfg.batch) * L);

  TrainResult result;
  const auto t0 = std::chrono::steady_clock::now();
  require_range("stop_after", cfg.stop_after, 0, 100000000);
  const int last = cfg.stop_after > 0 ? std::min(cfg.steps, cfg.stop_after) : cfg.steps;
  for (int step = 0; step < last; ++step) {
    for (auto& o : offsets) o = static_cast<std::size_t>(rng.uniform() * static_cast<double>(n_offsets));
    parallel_for(shards, cfg.threads, [&](int s) {
      for (auto& p : grad_refs[s]) std::fill(p.data, p.data + p.size, 0.0f);
      double loss = 0;
      const int lo = s * cfg.batch / shards, hi = (s + 1) * cfg.batch / shards;
      for (int b = lo; b < hi; ++b) {
        const int* seq = tokens.data() + offsets[b];
        loss += forward_backward<float>(c, w, std::span<const int>(seq, L), std::span<const int>(seq + 1, L),
                                        grad_scale, grads[s]);
      }
      shard_loss[s] = loss;
    });
    // Reduce into shard 0 in shard order, then the global norm (in double, tensor order).
    double norm2 = 0, loss = 0;
    for (int s = 0; s < shards; ++s) loss += shard_loss[s];
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* g0 = grad_refs[0][i].data;
      for (int s = 1; s < shards; ++s) {
        const float* gs = grad_refs[s][i].data;
        for (Eigen::Index j = 0; j < params[i].size; ++j) g0[j] += gs[j];
      }
      for (Eigen::Index j = 0; j < params[i].size; ++j) norm2 += static_cast<double>(g0[j]) * g0[j];
    }
    const double norm = std::sqrt(norm2);
    const float clip = cfg.grad_clip > 0 && norm > cfg.grad_clip ? static_cast<float>(cfg.grad_clip / norm) : 1.0f;
    const double lr = lr_at(cfg, step);
    const double bc1 = 1.0 - std::pow(cfg.beta1, step + 1), bc2 = 1.0 - std::pow(cfg.beta2, step + 1);
    const float b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
    const float step_size = static_cast<float>(lr / bc1), inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    const float eps = static_cast<float>(cfg.eps);
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* p = params[i].data;
      const float* g = grad_refs[0][i].data;
      float* m = m_refs[i].data;
      float* v = v_refs[i].data;
      const float decay = params[i].decay ? static_cast<float>(lr * cfg.weight_decay) : 0.0f;
      for (Eigen::Index j = 0; j < params[i].size; ++j) {
        const float gj = g[j] * clip;
        m[j] = b1 * m[j] + (1.0f - b1) * gj;
        v[j] = b2 * v[j] + (1.0f - b2) * gj * gj;
        p[j] -= step_size * m[j] / (std::sqrt(v[j]) * inv_sqrt_bc2 + eps) + decay * p[j];
      }
    }
    const double mean_loss = loss / (static_cast<double>(cfg.batch) * L);
    result.losses.push_back(mean_loss);
    result.tokens += static_cast<std::size_t>(cfg.batch) * L;
    if (!std::isfinite(mean_loss)) throw std::runtime_error(fmt::format("train: loss is {} at step {}", mean_loss, step + 1));
    if (on_step) {
      StepInfo info;
      info.step = step + 1;
      info.steps = cfg.steps;
      info.loss = mean_loss;
      info.lr = lr;
      info.grad_norm = norm;
      info.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      info.tokens_per_s = static_cast<double>(result.tokens) / std::max(1e-9, info.elapsed_s);
      on_step(info);
    }
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

template <class T>
EvalResult evaluate(const MiniGPT<T>& model, const std::vector<int>& tokens, int max_windows, int threads) {
  const ModelConfig& c = model.config();
  const int L = c.block_size;
  if (tokens.size() < static_cast<std::size_t>(L) + 1)
    throw InputError(fmt::format("text: {} tokens, need at least block_size + 1 = {}", tokens.size(), L + 1));
  const std::size_t total = (tokens.size() - 1) / static_cast<std::size_t>(L);
  const std::size_t n = max_windows > 0 ? std::min<std::size_t>(total, static_cast<std::size_t>(max_windows)) : total;
  std::vector<double> losses(n);
  parallel_for(static_cast<int>(n), threads, [&](int i) {
    const std::size_t window = static_cast<std::size_t>(i) * total / n;  // evenly spaced
    const int* seq = tokens.data() + window * L;
    losses[i] = sequence_loss<T>(c, model.weights(), std::span<const int>(seq, L), std::span<const int>(seq + 1, L));
  });
  EvalResult r;
  for (double l : losses) r.loss += l;
  r.windows = n;
  r.tokens = n * static_cast<std::size_t>(L);
  r.loss /= static_cast<double>(r.tokens);
  return r;
}

template EvalResult evaluate<float>(const MiniGPT<float>&, const std::vector<int>&, int, int);
template EvalResult evaluate<double>(const MiniGPT<double>&, const std::vector<int>&, int, int);

}  // namespace kvlab::train
