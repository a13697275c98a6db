// Device discovery for `kvlab info` and `--device`. Later kernels (decode attention, KV append,
// RoPE) live beside this file, one per file, each with a CPU reference in lib/.
#include "kernels/device_query.hpp"

#include <cstdio>

#include <cuda_runtime.h>

namespace kvlab::kernels {

std::vector<std::string> query_devices(std::string* why_none) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_none)
      *why_none = std::string("no usable CUDA driver or device on this machine (CUDA runtime: ") +
                  cudaGetErrorString(status) + ")";
    return {};
  }
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    char line[512];
    std::snprintf(line, sizeof line, "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                  static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
    names.emplace_back(line);
  }
  if (names.empty() && why_none) *why_none = "no CUDA device found";
  return names;
}

}  // namespace kvlab::kernels
