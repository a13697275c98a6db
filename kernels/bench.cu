// Timing of kvlab's decode-attention kernels, a device-to-device copy and cuBLAS SGEMM, for
// `kvlab bench kernels` (apps/kvlab/bench_command.cpp). The goals (docs/gpu.md): decode
// attention >= 80% of the copy bandwidth at >= 1 GiB of KV per launch; paged within 10%.
//
// Method (llm.c dev/cuda, test-backend-ops perf mode): inputs live on the device; `warmup`
// untimed launches, then `repeats` launches each timed by a pair of CUDA events; the caller takes
// the median. Inputs rotate over enough buffers that their total exceeds twice the L2 cache
// (where memory allows), so a timed launch reads its cache from HBM, not from L2.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>

#include <cuda_runtime.h>

#include "kernels/attention_launch.cuh"
#include "kernels/cublas_loader.cuh"
#include "kernels/cuda_check.cuh"

namespace kvlab::kernels {
namespace {

/// A pair of CUDA events around each launch.
class EventTimer {
 public:
  EventTimer() {
    KVLAB_CUDA_CHECK(cudaEventCreate(&start_));
    KVLAB_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  template <class F>
  double time_ms(F&& launch) {
    KVLAB_CUDA_CHECK(cudaEventRecord(start_));
    launch();
    KVLAB_CUDA_CHECK(cudaEventRecord(stop_));
    KVLAB_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.f;
    KVLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

/// How many rotating copies of a `bytes` input: total >= 2 x L2, at most 1/2 of free memory.
int rotation_count(std::size_t bytes) {
  const DeviceFacts f = device_facts();
  const std::size_t want = bytes > 0 ? (2 * f.l2_bytes + bytes - 1) / bytes : 1;
  std::size_t n = std::max<std::size_t>(1, want);
  while (n > 1 && n * bytes > f.free_bytes / 2) --n;
  if (bytes > f.free_bytes)
    throw CudaError("bench: " + std::to_string(bytes >> 20) + " MiB of inputs do not fit in the device's " +
                    std::to_string(f.free_bytes >> 20) + " MiB free memory; use a smaller --batch or --kv-ctx");
  return static_cast<int>(std::min<std::size_t>(n, 64));
}

/// Values in [-1, 1) from a cheap hash. bf16 = true: each 32-bit word holds the value's bf16 (top
/// half) twice, so a bf16 buffer holds finite values in [-1, 1) too.
__global__ void fill_kernel(float* p, std::size_t n, std::uint32_t seed, bool bf16) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  const float x = static_cast<float>(h >> 8) * (2.f / 16777216.f) - 1.f;
  if (!bf16) {
    p[i] = x;
    return;
  }
  const std::uint32_t top = __float_as_uint(x) >> 16;
  p[i] = __uint_as_float(top << 16 | top);
}

void fill(void* p, std::size_t bytes, std::uint32_t seed, bool bf16 = false) {
  const std::size_t n = bytes / 4;
  const std::size_t blocks = (n + 255) / 256;
  fill_kernel<<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), 256>>>(static_cast<float*>(p), n, seed, bf16);
  KVLAB_CUDA_LAUNCHED("fill_kernel");
}

}  // namespace

DeviceFacts device_facts() {
  DeviceFacts f;
  int dev = 0;
  KVLAB_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  KVLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  f.name = prop.name;
  f.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  f.sm_count = prop.multiProcessorCount;
  KVLAB_CUDA_CHECK(cudaMemGetInfo(&f.free_bytes, &f.total_bytes));
  return f;
}

KernelTiming bench_decode_attention(const AttentionBenchConfig& c) {
  check_attention_shape(c.n_head, c.n_kv_head, c.head_dim);
  const int sms = device_facts().sm_count;
  AttentionArgs a;
  a.batch = c.batch, a.n_head = c.n_head, a.n_kv_head = c.n_kv_head, a.head_dim = c.head_dim;
  a.paged = c.paged, a.block_size = c.block_size, a.storage = c.storage;
  a.blocks_per_seq = (c.ctx + c.block_size - 1) / c.block_size;
  a.max_ctx = c.paged ? 1 : c.ctx;
  plan_attention(a, c.ctx, sms);
  const std::size_t rows = c.paged ? static_cast<std::size_t>(c.batch) * a.blocks_per_seq * c.block_size
                                   : static_cast<std::size_t>(c.batch) * c.ctx;
  const std::size_t cache_bytes = rows * c.n_kv_head * c.head_dim * (c.storage == Storage::f32 ? 4 : 2);
  const int nbuf = rotation_count(2 * cache_bytes);
  std::vector<DeviceBuffer> ks, vs;
  for (int i = 0; i < nbuf; ++i) {
    ks.emplace_back(cache_bytes), vs.emplace_back(cache_bytes);
    const bool bf16 = c.storage == Storage::bf16;
    fill(ks.back().as<void>(), cache_bytes, 2 * i + 1 + static_cast<std::uint32_t>(c.seed), bf16);
    fill(vs.back().as<void>(), cache_bytes, 2 * i + 2 + static_cast<std::uint32_t>(c.seed), bf16);
  }
  const std::size_t q_elems = static_cast<std::size_t>(c.batch) * c.n_head * c.head_dim;
  DeviceBuffer q(q_elems * 4), out(q_elems * 4), work(attention_workspace_floats(a) * 4);
  fill(q.as<void>(), q_elems * 4, 7);
  DeviceBuffer lengths = to_device(std::vector<int>(static_cast<std::size_t>(c.batch), c.ctx));
  // Paged: the pool's blocks in a seeded random order, so the gather is a real one.
  std::vector<int> table(static_cast<std::size_t>(c.batch) * a.blocks_per_seq);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(c.seed));
  DeviceBuffer table_d = to_device(table);
  const std::size_t heads = static_cast<std::size_t>(a.batch) * a.n_head * a.n_chunks;
  a.q = q.as<float>(), a.lengths = lengths.as<int>(), a.table = table_d.as<int>(), a.out = out.as<float>();
  a.part_acc = work.as<float>(), a.part_m = a.part_acc + heads * a.head_dim, a.part_l = a.part_m + heads;
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  KernelTiming t;
  t.buffers = nbuf;
  for (int r = 0; r < c.warmup + c.repeats; ++r) {
    a.k = ks[r % nbuf].as<void>(), a.v = vs[r % nbuf].as<void>();
    const double ms = timer.time_ms([&] { launch_decode_attention(a, nullptr); });
    if (r >= c.warmup) t.ms.push_back(ms);
  }
  return t;
}

KernelTiming bench_copy(std::size_t bytes, int warmup, int repeats) {
  const int nbuf = rotation_count(2 * bytes);
  std::vector<DeviceBuffer> src, dst;
  for (int i = 0; i < nbuf; ++i) {
    src.emplace_back(bytes), dst.emplace_back(bytes);
    fill(src.back().as<void>(), bytes, 11 + i);
  }
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  KernelTiming t;
  t.buffers = nbuf;
  for (int r = 0; r < warmup + repeats; ++r) {
    const double ms = timer.time_ms([&] {
      KVLAB_CUDA_CHECK(cudaMemcpyAsync(dst[r % nbuf].as<void>(), src[r % nbuf].as<void>(), bytes,
                                       cudaMemcpyDeviceToDevice));
    });
    if (r >= warmup) t.ms.push_back(ms);
  }
  return t;
}

KernelTiming bench_sgemm(int m, int n, int k, int warmup, int repeats) {
  const std::size_t a_bytes = static_cast<std::size_t>(m) * k * 4, b_bytes = static_cast<std::size_t>(k) * n * 4;
  const std::size_t c_bytes = static_cast<std::size_t>(m) * n * 4;
  DeviceBuffer A(a_bytes), B(b_bytes), C(c_bytes);
  fill(A.as<void>(), a_bytes, 21), fill(B.as<void>(), b_bytes, 22);
  const Cublas& blas = cublas();
  cublasHandle_t h = nullptr;
  KVLAB_CUBLAS_CHECK(blas.create(&h));
  struct Destroy {
    const Cublas& blas;
    cublasHandle_t h;
    ~Destroy() { blas.destroy(h); }
  } destroy{blas, h};
  // Plain FP32 (no TF32 tensor-core shortcut): the products of the f32 model, as computed.
  KVLAB_CUBLAS_CHECK(blas.set_math_mode(h, CUBLAS_DEFAULT_MATH));
  const float alpha = 1.f, beta = 0.f;
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  KernelTiming t;
  for (int r = 0; r < warmup + repeats; ++r) {
    // Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T = B^T A^T.
    const double ms = timer.time_ms([&] {
      KVLAB_CUBLAS_CHECK(blas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B.as<float>(), n, A.as<float>(),
                                     k, &beta, C.as<float>(), n));
    });
    if (r >= warmup) t.ms.push_back(ms);
  }
  return t;
}

}  // namespace kvlab::kernels
