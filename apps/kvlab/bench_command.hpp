// `kvlab bench decode [--vs-torch]`: tokens/s of kvlab's fast float32 decode (model/fast_gpt.hpp)
// for d_model 256, 512, 1024, 2048 at batch 1 and 8, and with --vs-torch the same config and
// weights in PyTorch (bench/torch_decode.py, preallocated KV cache), side by side in one run.
// Weights go to PyTorch as raw float32 (layout: bench/torch_decode.py's header and docs/perf.md).
// Torch is optional: without it --vs-torch exits 2 with the install line.
//
// `kvlab bench kernels`: the CUDA decode-attention kernel (contiguous and paged, block
// size 16) over batch x context x heads: bytes per launch, median time by CUDA events (warm-up,
// rotating input buffers larger than L2), GB/s and its ratio to a device-to-device copy measured
// in the same run, the roofline time (bytes / copy rate) beside the measured one; and cuBLAS
// SGEMM FLOP/s for the MLP shapes. Without CUDA or a device it prints "skipped: ..." and exits 0.
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
  std::string what;                         ///< "decode" or "kernels"
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
  // bench kernels (--batch, --repeats and --format are shared; --repeats defaults to 20 there)
  std::vector<int> kv_ctx{4096, 32768, 131072};  ///< cached positions per sequence
  std::vector<std::string> heads{"32/8", "32/32"};  ///< "n_head/n_kv_head" pairs
  int head_dim = 128;
  int block_size = 16;           ///< paged kernel's block size
  std::string cache = "f32";     ///< cache storage: f32 or bf16
  std::vector<int> gemm_m{8, 512, 4096};  ///< SGEMM rows (tokens) for the MLP shapes
  int gemm_d = 4096;             ///< d_model of the MLP shapes (hidden 4 x d_model)
  int copy_mib = 2048;           ///< device-to-device copy size
  bool repeats_given = false;    ///< --repeats was on the command line
};

/// Adds the `bench` subcommand with its options bound to `flags`.
CLI::App* add_bench_command(CLI::App& app, BenchFlags& flags);

/// Runs the benchmark and prints the table to `out`. Returns 0, or 2 (with a line on stderr)
/// when --vs-torch is asked and PyTorch cannot be imported. Throws InputError for bad flags.
int run_bench(const BenchFlags& flags, std::ostream& out);

/// `bench kernels`: the table(s) to `out`, or "skipped: ..." (exit 0) without CUDA or a device.
/// Returns 2 with one line on stderr on a CUDA error (including inputs too large for the device).
int run_bench_kernels(const BenchFlags& flags, std::ostream& out);

}  // namespace kvlab::app
