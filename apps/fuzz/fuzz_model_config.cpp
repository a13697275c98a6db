// libFuzzer target: the Hugging Face config.json reader (kvlab::parse_model_config, the path of
// `kvlab kv-size --config FILE`), then the cost functions on every spec it accepts.
// The contract and what counts as a finding: fuzz_entry.hpp. Run (docs/reliability.md):
//   make fuzz FUZZ_SECONDS=60
//   build-fuzz/bin/fuzz_model_config -dict=apps/fuzz/model_config.dict CORPUS_DIR
//   tests/fuzz/corpus/model_config
#include "apps/fuzz/fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kvlab::fuzz::fuzz_one(kvlab::fuzz::model_config_input, data, size);
}
