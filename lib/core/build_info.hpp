// What this build of kvlab is: version, build type, CUDA, and the library versions it was built with.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kvlab {

/// (key, value) pairs in display order: version, build type, compiler, CUDA compiled in,
/// CUDA devices, Eigen, fmt, CLI11 (passed in by the app, which is the only CLI11 user),
/// nlohmann-json, data directory.
std::vector<std::pair<std::string, std::string>> build_info();

/// The catalogue folder: $KVLAB_DATA when set; else the source tree's data/ (fixed at build time)
/// when it exists; else the nearest data/ above the executable (a clone moved after building).
std::string data_dir();

}  // namespace kvlab
