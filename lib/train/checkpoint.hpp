// A stop-gap safetensors writer and reader for trained mini-GPTs, in the format and under the
// tensor names of lib/model/weights_io.hpp (branch `weights`; docs/weights.md): F32, Linear
// weights stored [out, in] (the transpose of kvlab's Mat), metadata {"format": "pt",
// "kvlab.config": <config JSON>, ...}. Kept minimal and strict; lib/io/safetensors's full reader
// (with the hostile-file validation) replaces it when the branches meet.
#pragma once

#include <map>
#include <string>

#include "model/gpt.hpp"

namespace kvlab::train {

/// The config as one-line JSON with ModelConfig's field names, keys sorted.
std::string config_json(const ModelConfig& c);

/// Writes `model` as F32 safetensors (tensors sorted by name, packed from offset 0; header padded
/// with spaces to a multiple of 8). Throws InputError when the file cannot be written.
void save_checkpoint(const MiniGPT<float>& model, const std::string& path,
                     const std::map<std::string, std::string>& extra_metadata);

/// Reads a file save_checkpoint wrote (F32 or F64 tensors, the config from "kvlab.config").
/// Throws InputError naming the file on a missing/short/malformed file, an unknown dtype, a
/// missing tensor or a shape that does not match the config. `metadata` (optional) receives
/// the file's metadata.
MiniGPT<float> load_checkpoint(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace kvlab::train
