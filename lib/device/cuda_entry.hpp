// The one door from the library into kernels/: the GPU KernelRunner for `kvlab parity`,
// the timing calls of `kvlab bench kernels` and the model operations of `--device cuda`. Only
// cuda_entry.cpp is compiled with KVLAB_HAVE_CUDA (lib/CMakeLists.txt), so every other object of
// a CUDA build is the same as in a CUDA-off build. Without the backend, each function throws
// InputError saying so (exit 2); the commands check cuda_compiled() and cuda_devices() first and
// print "skipped: ..." instead.
#pragma once

#include <memory>

#include "device/parity.hpp"
#include "kernels/gpu_kernels.hpp"
#include "kernels/model_ops.hpp"

namespace kvlab::gpu {

/// The GPU runner: kernels::cuda_* behind the KernelRunner interface. Throws InputError when
/// kvlab was built without CUDA.
std::unique_ptr<KernelRunner> make_cuda_runner();

/// The mini-GPT's operations on the CUDA device (kernels::make_cuda_model_ops, kernels/model_ops.cu:
/// cuBLAS SGEMM without TF32 and the decode kernels on device memory), for model/device_gpt.hpp.
/// Throws InputError when kvlab was built without CUDA; CudaError (no usable device, libcublas not
/// found) passes through.
std::unique_ptr<kernels::ModelOps> make_model_ops();

/// kernels::device_facts / bench_decode_attention / bench_copy / bench_sgemm, or InputError
/// "built without CUDA". kernels::CudaError passes through.
kernels::DeviceFacts device_facts();
kernels::KernelTiming bench_decode_attention(const kernels::AttentionBenchConfig& c);
kernels::KernelTiming bench_copy(std::size_t bytes, int warmup, int repeats);
kernels::KernelTiming bench_sgemm(int m, int n, int k, int warmup, int repeats);

}  // namespace kvlab::gpu
