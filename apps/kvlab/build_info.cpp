#include "build_info.hpp"

#include <Eigen/Core>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "device/device.hpp"
#include "io/data_dir.hpp"

namespace kvlab::app {

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

}  // namespace kvlab::app
