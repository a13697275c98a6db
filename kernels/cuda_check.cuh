// Checked CUDA calls and an owning device buffer, shared by the kernels/*.cu files.
//
//   KVLAB_CUDA_CHECK(cudaMalloc(&p, n));   // throws CudaError "cudaMalloc(&p, n) failed: ... (file:line)"
//   KVLAB_CUDA_LAUNCHED("decode_attention_kernel");  // checks the launch itself (cudaGetLastError)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/gpu_kernels.hpp"

namespace kvlab::kernels {

[[noreturn]] inline void throw_cuda(const char* call, cudaError_t status, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorString(status) + " (" + file + ":" +
                  std::to_string(line) + ")");
}

#define KVLAB_CUDA_CHECK(call)                                                             \
  do {                                                                                     \
    const cudaError_t kvlab_status_ = (call);                                              \
    if (kvlab_status_ != cudaSuccess) ::kvlab::kernels::throw_cuda(#call, kvlab_status_, __FILE__, __LINE__); \
  } while (0)

#define KVLAB_CUDA_LAUNCHED(name)                                                          \
  do {                                                                                     \
    const cudaError_t kvlab_status_ = cudaGetLastError();                                  \
    if (kvlab_status_ != cudaSuccess)                                                      \
      ::kvlab::kernels::throw_cuda("launch of " name, kvlab_status_, __FILE__, __LINE__);  \
  } while (0)

/// An owning device allocation of `bytes` (cudaMalloc / cudaFree); move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) KVLAB_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = o.ptr_, bytes_ = o.bytes_;
      o.ptr_ = nullptr, o.bytes_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a sticky error shows on the next call
  }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A device copy of a host vector.
template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer d(v.size() * sizeof(T));
  if (!v.empty()) KVLAB_CUDA_CHECK(cudaMemcpy(d.as<void>(), v.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

/// The first n elements of a device buffer, on the host.
template <class T>
std::vector<T> to_host(const DeviceBuffer& d, std::size_t n) {
  std::vector<T> v(n);
  if (n > 0) KVLAB_CUDA_CHECK(cudaMemcpy(v.data(), d.as<void>(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace kvlab::kernels
