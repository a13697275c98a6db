// A MiniGPT's weights in a safetensors file (lib/io/safetensors.hpp), under Hugging Face
// GPT-2/GPT-Neo-like names; docs/weights.md lists every tensor with its shape.
//
//   transformer.wte.weight                 [vocab_size, d_model]   token embedding
//   transformer.wpe.weight                 [block_size, d_model]   learned positions (not under RoPE)
//   transformer.h.L.ln_1.weight / .bias    [d_model]
//   transformer.h.L.attn.q_proj.weight     [n_head*head_dim, d_model]     .bias [n_head*head_dim]
//   transformer.h.L.attn.k_proj.weight     [n_kv_head*head_dim, d_model]  .bias [n_kv_head*head_dim]
//   transformer.h.L.attn.v_proj.weight     [n_kv_head*head_dim, d_model]  .bias (k/v: only in
//                                          layers that own K/V, L % cla_share == 0)
//   transformer.h.L.attn.out_proj.weight   [d_model, n_head*head_dim]     .bias [d_model]
//   transformer.h.L.ln_2.weight / .bias    [d_model]
//   transformer.h.L.mlp.c_fc.weight        [4*d_model, d_model]           .bias [4*d_model]
//   transformer.h.L.mlp.c_proj.weight      [d_model, 4*d_model]           .bias [d_model]
//   transformer.ln_f.weight / .bias        [d_model]
//   lm_head.weight                         [vocab_size, d_model]   (untied, no bias)
//
// Linear weights are stored as torch.nn.Linear stores them, [out_features, in_features]: the
// transpose of kvlab's Mat (x W with W [in, out]), so `y = x @ W.T + b` in PyTorch/NumPy.
// The config travels in the metadata key "kvlab.config" (a JSON object, model_config_to_json);
// a file without it takes its config from a config.json in the same directory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"

namespace kvlab {

/// Metadata key that holds the model config as JSON.
inline constexpr const char* kConfigMetadataKey = "kvlab.config";

/// The config as a JSON object with the field names of ModelConfig: n_layer, d_model, n_head,
/// n_kv_head, head_dim, vocab_size, block_size, positional ("learned" | "rope"), rope_theta,
/// causal, sliding_window, cla_share. One line, keys sorted.
std::string model_config_to_json(const ModelConfig& config);

/// Parses model_config_to_json's format (any subset of the keys; missing ones keep ModelConfig's
/// defaults) and validates it. InputError naming `label` and the field: malformed JSON, not an
/// object, an unknown key, a wrong type, an integer out of range, or ModelConfig::validate().
ModelConfig model_config_from_json(const std::string& text, const std::string& label);

/// The value of the field called `name` (model_config_to_json's keys) as text, e.g. "64",
/// "rope", "true"; "?" for an unknown name. For messages that name a wrong field.
std::string config_field(const ModelConfig& config, const std::string& name);

/// The tensors a model of `config` has, with their shapes and no values, in the order above.
std::vector<SafeTensor> gpt_tensor_layout(const ModelConfig& config);

/// The config of a weights file without building the model: its "kvlab.config" metadata, else the
/// config.json beside it, held to the work budget (weights_file_config, model/weights_budget.hpp).
/// InputError when neither is there, either is invalid, the budget is exceeded, and whatever
/// read_safetensors throws.
ModelConfig read_weights_config(const std::string& path);

/// A model's tensors under the names above, encoded as `dtype` ("F64", "F32", "BF16", "F16").
template <class T>
std::vector<SafeTensor> gpt_to_tensors(const MiniGPT<T>& model, const std::string& dtype);

/// The model `file` holds for `config`: every tensor of gpt_tensor_layout(config) present with
/// its shape and no other tensor. InputError naming `label`, the tensor and the expected and found
/// shapes (or "missing" / "unexpected") otherwise.
template <class T>
MiniGPT<T> gpt_from_tensors(const ModelConfig& config, const SafeTensorsFile& file,
                            const std::string& label);

/// Loads a MiniGPT from a safetensors file: config from read_weights_config's rule (budget
/// included), tensors validated as gpt_from_tensors. Values are rounded to T (a F64 file into
/// MiniGPT<float> rounds). The model's source() is `path`, so its forward refuses non-finite
/// activations naming the file.
template <class T>
MiniGPT<T> load_gpt(const std::string& path);

/// Writes `model` with metadata {"format": "pt", "kvlab.config": JSON} plus `extra_metadata`
/// (which may not override kvlab.config). dtype "" means the model's own (F64 for double, F32 for
/// float). InputError when the file cannot be written.
template <class T>
void save_gpt(const MiniGPT<T>& model, const std::string& path,
              const std::map<std::string, std::string>& extra_metadata = {},
              const std::string& dtype = "");

}  // namespace kvlab
