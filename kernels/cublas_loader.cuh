// cuBLAS opened at run time (dlopen), shared by kernels/bench.cu (`kvlab bench kernels`: SGEMM
// timing) and kernels/model_ops.cu (the mini-GPT's matrix products for `--device cuda`).
//
// Why dlopen and not a link: linking libcublas loads ~0.5 GB of libcublas/libcublasLt into every
// kvlab process (0.24 s and 220 MB RSS at start-up, measured: docs/gpu.md "Build cost"), which
// every CPU-only run and the ~1000-run option sweep would pay. cublas_v2.h is included for its
// types and constants only; every function is a pointer looked up in the opened library.
//
//   const Cublas& blas = cublas();                      // throws CudaError when it cannot be opened
//   KVLAB_CUBLAS_CHECK(blas.create(&handle));           // throws CudaError naming the call
#pragma once

#include <string>
#include <type_traits>

#include <cublas_v2.h>  // types and constants only: libcublas is opened at run time (dlopen)
#include <dlfcn.h>

#include "kernels/gpu_kernels.hpp"

#define KVLAB_STR2(x) #x
#define KVLAB_STR(x) KVLAB_STR2(x)

/// Checks a cuBLAS status: throws kernels::CudaError "CALL failed: cuBLAS status N (file:line)".
#define KVLAB_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                             \
    const cublasStatus_t kvlab_cublas_ = (call);                                                   \
    if (kvlab_cublas_ != CUBLAS_STATUS_SUCCESS)                                                    \
      throw ::kvlab::kernels::CudaError(std::string(#call) + " failed: cuBLAS status " +          \
                                        std::to_string(static_cast<int>(kvlab_cublas_)) + " (" +  \
                                        __FILE__ + ":" + std::to_string(__LINE__) + ")");          \
  } while (0)

namespace kvlab::kernels {

/// The cuBLAS entry points kvlab uses, as pointers into the dlopen'ed libcublas.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

/// libcublas.so.<major of the headers> (else libcublas.so), opened on first use and never closed.
/// Throws CudaError naming dlopen or the missing symbol; a later call tries again (a throwing
/// initialiser leaves the static uninitialised). Thread-safe (a function-local static); inline,
/// so every translation unit shares one instance.
inline const Cublas& cublas() {
  static const Cublas api = [] {
    void* lib = nullptr;
    for (const char* name : {"libcublas.so." KVLAB_STR(CUBLAS_VER_MAJOR), "libcublas.so"})
      if (!lib) lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw CudaError(std::string("dlopen(libcublas.so) failed: ") + dlerror());
    Cublas c;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) throw CudaError(std::string("dlsym(") + name + ") failed: not in libcublas");
    };
    sym(c.create, "cublasCreate_v2");
    sym(c.destroy, "cublasDestroy_v2");
    sym(c.set_math_mode, "cublasSetMathMode");
    sym(c.set_stream, "cublasSetStream_v2");
    sym(c.sgemm, "cublasSgemm_v2");
    return c;
  }();
  return api;
}

}  // namespace kvlab::kernels
