// The trainer's checkpoints: float32 MiniGPTs in safetensors files, under the tensor names and
// config metadata of lib/model/weights_io.hpp (docs/weights.md), plus the run's metadata
// ("kvlab.train", "kvlab.validation_loss", "kvlab.corpus"). Thin wrappers over save_gpt and the
// validating reader, so a checkpoint is read with every check of lib/io/safetensors.
#pragma once

#include <map>
#include <string>

#include "model/gpt.hpp"

namespace kvlab::train {

/// Writes `model` as F32 safetensors with `extra_metadata` beside "kvlab.config" (save_gpt).
/// Throws InputError when the file cannot be written.
void save_checkpoint(const MiniGPT<float>& model, const std::string& path,
                     const std::map<std::string, std::string>& extra_metadata);

/// Reads a checkpoint (any dtype read_safetensors accepts; config from "kvlab.config" or a
/// config.json beside the file). Throws InputError naming the file on a missing or malformed
/// file, a missing tensor or a shape that does not match the config. `metadata` (optional)
/// receives the file's metadata.
MiniGPT<float> load_checkpoint(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

}  // namespace kvlab::train
