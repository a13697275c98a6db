// `kvlab bench decode [--vs-torch]`: tokens/s of kvlab's fast float32 decode (model/fast_gpt.hpp)
// for d_model 256, 512, 1024, 2048 at batch 1 and 8, and with --vs-torch the same config and
// weights in PyTorch (bench/torch_decode.py, preallocated KV cache), side by side in one run.
// Weights go to PyTorch as raw float32 (layout: bench/torch_decode.py's header and docs/perf.md).
// Torch is optional: without it --vs-torch exits 2 with the install line. Issue 9.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

struct BenchFlags {
  std::string what;                         ///< "decode" (the only benchmark so far)
  std::vector<int> d_models{256, 512, 1024, 2048};
  std::vector<int> batches{1, 8};
  int layers = 4;
  int ctx = 128;       ///< cached positions before the timed steps
  int steps = 16;      ///< decode steps per timed run
  int repeats = 3;     ///< timed runs per configuration (the spread is reported)
  bool vs_torch = false;
  std::string python = "python3";
  std::string script;  ///< default: bench/torch_decode.py beside the data folder
  std::string format = "text";  ///< text, md or json
};

/// Adds the `bench` subcommand with its options bound to `flags`.
CLI::App* add_bench_command(CLI::App& app, BenchFlags& flags);

/// Runs the benchmark and prints the table to `out`. Returns 0, or 2 (with a line on stderr)
/// when --vs-torch is asked and PyTorch cannot be imported. Throws InputError for bad flags.
int run_bench(const BenchFlags& flags, std::ostream& out);

}  // namespace kvlab::app
