#include "model/f32_kernels.hpp"

#include <algorithm>
#include <cstddef>

#include <Eigen/Core>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef KVLAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

// Function multi-versioning (GCC/clang on x86-64): one clone per instruction set, chosen when the
// library loads, so a portable build still runs AVX-512 on a machine that has it.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && (defined(__GNUC__) || defined(__clang__))
#define KVLAB_CLONES __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define KVLAB_CLONES
#endif

namespace kvlab {
namespace {

// Rows o0..o1 of wt against all `rows` rows of x: four batch rows at a time share one load of the
// weight row, so W^T is read from memory once whatever the batch.
KVLAB_CLONES
void stream_rows(const float* x, int rows, int in, const float* wt, const float* bias, int o0, int o1, float* y,
                 int ldy) {
  for (int o = o0; o < o1; ++o) {
    const float* w = wt + static_cast<std::ptrdiff_t>(o) * in;
    const float b = bias ? bias[o] : 0.0f;
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
      const float* x0 = x + static_cast<std::ptrdiff_t>(r) * in;
      const float* x1 = x0 + in;
      const float* x2 = x1 + in;
      const float* x3 = x2 + in;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (int i = 0; i < in; ++i) {
        const float wi = w[i];
        s0 += wi * x0[i];
        s1 += wi * x1[i];
        s2 += wi * x2[i];
        s3 += wi * x3[i];
      }
      y[static_cast<std::ptrdiff_t>(r) * ldy + o] = s0 + b;
      y[static_cast<std::ptrdiff_t>(r + 1) * ldy + o] = s1 + b;
      y[static_cast<std::ptrdiff_t>(r + 2) * ldy + o] = s2 + b;
      y[static_cast<std::ptrdiff_t>(r + 3) * ldy + o] = s3 + b;
    }
    for (; r < rows; ++r) {
      const float* xr = x + static_cast<std::ptrdiff_t>(r) * in;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int i = 0; i < in; ++i) s += w[i] * xr[i];
      y[static_cast<std::ptrdiff_t>(r) * ldy + o] = s + b;
    }
  }
}

// The output features split in `parts` contiguous ranges, aligned to 16 (one cache line of y).
void split(int out, int part, int parts, int& o0, int& o1) {
  const int blocks = (out + 15) / 16;
  o0 = std::min(out, static_cast<int>(static_cast<long long>(blocks) * part / parts) * 16);
  o1 = std::min(out, static_cast<int>(static_cast<long long>(blocks) * (part + 1) / parts) * 16);
}

void stream_parallel(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy) {
#pragma omp parallel
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
    const int t = 0, n = 1;
#endif
    int o0, o1;
    split(out, t, n, o0, o1);
    if (o0 < o1) stream_rows(x, rows, in, wt, bias, o0, o1, y, ldy);
  }
}

}  // namespace

void stream_matmul_f32(const float* x, int rows, int in, const float* wt, int out, float* y, int ldy) {
  stream_parallel(x, rows, in, wt, nullptr, out, y, ldy);
}

void linear_f32(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy) {
  if (rows < kGemmRows) {
    stream_parallel(x, rows, in, wt, bias, out, y, ldy);
    return;
  }
#ifdef KVLAB_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, wt, in, 0.0f, y, ldy);
#else
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
#pragma omp parallel
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
#else
    const int t = 0, n = 1;
#endif
    int o0, o1;
    split(out, t, n, o0, o1);
    if (o0 < o1) {
      Eigen::Map<const RowMat> X(x, rows, in);
      Eigen::Map<const RowMat> Wt(wt + static_cast<std::ptrdiff_t>(o0) * in, o1 - o0, in);
      Eigen::Map<RowMat, 0, Eigen::OuterStride<>> Y(y + o0, rows, o1 - o0, Eigen::OuterStride<>(ldy));
      Y.noalias() = X * Wt.transpose();
    }
  }
#endif
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r) {
      float* yr = y + static_cast<std::ptrdiff_t>(r) * ldy;
#pragma omp simd
      for (int o = 0; o < out; ++o) yr[o] += bias[o];
    }
  }
}

KVLAB_CLONES
float dot_f32(const float* a, const float* b, int n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

KVLAB_CLONES
void axpy_f32(float a, const float* x, float* y, int n) {
#pragma omp simd
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace kvlab
