#include "model/f32_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <Eigen/Core>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef KVLAB_HAVE_OPENBLAS
#include <cblas.h>

#include <mutex>
#endif

// One kernel body, compiled for AVX-512, AVX2+FMA and baseline x86-64; the widest the CPU supports
// is picked once, by __builtin_cpu_supports (feature bits). GCC's target_clones("arch=...")
// resolver asks __builtin_cpu_is, the CPU *model*: on a CPU it cannot name (this VM's "Intel Xeon
// Processor", which has AVX-512) it fell back to the baseline SSE2 clone, and the fast path
// streamed its weights at 128-bit width (measured: 17 GB/s against 30 GB/s; docs/perf.md).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && (defined(__GNUC__) || defined(__clang__))
#define KVLAB_MULTIVERSION 1
#define KVLAB_BODY [[gnu::always_inline]] inline
#define KVLAB_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#define KVLAB_AVX2 __attribute__((target("avx2,fma")))
#else
#define KVLAB_MULTIVERSION 0
#define KVLAB_BODY inline
#endif

namespace kvlab {
namespace {

// Rows o0..o1 of wt against all `rows` rows of x: four batch rows at a time share one load of the
// weight row, so W^T is read from memory once whatever the batch.
KVLAB_BODY void stream_rows_body(const float* x, int rows, int in, const float* wt, const float* bias, int o0, int o1,
                                 float* y, int ldy) {
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

// The widest instruction set this CPU supports, by feature bits (checked once).
enum class Isa { avx512, avx2, baseline };

Isa detect_isa() {
#if KVLAB_MULTIVERSION
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::baseline;
}

Isa isa() {
  static const Isa chosen = detect_isa();
  return chosen;
}

#if KVLAB_MULTIVERSION
template <class... A>
KVLAB_AVX512 void stream_rows_avx512(A... a) { stream_rows_body(a...); }
template <class... A>
KVLAB_AVX2 void stream_rows_avx2(A... a) { stream_rows_body(a...); }
#endif

void stream_rows(const float* x, int rows, int in, const float* wt, const float* bias, int o0, int o1, float* y, int ldy) {
#if KVLAB_MULTIVERSION
  if (isa() == Isa::avx512) return stream_rows_avx512(x, rows, in, wt, bias, o0, o1, y, ldy);
  if (isa() == Isa::avx2) return stream_rows_avx2(x, rows, in, wt, bias, o0, o1, y, ldy);
#endif
  stream_rows_body(x, rows, in, wt, bias, o0, o1, y, ldy);
}

// Output features in chunks handed out dynamically: on a shared machine a descheduled thread
// leaves its chunks to the others instead of holding every thread at the join (a static split
// waits for the slowest thread in each of the ~40 products of a decode step).
constexpr int kChunk = 64;
// Products with fewer multiply-adds than this (4 MB of float32 weights, beyond a core's L2) run on
// the calling thread: waking the other threads
// costs more than it saves, and on a loaded machine each parallel region can wait milliseconds for
// a descheduled thread (measured: a d_model 256 decode step took ~100 ms at load 9 with every
// product threaded).
constexpr long long kParallelMacs = 1ll << 20;

void stream_parallel(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy) {
  const int chunks = (out + kChunk - 1) / kChunk;
  const bool big = static_cast<long long>(rows) * in * out >= kParallelMacs;
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1 && big)
  for (int ch = 0; ch < chunks; ++ch)
    stream_rows(x, rows, in, wt, bias, ch * kChunk, std::min(out, (ch + 1) * kChunk), y, ldy);
}

#ifdef KVLAB_HAVE_OPENBLAS
// OpenBLAS runs on the caller's thread: kvlab's OpenMP threads split the work. Two thread pools on
// the same cores fight: OpenBLAS's idle workers spin for ~2^28 cycles after each call (its
// THREAD_TIMEOUT), starving the OpenMP threads of the next kernel (measured: a 2 MB decode step
// took 150 ms instead of 0.1 ms on this 2-core VM). OpenBLAS documents this setting for
// applications that are already multi-threaded.
void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
#endif

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
  single_threaded_blas();
#else
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
#endif
  const int gchunk = 4 * kChunk, gchunks = (out + gchunk - 1) / gchunk;
#pragma omp parallel for schedule(dynamic, 1) if (gchunks > 1 && static_cast<long long>(rows) * in * out >= kParallelMacs)
  for (int ch = 0; ch < gchunks; ++ch) {
    const int o0 = ch * gchunk, o1 = std::min(out, o0 + gchunk);
#ifdef KVLAB_HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, o1 - o0, in, 1.0f, x, in,
                wt + static_cast<std::ptrdiff_t>(o0) * in, in, 0.0f, y + o0, ldy);
#else
    Eigen::Map<const RowMat> X(x, rows, in);
    Eigen::Map<const RowMat> Wt(wt + static_cast<std::ptrdiff_t>(o0) * in, o1 - o0, in);
    Eigen::Map<RowMat, 0, Eigen::OuterStride<>> Y(y + o0, rows, o1 - o0, Eigen::OuterStride<>(ldy));
    Y.noalias() = X * Wt.transpose();
#endif
  }
  if (bias) {
#pragma omp parallel for schedule(static) if (static_cast<long long>(rows) * out >= (1 << 16))
    for (int r = 0; r < rows; ++r) {
      float* yr = y + static_cast<std::ptrdiff_t>(r) * ldy;
#pragma omp simd
      for (int o = 0; o < out; ++o) yr[o] += bias[o];
    }
  }
}

void gemm_f32(int m, int n, int k, const float* a, int lda, const float* b, int ldb, bool trans_b, float* c, int ldc) {
#ifdef KVLAB_HAVE_OPENBLAS
  single_threaded_blas();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
              ldc);
#else
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strided = Eigen::OuterStride<>;
  Eigen::Map<const RowMat, 0, Strided> A(a, m, k, Strided(lda));
  Eigen::Map<RowMat, 0, Strided> C(c, m, n, Strided(ldc));
  if (trans_b)
    C.noalias() = A * Eigen::Map<const RowMat, 0, Strided>(b, n, k, Strided(ldb)).transpose();
  else
    C.noalias() = A * Eigen::Map<const RowMat, 0, Strided>(b, k, n, Strided(ldb));
#endif
}

namespace {

KVLAB_BODY void attend_chunk_body(const float* q, int n_head, int n_kv_head, int head_dim, const float* k,
                                  const float* v, long row_stride, int n, float scale, float* scores, float* m, float* l,
                                  float* out) {
  const int group = n_head / n_kv_head, hd = head_dim;
  // Scores, K row by K row: every head's dot products with row j before row j + 1 (one stream).
  for (int j = 0; j < n; ++j) {
    const float* kj = k + static_cast<std::ptrdiff_t>(j) * row_stride;
    for (int h = 0; h < n_head; ++h) {
      const float* qh = q + static_cast<std::ptrdiff_t>(h) * hd;
      const float* kh = kj + static_cast<std::ptrdiff_t>(h / group) * hd;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int i = 0; i < hd; ++i) s += qh[i] * kh[i];
      scores[static_cast<std::ptrdiff_t>(h) * n + j] = s * scale;
    }
  }
  for (int h = 0; h < n_head; ++h) {
    float* sh = scores + static_cast<std::ptrdiff_t>(h) * n;
    float mx = sh[0];
    for (int j = 1; j < n; ++j) mx = std::max(mx, sh[j]);
    float sum = 0;
    for (int j = 0; j < n; ++j) sum += (sh[j] = std::exp(sh[j] - mx));
    m[h] = mx;
    l[h] = sum;
  }
  std::fill(out, out + static_cast<std::ptrdiff_t>(n_head) * hd, 0.0f);
  // Weighted V rows, V row by V row.
  for (int j = 0; j < n; ++j) {
    const float* vj = v + static_cast<std::ptrdiff_t>(j) * row_stride;
    for (int h = 0; h < n_head; ++h) {
      const float p = scores[static_cast<std::ptrdiff_t>(h) * n + j];
      const float* vh = vj + static_cast<std::ptrdiff_t>(h / group) * hd;
      float* oh = out + static_cast<std::ptrdiff_t>(h) * hd;
#pragma omp simd
      for (int i = 0; i < hd; ++i) oh[i] += p * vh[i];
    }
  }
}

#if KVLAB_MULTIVERSION
template <class... A>
KVLAB_AVX512 void attend_chunk_avx512(A... a) { attend_chunk_body(a...); }
template <class... A>
KVLAB_AVX2 void attend_chunk_avx2(A... a) { attend_chunk_body(a...); }
#endif

}  // namespace

void attend_chunk_f32(const float* q, int n_head, int n_kv_head, int head_dim, const float* k, const float* v,
                      long row_stride, int n, float scale, float* scores, float* m, float* l, float* out) {
#if KVLAB_MULTIVERSION
  if (isa() == Isa::avx512) return attend_chunk_avx512(q, n_head, n_kv_head, head_dim, k, v, row_stride, n, scale, scores, m, l, out);
  if (isa() == Isa::avx2) return attend_chunk_avx2(q, n_head, n_kv_head, head_dim, k, v, row_stride, n, scale, scores, m, l, out);
#endif
  attend_chunk_body(q, n_head, n_kv_head, head_dim, k, v, row_stride, n, scale, scores, m, l, out);
}

const char* fast_isa() {
  switch (isa()) {
    case Isa::avx512: return "AVX-512";
    case Isa::avx2: return "AVX2+FMA";
    default: return "baseline (no AVX2)";
  }
}

void combine_chunks_f32(int chunks, int n_head, int head_dim, const float* m, const float* l, const float* out,
                        float* y) {
  for (int h = 0; h < n_head; ++h) {
    float mx = m[h];
    for (int c = 1; c < chunks; ++c) mx = std::max(mx, m[static_cast<std::ptrdiff_t>(c) * n_head + h]);
    float* yh = y + static_cast<std::ptrdiff_t>(h) * head_dim;
    std::fill(yh, yh + head_dim, 0.0f);
    float den = 0;
    for (int c = 0; c < chunks; ++c) {
      const float w = std::exp(m[static_cast<std::ptrdiff_t>(c) * n_head + h] - mx);
      den += w * l[static_cast<std::ptrdiff_t>(c) * n_head + h];
      const float* oh = out + (static_cast<std::ptrdiff_t>(c) * n_head + h) * head_dim;
      for (int i = 0; i < head_dim; ++i) yh[i] += w * oh[i];
    }
    const float inv = 1.0f / den;
    for (int i = 0; i < head_dim; ++i) yh[i] *= inv;
  }
}

}  // namespace kvlab
