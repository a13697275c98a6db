// The work budget of a model read from a weights file (lib/model/weights_io.hpp). A file declares
// its sizes, and a few bytes can declare sizes that the checks and `perplexity` would turn into
// hours of work or gigabytes of memory (block_size 2^20 under RoPE costs the file nothing: there is
// no position table), so every file's config is held to these before its model is built. The
// element count is bounded by the reader (kMaxSafetensorsElements, io/read_budget.hpp).
// docs/weights.md lists the messages, docs/reliability.md the measurements behind the figures.
#pragma once

#include <cstdint>
#include <string>

#include "io/read_budget.hpp"
#include "io/safetensors.hpp"
#include "model/config.hpp"

namespace kvlab {

inline constexpr int kMaxWeightsVocab = 65536;       ///< vocab_size (`model init --vocab-size`'s largest)
inline constexpr int kMaxWeightsBlockSize = 65536;   ///< block_size (`model init --block-size`'s largest)
/// K and V of every layer at block_size positions in float64 (a cache sized for the whole context):
/// 2 · n_layer · block_size · n_kv_head · head_dim · 8 bytes <= 1 GiB.
inline constexpr std::uint64_t kMaxWeightsCacheBytes = std::uint64_t{1} << 30;

/// Throws InputError "LABEL: FIELD VALUE exceeds the budget of LIMIT for the CPU checks (...)"
/// when `config` is outside the budget above; `label` names the file.
void require_weights_budget(const ModelConfig& config, const std::string& label);

/// The config of an already-read weights file at `path`: its "kvlab.config" metadata, else the
/// config.json beside `path`; held to require_weights_budget. InputError when neither is there,
/// either is invalid, or the budget is exceeded.
ModelConfig weights_file_config(const SafeTensorsFile& file, const std::string& path);

}  // namespace kvlab
