// `kvlab parity`: every CUDA kernel (KV append, RoPE, decode attention contiguous and
// paged, LayerNorm, GELU, softmax; f32 and bf16 cache storage) against its float64 CPU reference
// on seeded random inputs over several shapes (device/parity.hpp); a table of kernel, shape,
// error, bound, verdict. Without CUDA compiled in, or without a device, it prints
// "skipped: built without CUDA" / "skipped: no CUDA device (...)" and exits 0.
// `--runner cpu-f32` sends the same cases through the float32 CPU stand-in instead: a self-test
// of the comparison that runs anywhere (it is not a GPU result, and says so).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kvlab::app {

struct ParityFlags {
  std::int64_t seed = 1234;
  std::string runner = "cuda";   ///< cuda (the kernels) or cpu-f32 (the CPU stand-in)
  std::string format = "text";   ///< text, md, csv or json
};

/// Adds the `parity` subcommand with its options bound to `flags`.
CLI::App* add_parity_command(CLI::App& app, ParityFlags& flags);

/// Runs the comparison and prints the table to `out`. Returns 0 when every row passed or the run
/// was skipped, 1 when a row failed, 2 (one line on stderr) on a CUDA error.
int run_parity_command(const ParityFlags& flags, std::ostream& out);

}  // namespace kvlab::app
