// Multi-threaded float32 kernels of the fast CPU path (model/fast_gpt.hpp, issue 9).
//
// linear_f32 is y = x W + b with W given transposed (W^T [out, in], one contiguous row per output
// feature). Few rows (decode, B <= kGemmRows): the output features are split across OpenMP
// threads and each thread streams its rows of W^T once, computing all B dot products per row
// (a vectorised kernel compiled for AVX-512, AVX2+FMA and baseline x86-64, picked at run time).
// Many rows (prefill): each OpenMP thread multiplies its slice of the output features by OpenBLAS
// sgemm (set to one thread: one pool of threads, kvlab's) when kvlab was built with it, else by
// Eigen's GEMM. The choice and its measurements: docs/perf.md.
#pragma once

namespace kvlab {

/// Rows at or above which linear_f32 calls the GEMM (OpenBLAS or Eigen) rather than the
/// streaming kernel (measured: docs/perf.md, "Eigen, OpenBLAS or our own kernel").
inline constexpr int kGemmRows = 16;

/// y[r, o] = bias[o] + sum_i x[r, i] wt[o, i] for r < rows, o < out. x: [rows, in] row-major
/// (leading dimension in); wt: [out, in]; bias: [out] or nullptr; y: [rows, out] (leading
/// dimension ldy >= out). Allocates nothing. Preconditions (not checked): all sizes positive,
/// y does not overlap x or wt.
void linear_f32(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy);

/// y[r, o] = sum_i x[r, i] wt[o, i] through the streaming kernel only, on `threads` threads
/// (for the measurements of docs/perf.md and the unit test).
void stream_matmul_f32(const float* x, int rows, int in, const float* wt, int out, float* y, int ldy);

/// C[m, n] = A[m, k] op(B) with op(B) = B^T (B [n, k], trans_b) or B (B [k, n]); row-major with
/// leading dimensions lda, ldb, ldc, on the calling thread (OpenBLAS sgemm set to one thread when
/// built with it, else Eigen), so OpenMP threads may call it concurrently. Allocates nothing in
/// kvlab (the BLAS may use its own buffers).
void gemm_f32(int m, int n, int k, const float* a, int lda, const float* b, int ldb, bool trans_b, float* c, int ldc);

/// Dot product of n floats (vectorised; for attention).
float dot_f32(const float* a, const float* b, int n);
/// y += a x over n floats (vectorised).
void axpy_f32(float a, const float* x, float* y, int n);

}  // namespace kvlab
