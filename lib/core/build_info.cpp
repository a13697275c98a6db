#include "core/build_info.hpp"

#include <cstdlib>
#include <filesystem>

#include <Eigen/Core>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/device.hpp"

namespace kvlab {

std::vector<std::pair<std::string, std::string>> build_info() {
  std::string why;
  const auto devices = cuda_devices(&why);
  std::string device_list;
  for (const auto& d : devices) device_list += (device_list.empty() ? "" : "; ") + d;
  return {
      {"version", KVLAB_VERSION},
      {"build type", KVLAB_BUILD_TYPE},
      {"compiler", fmt::format("{} {}", KVLAB_CXX_COMPILER_ID, KVLAB_CXX_COMPILER_VERSION)},
      {"cuda compiled in", cuda_compiled() ? "yes (" KVLAB_CUDA_VERSION ")" : "no"},
      {"cuda devices", devices.empty() ? "none (" + why + ")" : device_list},
      {"eigen", fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION)},
      {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
      {"nlohmann-json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                    NLOHMANN_JSON_VERSION_PATCH)},
      {"data directory", data_dir()},
  };
}

std::string data_dir() {
  if (const char* env = std::getenv("KVLAB_DATA"); env && *env) return env;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(KVLAB_DATA_DIR, ec)) return KVLAB_DATA_DIR;
  // The source tree moved since the build: look beside the executable (build/bin/kvlab -> data/).
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path())
      if (fs::is_directory(dir / "data" / "models", ec)) return (dir / "data").string();
  return KVLAB_DATA_DIR;  // the error that follows names this path
}

}  // namespace kvlab
