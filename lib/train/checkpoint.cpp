#include "train/checkpoint.hpp"

#include "io/safetensors.hpp"
#include "model/weights_budget.hpp"
#include "model/weights_io.hpp"

namespace kvlab::train {

void save_checkpoint(const MiniGPT<float>& model, const std::string& path,
                     const std::map<std::string, std::string>& extra_metadata) {
  save_gpt(model, path, extra_metadata, "F32");
}

MiniGPT<float> load_checkpoint(const std::string& path, std::map<std::string, std::string>* metadata) {
  const SafeTensorsFile file = read_safetensors(path);
  if (metadata) *metadata = file.metadata;
  return gpt_from_tensors<float>(weights_file_config(file, path), file, path);  // the file is read once
}

}  // namespace kvlab::train
