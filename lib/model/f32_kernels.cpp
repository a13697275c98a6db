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
// GCC only (clang spells the target region differently): the quantized drafts' AVX2 integer kernels.
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

// How a tile reads its weight rows: float32, 8 weights at a time (the quantized drafts have
// integer kernels of their own, below linear_f32).
struct F32Rows {
  using T = float;
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * in; }
  static const void* address(const T* r, int i) { return r + i; }
  KVLAB_BODY static Float8 load(const T* r, int i) { return load8(r + i); }
  static float at(const T* r, int j) { return r[j]; }
};

// A WO x RB tile: weight rows o .. o + WO - 1 against batch rows r .. r + RB - 1, WO x RB
// independent accumulators (enough chains to keep both FMA pipes busy), each weight vector loaded
// once for the RB rows and each input vector once for the WO weight rows.
// `prefetch`: also prefetch the same offsets of the next WO weight rows (the next tile), which
// must exist (a short row is too short a stream for the hardware prefetcher to ramp up).
template <class W, int WO, int RB>
KVLAB_BODY void stream_tile(const float* x, int in, const typename W::T* wt, const float* scale, const float* bias,
                            int o, int r, float* y, int ldy, bool prefetch) {
  Float8 acc[WO][RB] = {};
  const typename W::T* w[WO];
  const typename W::T* next[WO];
  const float* xr[RB];
  for (int a = 0; a < WO; ++a) w[a] = W::row(wt, o + a, in);
  for (int a = 0; a < WO; ++a) next[a] = prefetch ? W::row(wt, o + WO + a, in) : w[a];
  for (int b = 0; b < RB; ++b) xr[b] = x + static_cast<std::ptrdiff_t>(r + b) * in;
  int i = 0;
  for (; i + 8 <= in; i += 8) {
    Float8 xv[RB];
    for (int b = 0; b < RB; ++b) xv[b] = load8(xr[b] + i);
    if (prefetch)
      for (int a = 0; a < WO; ++a) __builtin_prefetch(W::address(next[a], i));
    for (int a = 0; a < WO; ++a) {
      const Float8 wv = W::load(w[a], i);
      for (int b = 0; b < RB; ++b) acc[a][b] += wv * xv[b];
    }
  }
  for (int a = 0; a < WO; ++a)
    for (int b = 0; b < RB; ++b) {
      float s = sum8(acc[a][b]);
      for (int j = i; j < in; ++j) s += W::at(w[a], j) * xr[b][j];
      if (scale) s *= scale[o + a];
      y[static_cast<std::ptrdiff_t>(r + b) * ldy + o + a] = s + (bias ? bias[o + a] : 0.0f);
    }
}

// WO weight rows against every batch row, three batch rows per tile: 4 x 3 = 12 accumulators, 3
// input vectors and one weight vector fill AVX2's 16 registers, and each weight vector loaded
// serves 3 FMAs (measured in cache on this VM's Zen core: 26–32 G multiply-adds/s at batch 4–16
// against 20–22 for 2 x 4 tiles, whose input loads the compiler folded into every FMA).
template <class W, int WO>
KVLAB_BODY void stream_weight_rows(const float* x, int rows, int in, const typename W::T* wt, const float* scale,
                                   const float* bias, int o, float* y, int ldy, bool prefetch) {
  int r = 0;  // the first tile reads the weight rows from memory and prefetches the next ones
  for (; r + 3 <= rows; r += 3) stream_tile<W, WO, 3>(x, in, wt, scale, bias, o, r, y, ldy, prefetch && r == 0);
  switch (rows - r) {
    case 2: stream_tile<W, WO, 2>(x, in, wt, scale, bias, o, r, y, ldy, prefetch && r == 0); break;
    case 1: stream_tile<W, WO, 1>(x, in, wt, scale, bias, o, r, y, ldy, prefetch && r == 0); break;
    default: break;
  }
}

// Rows o0..o1 of wt against all `rows` rows of x. Each weight row is read from memory once
// whatever the batch: a tile of 4 weight rows runs over all batch rows while its rows stay in L1.
template <class W>
KVLAB_BODY void stream_rows_body(const float* x, int rows, int in, const typename W::T* wt, const float* scale,
                                 const float* bias, int o0, int o1, float* y, int ldy) {
  int o = o0;
  for (; o + 4 <= o1; o += 4) stream_weight_rows<W, 4>(x, rows, in, wt, scale, bias, o, y, ldy, o + 8 <= o1);
  for (; o < o1; ++o) stream_weight_rows<W, 1>(x, rows, in, wt, scale, bias, o, y, ldy, false);
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
template <class W, class... A>
KVLAB_AVX512 void stream_rows_avx512(A... a) { stream_rows_body<W>(a...); }
template <class W, class... A>
KVLAB_AVX2 void stream_rows_avx2(A... a) { stream_rows_body<W>(a...); }
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

void quantize_activations(const float* x, int rows, int in, std::int8_t* qx, float* sx) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::ptrdiff_t>(r) * in;
    float mx = 0.0f;
    for (int i = 0; i < in; ++i) mx = std::max(mx, std::abs(xr[i]));
    const float s = mx > 0.0f ? mx / 127.0f : 1.0f;
    sx[r] = s;
    std::int8_t* qr = qx + static_cast<std::ptrdiff_t>(r) * in;
    for (int i = 0; i < in; ++i)
      qr[i] = static_cast<std::int8_t>(std::clamp(std::nearbyint(xr[i] / s), -127.0f, 127.0f));
  }
}

namespace {

// Integer dot products of the quantized drafts: int8 activations against int8 or int4 weights,
// summed exactly in int32 (|sum| <= in · 127 · 127 < 2^31 for in < 133,000), then scaled once.
// Widening each weight to float cost 3 instructions per 8 weights and held the int8 draft at
// ~5 G weights/s per core, compute-bound below the memory's rate (c ≈ 0.44 for a quarter of the
// bytes); the AVX2 body below does 32 weights in 4 instructions (sign, multiply-add pairs, widen,
// add), as llama.cpp's Q8_0 dot product does.
struct IntQ8 {
  using T = std::int8_t;
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * in; }
  static int level(const T* r, int i) { return r[i]; }
  static std::ptrdiff_t byte(int i) { return i; }
};
struct IntQ4 {
  using T = std::uint8_t;
  static const T* row(const T* w, int o, int in) { return w + static_cast<std::ptrdiff_t>(o) * (in / 2); }
  static int level(const T* r, int i) {
    const int k = i % 8;
    const std::uint8_t b = r[(i / 8) * 4 + k % 4];
    return (k < 4 ? b & 15 : b >> 4) - 8;
  }
  static std::ptrdiff_t byte(int i) { return i / 2; }
};

// y[r, o] for weight rows o0 .. o1 − 1 and every batch row: four weight rows at a time, each
// batch row in turn (the tile's rows stay in L1 after the first).
template <class W>
void int_rows_generic(const std::int8_t* qx, const float* sx, int rows, int in, const typename W::T* wq,
                      const float* scale, const float* bias, int o0, int o1, float* y, int ldy) {
  for (int o = o0; o < o1; ++o) {
    const typename W::T* w = W::row(wq, o, in);
    for (int r = 0; r < rows; ++r) {
      const std::int8_t* xr = qx + static_cast<std::ptrdiff_t>(r) * in;
      std::int32_t s = 0;
      for (int i = 0; i < in; ++i) s += static_cast<std::int32_t>(xr[i]) * W::level(w, i);
      y[static_cast<std::ptrdiff_t>(r) * ldy + o] = static_cast<float>(s) * (sx[r] * scale[o]) + (bias ? bias[o] : 0.0f);
    }
  }
}

#if KVLAB_WIDE_TILES
KVLAB_AVX2_BODY __m256i load32(const std::int8_t* r, int i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + i));
}
// 32 int4 weights (16 bytes, the packing of quantize_rows) as 32 signed bytes in order.
KVLAB_AVX2_BODY __m256i load32(const std::uint8_t* r, int i) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i / 2)), mask = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  const __m256i w = _mm256_set_m128i(_mm_unpackhi_epi32(lo, hi), _mm_unpacklo_epi32(lo, hi));
  return _mm256_sub_epi8(w, _mm256_set1_epi8(8));
}
KVLAB_AVX2_BODY std::int32_t hsum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

// One weight row against one batch row: |x| times w·sign(x) is x·w, and _mm256_maddubs_epi16 takes
// an unsigned and a signed byte (|x| <= 127 and |w| <= 127: a pair sums to at most 32,258, no
// saturation). Four accumulators, 128 weights a step, so that the adds do not wait on each other.
// The rows of a matrix lie one after another: the kernel reads it front to back as one stream, and
// prefetches kPrefetchBytes ahead of it (a short row alone is too short a stream for the hardware
// prefetcher to ramp up).
constexpr int kPrefetchBytes = 2048;

// acc + the 32 products x[i + k]·w[i + k], summed in pairs and then in fours into eight int32 lanes.
template <class W>
KVLAB_AVX2_BODY __m256i int_step(__m256i acc, const std::int8_t* xr, const typename W::T* w, int i) {
  const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr + i));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(xv), _mm256_sign_epi8(load32(w, i), xv));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

template <class W>
KVLAB_AVX2_BODY std::int32_t int_dot_avx2(const std::int8_t* xr, int in, const typename W::T* w, bool prefetch) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  int i = 0;
  for (; i + 128 <= in; i += 128) {
    if (prefetch)
      for (std::ptrdiff_t b = W::byte(i); b < W::byte(i + 128); b += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(w) + b + kPrefetchBytes);
    for (int a = 0; a < 4; ++a) acc[a] = int_step<W>(acc[a], xr, w, i + 32 * a);
  }
  for (; i + 32 <= in; i += 32) acc[0] = int_step<W>(acc[0], xr, w, i);
  std::int32_t s = hsum(_mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3])));
  for (int j = i; j < in; ++j) s += static_cast<std::int32_t>(xr[j]) * W::level(w, j);
  return s;
}

template <class W>
KVLAB_AVX2 void int_rows_avx2(const std::int8_t* qx, const float* sx, int rows, int in, const typename W::T* wq,
                              const float* scale, const float* bias, int o0, int o1, float* y, int ldy) {
  for (int o = o0; o < o1; ++o) {
    const typename W::T* w = W::row(wq, o, in);
    for (int r = 0; r < rows; ++r)  // the row is in L1 after the first batch row
      y[static_cast<std::ptrdiff_t>(r) * ldy + o] =
          static_cast<float>(int_dot_avx2<W>(qx + static_cast<std::ptrdiff_t>(r) * in, in, w, r == 0)) *
              (sx[r] * scale[o]) +
          (bias ? bias[o] : 0.0f);
  }
}
#endif

template <class W>
void int_parallel(const float* x, int rows, int in, const typename W::T* wq, const float* scale, const float* bias,
                  int out, float* y, int ldy) {
  // The activations quantized once, on the calling thread, into a buffer kept for the next call.
  thread_local std::vector<std::int8_t> qx;
  thread_local std::vector<float> sx;
  if (qx.size() < static_cast<std::size_t>(rows) * in) qx.resize(static_cast<std::size_t>(rows) * in);
  if (sx.size() < static_cast<std::size_t>(rows)) sx.resize(static_cast<std::size_t>(rows));
  quantize_activations(x, rows, in, qx.data(), sx.data());
  const std::int8_t* q = qx.data();
  const float* s = sx.data();
  const int chunks = (out + kChunk - 1) / kChunk;
  const bool big = static_cast<long long>(rows) * in * out >= kParallelMacs;
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1 && big)
  for (int ch = 0; ch < chunks; ++ch) {
    const int o0 = ch * kChunk, o1 = std::min(out, (ch + 1) * kChunk);
#if KVLAB_WIDE_TILES
    if (isa() != Isa::baseline) {
      int_rows_avx2<W>(q, s, rows, in, wq, scale, bias, o0, o1, y, ldy);
      continue;
    }
#endif
    int_rows_generic<W>(q, s, rows, in, wq, scale, bias, o0, o1, y, ldy);
  }
}

}  // namespace

void linear_q8(const float* x, int rows, int in, const std::int8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy) {
  int_parallel<IntQ8>(x, rows, in, wq, scale, bias, out, y, ldy);
}

void linear_q4(const float* x, int rows, int in, const std::uint8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy) {
  int_parallel<IntQ4>(x, rows, in, wq, scale, bias, out, y, ldy);
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
