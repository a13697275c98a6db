// libFuzzer target: the safetensors weights reader (kvlab::parse_safetensors, the path of
// `--weights FILE` and `kvlab perplexity`), a write-and-read round trip of every accepted file and,
// with a kvlab.config in its metadata, the MiniGPT loader and a forward pass.
// The contract and what counts as a finding: fuzz_entry.hpp. Run (docs/reliability.md):
//   make fuzz FUZZ_SECONDS=60
//   build-fuzz/bin/fuzz_safetensors -dict=apps/fuzz/safetensors.dict CORPUS_DIR
//   tests/fuzz/corpus/safetensors
#include "apps/fuzz/fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kvlab::fuzz::fuzz_one(kvlab::fuzz::safetensors_input, data, size);
}
