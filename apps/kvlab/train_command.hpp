// `kvlab train`: trains a mini-GPT (lib/train) on the fortunes text with a byte vocabulary and
// writes it as safetensors; prints the parameter count, the run's wall time, the last train loss
// and the validation loss (docs/weights.md records the committed pair's runs).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kvlab::app {

struct TrainFlags {
  int n_layer = 4, d_model = 128, n_head = 4, n_kv_head = 0, head_dim = 0, block_size = 128;
  int steps = 1000, batch = 16, warmup = 50, threads = 2, eval_windows = 0, init_steps = 0;
  int stop_after = 0;                    ///< run only the first N steps of the schedule (0 = all)
  std::string loss_log;                  ///< FILE: every step's loss, lr and gradient norm (TSV)
  double lr = 3e-3, weight_decay = 0.1, grad_clip = 1.0;
  std::int64_t seed = 1;
  std::string out;                       ///< FILE.safetensors (when out_given)
  bool out_given = false;                ///< --out was on the command line ('' is refused, not "no file")
  bool loss_log_given = false;           ///< --loss-log was on the command line
  std::string fortunes;                  ///< corpus directory (default /usr/share/games/fortunes)
};

/// Adds the `train` subcommand with its options bound to `flags`.
CLI::App* add_train_command(CLI::App& app, TrainFlags& flags);

/// Runs the training: summary on `out`, progress on stderr. Returns 0. Throws InputError for
/// bad flags (naming the option), an absent corpus (naming --fortunes and the package), an
/// unwritable --out or --loss-log (checked before training; both written through
/// io/safe_write.hpp, so they appear only complete) or one file named by both.
int run_train(const TrainFlags& flags, std::ostream& out);

}  // namespace kvlab::app
