// `kvlab machine`: this machine's memory bandwidth (STREAM copy and triad) and float32 GEMM rate,
// printed as a hardware entry of data/hardware/'s schema; `--save` writes it where
// `kvlab roofline --gpu local` and `kvlab cpu-roofline` read it (io/catalogue.hpp,
// local_hardware_path). Measurement code: lib/bench/machine.hpp. 004 §1.5.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kvlab::app {

struct MachineFlags {
  std::int64_t size_mib = 512;  ///< bytes per STREAM array, MiB
  int repeats = 5;
  int gemm_n = 2048;
  bool curve = false;           ///< also the copy bandwidth over working sets 256 KiB .. 2 x size
  bool save = false;
  std::string format = "text";  ///< text or json (the entry alone)
};

/// Adds the `machine` subcommand with its options bound to `flags`.
CLI::App* add_machine_command(CLI::App& app, MachineFlags& flags);

/// Measures, prints to `out` (text: a table and the entry; json: the entry) and with flags.save
/// writes the entry to local_hardware_path(). Returns the exit status (0). Throws InputError
/// when the file cannot be written.
int run_machine(const MachineFlags& flags, std::ostream& out);

}  // namespace kvlab::app
