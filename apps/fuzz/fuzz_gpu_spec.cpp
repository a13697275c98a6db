// libFuzzer target: the hardware catalogue reader (kvlab::parse_gpu_config, the path of
// `kvlab roofline --gpu NAME` through data/hardware/NAME.json), then a decode step on every GPU
// it accepts. The contract and what counts as a finding: fuzz_entry.hpp. Run (docs/reliability.md):
//   make fuzz FUZZ_SECONDS=60
//   build-fuzz/bin/fuzz_gpu_spec -dict=apps/fuzz/gpu_spec.dict CORPUS_DIR
//   tests/fuzz/corpus/gpu_spec
#include "apps/fuzz/fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kvlab::fuzz::fuzz_one(kvlab::fuzz::gpu_spec_input, data, size);
}
