#include "train_command.hpp"
#include "model_flags.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <iterator>
#include <map>
#include <optional>
#include <vector>
#include <cstdio>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/work_budget.hpp"
#include "io/safe_write.hpp"
#include "model/gpt.hpp"
#include "model/work.hpp"
#include "framework/options.hpp"
#include "train/backprop.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"
#include "train/trainer.hpp"
#include "framework/path_option.hpp"

namespace kvlab::app {

using kvlab::checks::FiniteRange;
using kvlab::checks::IntRange;

CLI::App* add_train_command(CLI::App& app, TrainFlags& f) {
  auto* t = app.add_subcommand("train", "Train a byte-level mini-GPT on the fortunes text and save it as safetensors");
  t->footer(
      "Text: /usr/share/games/fortunes (Debian package `fortunes`), fortunes i % 10 == 9 held out for "
      "validation. AdamW (β 0.9/0.95, decay on matrices), global-norm clipping, linear warm-up then "
      "cosine decay to lr/10, windows of block_size+1 bytes at random offsets. The same flags replay "
      "the same run on one build, whatever --threads. Progress (loss, tokens/s, time left) on stderr.");
  add_model_shape_options(*t, {&f.n_layer, &f.d_model, &f.n_head, &f.n_kv_head, &f.head_dim, &f.block_size},
                          {.max_layers = 64, .max_dim = 4096, .max_heads = 256, .max_head_dim = 1024,
                           .min_derived = 0, .min_block = 2, .max_block = 4096});
  t->add_option("--steps", f.steps, "Optimizer steps, 1 to 10,000,000 (default 1000)")->transform(IntRange(1, 10000000));
  t->add_option("--batch", f.batch, "Sequences per step, 1 to 4096 (default 16)")->transform(IntRange(1, 4096));
  t->add_option("--lr", f.lr, "Peak learning rate, in [1e-6, 1] (default 3e-3)")->check(FiniteRange(1e-6, 1.0));
  t->add_option("--warmup", f.warmup, "Linear warm-up steps, 0 to 10,000,000 (default 50)")
      ->transform(IntRange(0, 10000000));
  t->add_option("--weight-decay", f.weight_decay, "AdamW decoupled weight decay, in [0, 1] (default 0.1)")
      ->check(FiniteRange(0.0, 1.0));
  t->add_option("--grad-clip", f.grad_clip, "Global gradient-norm clip, in [0, 1e6]; 0 = off (default 1)")
      ->check(FiniteRange(0.0, 1e6));
  t->add_option("--seed", f.seed, "Seed of the initial weights and the data order (default 1)")
      ->transform(IntRange(0, std::numeric_limits<std::int64_t>::max()));
  t->add_option("--threads", f.threads, "Worker threads, 1 to 64 (default 2); the result does not depend on it")
      ->transform(IntRange(1, 64));
  t->add_option("--eval-windows", f.eval_windows,
                "Validation windows of block_size+1 bytes, evenly spaced; 0 = all (default), 1 to 1,000,000")
      ->transform(IntRange(0, 1000000));
  t->add_option("--stop-after", f.stop_after,
                "Run only the first N steps of the --steps schedule (same learning rates), 0 to 10,000,000; "
                "0 = all (default)")
      ->transform(IntRange(0, 10000000));
  t->add_option("--loss-log", f.loss_log, "Write every step's loss, lr and gradient norm to FILE (TSV)")
      ->each([&f](const std::string&) { f.loss_log_given = true; });
  t->add_option("--out", f.out, "Write the trained model to FILE.safetensors (it appears when training is done)")
      ->each([&f](const std::string&) { f.out_given = true; });
  t->add_option("--fortunes", f.fortunes, "Directory of the fortune files (default /usr/share/games/fortunes)")
      ->check(kvlab::checks::PathGiven());
  return t;
}

int run_train(const TrainFlags& f, std::ostream& out) {
  ModelConfig c;
  c.n_layer = f.n_layer;
  c.d_model = f.d_model;
  c.n_head = f.n_head;
  c.n_kv_head = f.n_kv_head == 0 ? f.n_head : f.n_kv_head;
  if (f.head_dim == 0 && f.d_model % f.n_head != 0)
    throw InputError(fmt::format("--head-dim: 0 needs --n-head ({}) to divide --d-model ({})", f.n_head, f.d_model));
  c.head_dim = f.head_dim == 0 ? f.d_model / f.n_head : f.head_dim;
  c.vocab_size = train::kByteVocab;
  c.block_size = f.block_size;
  if (c.n_head % c.n_kv_head != 0)
    throw InputError(fmt::format("--n-kv-head: must divide --n-head = {} (got {})", c.n_head, c.n_kv_head));
  train::require_trainable(c);
  // Fail before the hours of training, not after, and without creating anything: --out appears
  // only when the model is complete (io/safe_write.hpp), so an error or Ctrl-C leaves no 0-byte
  // model and an existing one intact.
  std::vector<OutputTarget> outputs;
  if (f.out_given) outputs.push_back(check_output_target(f.out, "--out"));
  if (f.loss_log_given) outputs.push_back(check_output_target(f.loss_log, "--loss-log"));
  require_distinct_outputs(outputs);
  const std::string dir = f.fortunes.empty() ? train::kFortunesDir : f.fortunes;
  std::optional<train::Corpus> corpus;
  try {
    corpus = train::load_fortunes(dir);
  } catch (const InputError& e) {  // an unreadable or oversized fortune file
    throw InputError(fmt::format("--fortunes: {}", e.what()));
  }
  if (!corpus) throw InputError(fmt::format("--fortunes: {}", train::fortunes_skip_line(printable(dir))));

  MiniGPT<float> model(c, static_cast<std::uint64_t>(f.seed));
  train::TrainConfig cfg;
  cfg.steps = f.steps;
  cfg.batch = f.batch;
  cfg.lr = f.lr;
  cfg.warmup = f.warmup;
  cfg.weight_decay = f.weight_decay;
  cfg.grad_clip = f.grad_clip;
  cfg.seed = static_cast<std::uint64_t>(f.seed) + 1;
  cfg.threads = f.threads;
  cfg.stop_after = f.stop_after;
  // The loss log is a temporary until training ends (removed on an error or Ctrl-C); every write
  // is checked, so a full disk is one line and exit 2, not a truncated log.
  std::optional<SafeWriter> loss_log;
  if (f.loss_log_given) {
    loss_log.emplace(f.loss_log, "--loss-log");
    loss_log->write("# step\tloss (nats/byte, this step's batch)\tlr\tgradient norm (before clipping)\n");
  }
  const std::size_t n_params = train::param_count(model.weights());
  out << fmt::format("kvlab train: {} parameters (n_layer {}, d_model {}, n_head {}, n_kv_head {}, head_dim {}, "
                     "block_size {}, vocab 256)\n",
                     n_params, c.n_layer, c.d_model, c.n_head, c.n_kv_head, c.head_dim, c.block_size);
  out << fmt::format("text: {} ({} files): train {} bytes ({} fortunes), validation {} bytes ({} fortunes), "
                     "hash {:016x}\n",
                     dir, corpus->files.size(), corpus->train.size(), corpus->n_fortunes_train,
                     corpus->validation.size(), corpus->n_fortunes_validation, train::corpus_hash(corpus->train));
  out << fmt::format("run: {} steps x {} sequences x {} tokens, lr {:g} (warm-up {}, cosine to {:g}), seed {}, "
                     "{} threads\n", cfg.steps, cfg.batch, c.block_size, cfg.lr, cfg.warmup, cfg.lr * cfg.min_lr_ratio,
                     f.seed, cfg.threads);
  if (cfg.stop_after > 0 && cfg.stop_after < cfg.steps)
    out << fmt::format("stopping after step {} of the {}-step schedule (--stop-after)\n", cfg.stop_after, cfg.steps);
  out.flush();
  // Training is long by design (the committed pair: about 35 minutes), so it is not held to the
  // 60 s work budget of the other commands (core/work_budget.hpp); on a terminal it says up front
  // how long the run should take, so that a mistyped --steps is seen, and stopped, at once. The
  // progress line's time left counts the validation pass after the last step (FLOP-weighted: a
  // training token costs 3 forwards' work, a validation token 1), which reports no progress itself.
  const double steps = cfg.stop_after > 0 ? std::min(cfg.stop_after, cfg.steps) : cfg.steps;
  const double step_work = 3.0 * cfg.batch * forward_flops(c, c.block_size);  // forward + backward
  const double eval_windows = [&] {
    const double all = static_cast<double>((corpus->validation.size() - 1) / static_cast<std::size_t>(c.block_size));
    return f.eval_windows > 0 ? std::min(all, static_cast<double>(f.eval_windows)) : all;
  }();
  const double eval_work = eval_windows * forward_flops(c, c.block_size);
  Progress progress = Progress::on_stderr("train", steps * step_work + eval_work);
  {
    const double seconds = (steps * step_work + eval_work) / (kRefModelFlopsPerSecond * std::min(cfg.threads, 2));
    progress.announce(fmt::format("about {} on the reference machine (2 cores): {:.0f} steps x {} sequences x {} "
                                  "tokens, then {:.0f} validation windows{}",
                                  duration_text(seconds), steps, cfg.batch, c.block_size, eval_windows,
                                  within_work_budget(seconds) ? "" : "; Ctrl-C stops it"));
  }

  std::string loss_lines;  // --loss-log lines not yet written (64 KiB at a time)
  const int every = std::max(1, cfg.steps / 20);
  const auto on_step = [&](const train::StepInfo& s) {
    if (loss_log) {
      fmt::format_to(std::back_inserter(loss_lines), "{}\t{:.9g}\t{:.9g}\t{:.9g}\n", s.step, s.loss, s.lr, s.grad_norm);
      if (loss_lines.size() >= (64u << 10)) loss_log->write(loss_lines), loss_lines.clear();
    }
    if (progress.active()) {
      progress.update(s.step * step_work, fmt::format("step {}/{}  loss {:.4f}  {:.0f} tok/s", s.step, s.steps, s.loss,
                                                      s.tokens_per_s));
    } else if (s.step % every == 0 || s.step == 1) {  // off a terminal: the training log, every 5%
      std::fprintf(stderr, "train %d/%d loss %.4f lr %.2e |g| %.3f %.0f tok/s\n", s.step, s.steps, s.loss, s.lr,
                   s.grad_norm, s.tokens_per_s);
      std::fflush(stderr);
    }
  };
  const train::TrainResult r = train::train_model(model, corpus->train, cfg, on_step);
  if (loss_log) {
    loss_log->write(loss_lines);
    loss_log->commit();
  }
  progress.update(steps * step_work, fmt::format("validation: {:.0f} windows", eval_windows));
  const auto t_eval = std::chrono::steady_clock::now();
  const train::EvalResult ev = train::evaluate(model, corpus->validation, f.eval_windows, f.threads);
  progress.update(steps * step_work + eval_work, "validation done");
  progress.finish();
  const double eval_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_eval).count();
  double last = 0;  // mean of the last 5% of steps (the last step alone is one noisy batch)
  const std::size_t tail = std::max<std::size_t>(1, r.losses.size() / 20);
  for (std::size_t i = r.losses.size() - tail; i < r.losses.size(); ++i) last += r.losses[i];
  last /= static_cast<double>(tail);
  out << fmt::format("trained: {:.1f} s wall, {:.0f} tokens/s, train loss (last {} steps) {:.4f} nats/byte\n",
                     r.wall_s, static_cast<double>(r.tokens) / r.wall_s, tail, last);
  out << fmt::format("validation: loss {:.6f} nats/byte ({:.4f} bits/byte, perplexity {:.3f}) over {} bytes "
                     "({} windows, {:.1f} s)\n",
                     ev.loss, ev.loss / std::log(2.0), std::exp(ev.loss), ev.tokens, ev.windows, eval_s);
  if (f.out_given) {
    std::map<std::string, std::string> meta = {
        {"kvlab.train", fmt::format("steps={} batch={} lr={:g} warmup={} weight_decay={:g} grad_clip={:g} seed={}",
                                    cfg.steps, cfg.batch, cfg.lr, cfg.warmup, cfg.weight_decay, cfg.grad_clip, f.seed)},
        {"kvlab.validation_loss", fmt::format("{:.6f}", ev.loss)},
        {"kvlab.corpus", fmt::format("fortunes, hash {:016x}", train::corpus_hash(corpus->train))}};
    try {
      train::save_checkpoint(model, f.out, meta);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--out: {}", e.what()));
    }
    out << fmt::format("wrote {}\n", shown_path(f.out));
  }
  return 0;
}

}  // namespace kvlab::app
