// One fuzz input, checked against the reader's contract. Shared by the libFuzzer targets
// (apps/fuzz/fuzz_*.cpp, built with KVLAB_FUZZ=ON and clang) and by the regression test
// (tests/test_fuzz_regressions.cpp, built with any compiler), so a crashing input kept under
// tests/fuzz/regressions/ replays through exactly the code that found it.
//
// The contract, for any bytes: the reader returns a spec that satisfies its invariants, or throws
// kvlab::InputError with a one-line message. Anything else is a finding:
//   - another exception escapes (the CLI would exit 3, "internal error");
//   - a crash, a sanitizer report, a leak (under the fuzzer);
//   - an accepted spec that breaks an invariant (ContractViolation): a size outside [1, 2^31]
//     (layers: [1, 2^16]), n_head % n_kv_head != 0, head_dim != hidden_size / n_head without an
//     explicit head_dim, half of the MLA or of the expert pair, k > E, N_active > N or below
//     N·k/E, a name or source that is not one line of valid UTF-8 (the JSON writer would throw),
//     a rate outside [1, 1e21];
//   - a cost function that, on an accepted spec, returns a number other than the exact one
//     (computed here in 128-bit arithmetic) or fails to throw InputError when the exact one does
//     not fit in 64 bits; a decode step (dense, and MoE when the config has
//     num_parameters_active) whose figures are not finite and positive, or whose weights read
//     fall outside [N_active, N].
//
//   make fuzz FUZZ_SECONDS=60          # build-fuzz/bin/fuzz_model_config, fuzz_gpu_spec,
//                                      # fuzz_safetensors
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvlab::fuzz {

/// What the reader did with an input that kept the contract.
enum class Outcome { accepted, rejected };

/// An input that broke the contract without an exception of its own (a wrong spec, a wrong count,
/// a message of two lines). Deliberately not an InputError.
class ContractViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The Hugging Face config.json reader: `bytes` as the text of a file handed to `--config`
/// (kvlab::parse_model_config, the path read_model_config takes), then the invariants of the
/// ModelSpec and the cost functions on it (KV-cache bytes in every dtype, the tensor-by-tensor
/// count, attention FLOPs, a decode step on an A100). Throws ContractViolation, or lets any
/// non-InputError exception through; returns how the reader answered otherwise.
Outcome model_config_input(std::string_view bytes);

/// The hardware catalogue reader: `bytes` as the text of data/hardware/NAME.json
/// (kvlab::parse_gpu_config, the path load_gpu takes), then the invariants of the GpuSpec and a
/// decode step of Llama-2-7B on it. Same contract as model_config_input.
Outcome gpu_spec_input(std::string_view bytes);

/// The safetensors reader: `bytes` as a whole weights file (kvlab::parse_safetensors, the path
/// read_safetensors and `--weights` take), then the file's invariants, a write-and-read round trip,
/// and, when its metadata holds a kvlab.config, the MiniGPT loader and a forward pass. Same
/// contract as model_config_input.
Outcome safetensors_input(std::string_view bytes);

/// The body of LLVMFuzzerTestOneInput: runs `entry` on the input and turns a broken contract
/// into an abort with the reason on stderr, which libFuzzer reports as a crash and saves.
inline int fuzz_one(Outcome (*entry)(std::string_view), const std::uint8_t* data,
                    std::size_t size) {
  try {
    entry(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const ContractViolation& e) {
    std::fprintf(stderr, "kvlab fuzz: contract violation: %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvlab fuzz: exception other than InputError (the CLI exits 3): %s\n",
                 e.what());
    std::abort();
  }
  return 0;
}

}  // namespace kvlab::fuzz
