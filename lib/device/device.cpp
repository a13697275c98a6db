#include "device/device.hpp"

#include "core/error.hpp"

#ifdef KVLAB_HAVE_CUDA
#include "kernels/device_query.hpp"
#endif

namespace kvlab {

DeviceRequest parse_device(const std::string& s) {
  if (s == "cpu") return DeviceRequest::cpu;
  if (s == "cuda") return DeviceRequest::cuda;
  if (s == "auto") return DeviceRequest::automatic;
  throw InputError("--device: must be cpu, cuda or auto (got '" + s + "')");
}

const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

bool cuda_compiled() {
#ifdef KVLAB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<std::string> cuda_devices(std::string* why_none) {
#ifdef KVLAB_HAVE_CUDA
  return kernels::query_devices(why_none);
#else
  if (why_none) *why_none = "this kvlab was built without CUDA (nvcc not found at configure time)";
  return {};
#endif
}

Device resolve_device(DeviceRequest request, bool check_has_cuda, const std::string& check) {
  if (request == DeviceRequest::cpu) return Device::cpu;
  std::string why;
  const bool have_gpu = !cuda_devices(&why).empty();
  if (request == DeviceRequest::automatic) return have_gpu && check_has_cuda ? Device::cuda : Device::cpu;
  // The check's own limit first: it holds on every machine, a missing GPU only on this one.
  if (!check_has_cuda)
    throw InputError("--device cuda: " + check + " has no CUDA implementation yet; use --device cpu");
  if (!have_gpu) throw InputError("--device cuda: " + why + "; use --device cpu");
  return Device::cuda;
}

}  // namespace kvlab
