// The trained mini-GPT pair of data/weights (docs/weights.md) and the fortunes
// validation text, for the checks that need trained weights (spec-real, gqa-meanpool's trained
// mode). Either part absent: the reason in one line, and the check reports "skipped".
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/data_dir.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"

namespace kvlab::checks {

/// data_dir()/weights/NAME.safetensors ("target" or "draft").
inline std::string trained_weights_path(const std::string& name) {
  return data_dir() + "/weights/" + name + ".safetensors";
}

/// The checkpoint at `given` (the option's value) or, when empty, at the default path `fallback`.
/// Absent default: std::nullopt and the one-line reason (the check skips). An absent, unreadable
/// or malformed file that the user named, or a malformed default: InputError naming `option`.
inline std::pair<std::optional<MiniGPT<float>>, std::string> load_trained(const std::string& given,
                                                                            const std::string& fallback,
                                                                            const std::string& option) {
  const std::string path = given.empty() ? fallback : given;
  // Whether it is there, without opening it: fopen on a FIFO waits for a writer forever.
  // read_safetensors then refuses anything but a regular file.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (!given.empty()) throw InputError(option + ": cannot open the checkpoint '" + printable(given) + "': no such file");
    return {std::nullopt, "the trained checkpoint " + path + " is absent; `make weights` trains it (docs/weights.md)"};
  }
  try {
    return {train::load_checkpoint(path), ""};
  } catch (const InputError& e) {  // name the option, as every bad input does
    throw InputError(option + ": " + e.what());
  }
}

/// The validation split of the fortunes text in `dir` (empty: the default directory). An absent
/// default directory: std::nullopt and the reason (the check skips); a directory the user named
/// that holds no fortunes: InputError naming `option`.
inline std::pair<std::optional<std::vector<int>>, std::string> load_validation_text(const std::string& dir,
                                                                                    const std::string& option) {
  const std::string d = dir.empty() ? train::kFortunesDir : dir;
  std::optional<train::Corpus> corpus;
  try {
    corpus = train::load_fortunes(d);
  } catch (const InputError& e) {  // an unreadable or oversized file: name the option when given
    throw InputError(dir.empty() ? std::string(e.what()) : option + ": " + e.what());
  }
  if (!corpus) {
    if (!dir.empty()) throw InputError(option + ": no fortune files in the directory '" + printable(dir) + "'");
    std::string why = train::fortunes_skip_line(d);
    if (why.rfind("skipped: ", 0) == 0) why = why.substr(9);  // the verdict line says "skipped"
    return {std::nullopt, why};
  }
  return {std::move(corpus->validation), ""};
}

}  // namespace kvlab::checks
