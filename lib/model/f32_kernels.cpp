#include "model/f32_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

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
// GCC only (clang spells the target region differently): tiles for AVX2 with intrinsic loads.
#if KVLAB_MULTIVERSION && defined(__GNUC__) && !defined(__clang__)
#define KVLAB_WIDE_TILES 1
#define KVLAB_AVX2_BODY [[gnu::always_inline]] inline __attribute__((target("avx2,fma")))
#include <immintrin.h>
#else
#define KVLAB_WIDE_TILES 0
#endif

namespace kvlab {
namespace {

// Eight floats, loaded unaligned (GCC/Clang vector extension: one ymm register under AVX2, two
// xmm registers in the baseline build). With -ffp-contract=fast (lib/CMakeLists.txt) `acc += w * x`
// is one fused multiply-add.
using Float8 = float __attribute__((vector_size(32)));

KVLAB_BODY Float8 load8(const float* p) {
  Float8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

KVLAB_BODY float sum8(Float8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// How a tile reads its weight rows: float32 (F32Rows), int8 (Q8Rows) or packed int4 (Q4Rows),
// 8 weights at a time as floats; the quantized ones scaled per row after the dot product.
// load_wide: the same with AVX2 intrinsics, for the tiles compiled for AVX2 (KVLAB_WIDE_TILES).
struct F32Rows {
  using T = float;
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * in; }
  static const void* address(const T* r, int i) { return r + i; }
  KVLAB_BODY static Float8 load(const T* r, int i) { return load8(r + i); }
#if KVLAB_WIDE_TILES
  KVLAB_AVX2_BODY static Float8 load_wide(const T* r, int i) { return load8(r + i); }
#endif
  static float at(const T* r, int j) { return r[j]; }
};
struct Q8Rows {
  using T = std::int8_t;
  using I8 = std::int8_t __attribute__((vector_size(8)));
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * in; }
  static const void* address(const T* r, int i) { return r + i; }
#if KVLAB_WIDE_TILES
  KVLAB_AVX2_BODY static Float8 load_wide(const T* r, int i) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + i));
    return reinterpret_cast<Float8>(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
  }
#endif
  KVLAB_BODY static Float8 load(const T* r, int i) {
    I8 v;
    std::memcpy(&v, r + i, sizeof v);
    return __builtin_convertvector(v, Float8);
  }
  static float at(const T* r, int j) { return r[j]; }
};
// int4: weights 8j .. 8j + 7 of a row in bytes 4j .. 4j + 3, byte 4j + k holding weight 8j + k in
// its low nibble and 8j + k + 4 in its high one, each stored as q + 8 (q in [-7, 7]).
struct Q4Rows {
  using T = std::uint8_t;
  using U4 = std::uint8_t __attribute__((vector_size(4)));
  using U8 = std::uint8_t __attribute__((vector_size(8)));
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * (in / 2); }
  static const void* address(const T* r, int i) { return r + i / 2; }
#if KVLAB_WIDE_TILES
  KVLAB_AVX2_BODY static Float8 load_wide(const T* r, int i) {
    std::int32_t word;
    std::memcpy(&word, r + i / 2, sizeof word);
    const __m128i b = _mm_cvtsi32_si128(word), mask = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpacklo_epi32(lo, hi)));
    return reinterpret_cast<Float8>(_mm256_sub_ps(f, _mm256_set1_ps(8.0f)));
  }
#endif
  KVLAB_BODY static Float8 load(const T* r, int i) {
    U4 b;
    std::memcpy(&b, r + i / 2, sizeof b);
    const U4 lo = b & static_cast<std::uint8_t>(15), hi = b >> static_cast<std::uint8_t>(4);
    const U8 both = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    return __builtin_convertvector(both, Float8) - 8.0f;
  }
  static float at(const T* r, int j) {
    const int k = j % 8;
    const std::uint8_t b = r[(j / 8) * 4 + k % 4];
    return static_cast<float>((k < 4 ? b & 15 : b >> 4) - 8);
  }
};

#define KVLAB_TILE_LOAD(W, row, i) W::load(row, i)
#include "model/f32_tiles.inc"
#undef KVLAB_TILE_LOAD

#if KVLAB_WIDE_TILES
// The same tiles compiled for AVX2 + FMA, widening int8 / int4 weights with one instruction each
// (Q8Rows::load_wide, Q4Rows::load_wide). GCC 12 turns the generic __builtin_convertvector from
// 8-bit lanes into 8 scalar conversions per vector (the int8 draft ran 3x slower than float32).
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace wide {
#define KVLAB_TILE_LOAD(W, row, i) W::load_wide(row, i)
#include "model/f32_tiles.inc"
#undef KVLAB_TILE_LOAD
}  // namespace wide
#pragma GCC pop_options
#endif

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
template <class W, class... A>
KVLAB_AVX512 void stream_rows_avx512(A... a) { stream_rows_body<W>(a...); }
template <class W, class... A>
KVLAB_AVX2 void stream_rows_avx2(A... a) {
#if KVLAB_WIDE_TILES
  if constexpr (!std::is_same_v<W, F32Rows>) return wide::stream_rows_body<W>(a...);
#endif
  stream_rows_body<W>(a...);
}
#endif

template <class W>
void stream_rows(const float* x, int rows, int in, const typename W::T* wt, const float* scale, const float* bias, int o0,
                 int o1, float* y, int ldy) {
#if KVLAB_MULTIVERSION
  if (isa() == Isa::avx512 && std::is_same_v<W, F32Rows>) return stream_rows_avx512<W>(x, rows, in, wt, scale, bias, o0, o1, y, ldy);
  if (isa() != Isa::baseline) return stream_rows_avx2<W>(x, rows, in, wt, scale, bias, o0, o1, y, ldy);
#endif
  stream_rows_body<W>(x, rows, in, wt, scale, bias, o0, o1, y, ldy);
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

template <class W = F32Rows>
void stream_parallel(const float* x, int rows, int in, const typename W::T* wt, const float* scale, const float* bias,
                     int out, float* y, int ldy) {
  const int chunks = (out + kChunk - 1) / kChunk;
  const bool big = static_cast<long long>(rows) * in * out >= kParallelMacs;
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1 && big)
  for (int ch = 0; ch < chunks; ++ch)
    stream_rows<W>(x, rows, in, wt, scale, bias, ch * kChunk, std::min(out, (ch + 1) * kChunk), y, ldy);
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
  stream_parallel(x, rows, in, wt, nullptr, nullptr, out, y, ldy);
}

void linear_f32(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy) {
  if (rows < kGemmRows) {
    stream_parallel(x, rows, in, wt, nullptr, bias, out, y, ldy);
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

void linear_q8(const float* x, int rows, int in, const std::int8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy) {
  stream_parallel<Q8Rows>(x, rows, in, wq, scale, bias, out, y, ldy);
}

void linear_q4(const float* x, int rows, int in, const std::uint8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy) {
  stream_parallel<Q4Rows>(x, rows, in, wq, scale, bias, out, y, ldy);
}

void quantize_rows(const float* wt, int out, int in, int bits, std::uint8_t* q, float* scale) {
  const int levels = bits == 8 ? 127 : 7;
  for (int o = 0; o < out; ++o) {
    const float* w = wt + static_cast<std::ptrdiff_t>(o) * in;
    float mx = 0.0f;
    for (int i = 0; i < in; ++i) mx = std::max(mx, std::abs(w[i]));
    const float s = mx > 0.0f ? mx / static_cast<float>(levels) : 1.0f;
    scale[o] = s;
    auto level = [&](int i) {
      return static_cast<int>(std::clamp(std::nearbyint(w[i] / s), static_cast<float>(-levels), static_cast<float>(levels)));
    };
    if (bits == 8) {
      auto* row = reinterpret_cast<std::int8_t*>(q) + static_cast<std::ptrdiff_t>(o) * in;
      for (int i = 0; i < in; ++i) row[i] = static_cast<std::int8_t>(level(i));
    } else {
      std::uint8_t* row = q + static_cast<std::ptrdiff_t>(o) * (in / 2);
      for (int j = 0; j < in; j += 8)
        for (int k = 0; k < 4; ++k)
          row[j / 2 + k] = static_cast<std::uint8_t>((level(j + k) + 8) | ((level(j + k + 4) + 8) << 4));
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
