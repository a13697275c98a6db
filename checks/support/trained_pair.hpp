// The trained mini-GPT pair of data/weights (issue 10; docs/weights.md) and the fortunes
// validation text, for the checks that need trained weights (spec-real, gqa-meanpool's trained
// mode). Either part absent: the reason in one line, and the check reports "skipped".
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"

namespace kvlab::checks {

/// data_dir()/weights/NAME.safetensors ("target" or "draft").
inline std::string trained_weights_path(const std::string& name) {
  return data_dir() + "/weights/" + name + ".safetensors";
}

/// A checkpoint, or the one-line reason it is absent. A file that exists but is malformed is not
/// "absent": its InputError propagates (exit 2 naming the file).
inline std::pair<std::optional<MiniGPT<float>>, std::string> load_trained(const std::string& path,
                                                                            const std::string& option) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    return {std::nullopt, "the trained checkpoint " + path + " (" + option +
                              ") is absent; `make weights` trains it (docs/weights.md)"};
  std::fclose(f);
  try {
    return {train::load_checkpoint(path), ""};
  } catch (const InputError& e) {  // name the option, as every bad input does
    throw InputError(option + ": " + e.what());
  }
}

/// The validation split of the fortunes text in `dir` (empty: the default directory), or the
/// skip line.
inline std::pair<std::optional<std::vector<int>>, std::string> load_validation_text(const std::string& dir) {
  const std::string d = dir.empty() ? train::kFortunesDir : dir;
  auto corpus = train::load_fortunes(d);
  if (!corpus) return {std::nullopt, train::fortunes_skip_line(d)};
  return {std::move(corpus->validation), ""};
}

}  // namespace kvlab::checks
