// Where a computation runs. The CPU (Eigen) backend is always there; the CUDA backend exists when
// kvlab was built with nvcc (KVLAB_HAVE_CUDA) and a device is present at run time.
//
// `--device cpu|cuda|auto`: cpu always works; cuda is refused with a clear error (exit 2) when the
// CUDA backend was not compiled in, no device is found, or the check has no CUDA path yet; auto
// takes cuda when all three are there and cpu otherwise.
#pragma once

#include <string>
#include <vector>

namespace kvlab {

enum class Device { cpu, cuda };
enum class DeviceRequest { cpu, cuda, automatic };

/// "cpu" | "cuda" | "auto"; throws InputError naming `--device` otherwise.
DeviceRequest parse_device(const std::string& s);
const char* device_name(Device d);

/// True when this build contains the CUDA backend (kernels/ compiled by nvcc).
bool cuda_compiled();

/// Names of the CUDA devices visible at run time ("NVIDIA H200 (sm_90, 139.8 GiB)"); empty
/// without a compiled backend, a driver or a device. `why_none` (optional) gets the reason.
std::vector<std::string> cuda_devices(std::string* why_none = nullptr);

/// Picks the device for a check. `check_has_cuda`: the check has a CUDA implementation.
/// Throws InputError for `cuda` when it cannot be honoured, naming the reason.
Device resolve_device(DeviceRequest request, bool check_has_cuda, const std::string& check);

}  // namespace kvlab
