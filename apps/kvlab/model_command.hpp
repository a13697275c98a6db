// `kvlab model init`: a seeded random mini-GPT written as safetensors (lib/model/weights_io.hpp;
// docs/weights.md), and `kvlab perplexity`: validation loss and perplexity of a weights file.
//
//   kvlab model init --seed 1 --out model.safetensors [--layers 2 --d-model 64 --heads 8 ...]
//   kvlab perplexity --weights model.safetensors [--text FILE] [--max-windows N]
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "model/config.hpp"

namespace CLI {
class App;
}

namespace kvlab::app {

/// Options of `kvlab model init`; defaults are ModelConfig's (the checks' mini-GPT).
struct ModelInitFlags {
  std::int64_t seed = 1234;
  std::string out;
  int n_layer = 2, d_model = 64, n_head = 8, n_kv_head = 8, head_dim = 8;
  int vocab_size = 96, block_size = 64;
  std::string positional = "learned";
  double rope_theta = 10000.0;
  int sliding_window = 0, cla_share = 1;
  std::string dtype = "F32";  ///< storage dtype: F64, F32, BF16 or F16
};

/// Options of `kvlab perplexity`.
struct PerplexityFlags {
  std::string weights;
  std::string text;       ///< "" = the validation split of the fortunes corpus
  int max_windows = 0;    ///< 0 = every window
  std::string dtype = "f32";
  std::string format = "text";
};

/// Adds `model` (with its `init` subcommand) to `app`; returns `model init`'s App.
CLI::App* add_model_command(CLI::App& app, ModelInitFlags& flags);
/// Adds `perplexity`.
CLI::App* add_perplexity_command(CLI::App& app, PerplexityFlags& flags);

/// Builds MiniGPT(config, seed) in float64 and writes it with save_gpt in flags.dtype; prints one
/// line (file, parameters, bytes, config). Returns 0. Throws InputError on a bad config or an
/// unwritable file.
int run_model_init(const ModelInitFlags& flags, std::ostream& out);

/// Mean next-token cross-entropy of the model over the text (non-overlapping windows of
/// block_size + 1 tokens, stride block_size: each token predicted once, from 0..block_size-1
/// earlier tokens of its window; the trainer's definition), in nats/token, and its perplexity
/// exp(loss). Text as bytes (needs vocab_size 256) — a file given by --text, or the fortunes
/// validation split (lib/train/corpus.hpp); when that is absent, prints the skip line and
/// returns 0. Throws InputError on a bad file, a model outside require_weights_budget, a text
/// shorter than block_size + 1, or a run over the work budget (core/work_budget.hpp).
int run_perplexity(const PerplexityFlags& flags, std::ostream& out);

}  // namespace kvlab::app
