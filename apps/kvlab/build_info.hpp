// What this build of kvlab is: version, build type, CUDA, and the library versions it was built
// with (`kvlab info`, `kvlab --version`). In the app, not the library: it asks the device layer
// which GPUs are present, and the library's core does not look up at the device layer.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kvlab::app {

/// (key, value) pairs in display order: version, build type, compiler, CUDA compiled in,
/// CUDA devices, Eigen, fmt, nlohmann-json, data directory (`kvlab info` adds CLI11's).
std::vector<std::pair<std::string, std::string>> build_info();

}  // namespace kvlab::app
