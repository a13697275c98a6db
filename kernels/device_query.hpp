// Host-side entry points of the CUDA kernels library (compiled only when nvcc is found).
#pragma once

#include <string>
#include <vector>

namespace kvlab::kernels {

/// One line per visible CUDA device: "NAME (sm_XY, N GiB)". Empty when the runtime finds no
/// driver or no device; `why_none` (optional) then gets cudaGetErrorString of the failure.
std::vector<std::string> query_devices(std::string* why_none);

}  // namespace kvlab::kernels
