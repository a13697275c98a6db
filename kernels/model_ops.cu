// The mini-GPT's primitive operations on one CUDA device (kernels/model_ops.hpp,
// `--device cuda`): CudaModelOps, made by make_cuda_model_ops(). model/device_gpt strings these
// calls into the forward pass; device/host_ops is the float32 CPU twin the tests compare with
// ("gpu model ops" in tests/lib/device/gpu_model_ops_test.cpp).
//
//   memory      cudaMalloc / cudaFree / cudaMemcpyAsync / cudaMemsetAsync, all on one stream;
//               upload and download wait for their copy, the operations only queue
//   linear      cuBLAS SGEMM (kernels/cublas_loader.cuh, dlopen'ed), default math mode (no TF32),
//               then bias_add_kernel: y[r, j] += bias[j]
//   embed       embed_kernel: one thread per (row, element), x = wte[token] (+ wpe[pos])
//   add         add_kernel: x[i] += y[i]
//   layer_norm, gelu, rope, kv_append, attention
//               the kernels of kernels/decode_kernels.cu through their launchers
//               (kernels/attention_launch.cuh), no copy of their code
//
// Every CUDA and cuBLAS call is checked (KVLAB_CUDA_CHECK, KVLAB_CUDA_LAUNCHED,
// KVLAB_CUBLAS_CHECK): a failure throws CudaError naming the call, file and line. Host-side index
// arrays (token ids, positions, block tables) go through one device scratch buffer that grows as
// needed; the attention workspace likewise. Every resource is owned by an RAII member, so a throw
// from any call, the constructor included, leaks nothing.
//
// Run it (on a machine with a GPU): build/bin/kvlab_tests -tc="gpu model ops*"
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/attention_launch.cuh"
#include "kernels/cublas_loader.cuh"
#include "kernels/cuda_check.cuh"
#include "kernels/model_ops.hpp"

namespace kvlab::kernels {
namespace {

constexpr int kThreads = 256;  // element-wise kernels

/// x [rows, d]: x[r, e] = wte[tokens[r], e] + (wpe ? wpe[pos[r], e] : 0). tokens and pos are
/// device arrays of `rows` ints (checked by the caller: 0 <= token < vocab, 0 <= pos < n_ctx).
__global__ void embed_kernel(const int* tokens, const int* pos, const float* wte, const float* wpe, float* x,
                             int rows, int d) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::size_t>(rows) * d) return;
  const std::size_t r = i / d, e = i % d;
  const float t = wte[static_cast<std::size_t>(tokens[r]) * d + e];
  x[i] = wpe ? t + wpe[static_cast<std::size_t>(pos[r]) * d + e] : t;
}

/// x [n] += y [n].
__global__ void add_kernel(float* x, const float* y, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

/// y [rows, n] += bias [n] (broadcast over rows), after the GEMM.
__global__ void bias_add_kernel(float* y, const float* bias, std::size_t rows, int n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * n) y[i] += bias[i % n];
}

/// A checked cudaStream_t, destroyed with its owner.
class Stream {
 public:
  Stream() { KVLAB_CUDA_CHECK(cudaStreamCreate(&s_)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);  // no throw from a destructor
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// A cuBLAS handle made on first use (bound to `stream`, default math mode), destroyed with its
/// owner. Lazy, so that an ops object used only for the element-wise kernels never loads
/// cuBLAS's ~0.5 GB of kernels onto the device.
class BlasHandle {
 public:
  BlasHandle() = default;
  ~BlasHandle() {
    if (h_) cublas().destroy(h_);  // cublas() is already open when h_ exists; no throw here
  }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  cublasHandle_t get(cudaStream_t stream) {
    if (h_) return h_;
    const Cublas& blas = cublas();
    cublasHandle_t h = nullptr;
    KVLAB_CUBLAS_CHECK(blas.create(&h));
    try {
      KVLAB_CUBLAS_CHECK(blas.set_stream(h, stream));
      // Plain float32 products. Since cuBLAS 11 an SGEMM may round its inputs to TF32 (10-bit
      // mantissa, u = 2^-11: 8192 x float32's 2^-24) when the handle's math mode allows it
      // (CUBLAS_TF32_TENSOR_OP_MATH). The forward's tolerances (and the "gpu model ops" test's
      // gamma_k sum|x||w| bound) assume float32 products, so the mode is set explicitly rather
      // than left to a default that a library version or NVIDIA_TF32_OVERRIDE could change.
      KVLAB_CUBLAS_CHECK(blas.set_math_mode(h, CUBLAS_DEFAULT_MATH));
    } catch (...) {
      blas.destroy(h);
      throw;
    }
    h_ = h;
    return h_;
  }

 private:
  cublasHandle_t h_ = nullptr;
};

class CudaModelOps final : public ModelOps {
 public:
  CudaModelOps() {
    int dev = 0;
    KVLAB_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    KVLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    name_ = std::string("cuda: ") + prop.name;
    sm_count_ = prop.multiProcessorCount;
    cublas();  // fail here, at construction, when libcublas cannot be opened (not mid-forward)
  }

  ~CudaModelOps() override {
    cudaStreamSynchronize(stream_.get());  // let queued work finish before its buffers go; no throw
    // Members then free, in reverse order: the allocations, the scratch buffers, the cuBLAS
    // handle, the stream (declared first, destroyed last).
  }

  std::string name() const override { return name_; }

  void* alloc(std::size_t bytes) override {
    DeviceBuffer b(bytes > 0 ? bytes : 1);  // a distinct non-null pointer even for 0 bytes
    void* p = b.as<void>();
    allocations_.emplace(p, std::move(b));
    return p;
  }

  /// Unknown pointers (not from this object's alloc, or already released) are ignored.
  void release(void* p) noexcept override {
    if (!p) return;
    const auto it = allocations_.find(p);
    if (it == allocations_.end()) return;
    cudaStreamSynchronize(stream_.get());  // work queued on the buffer finishes first; no throw
    allocations_.erase(it);                // ~DeviceBuffer: cudaFree
  }

  /// Waits for its copy: the caller may reuse or free host_src on return. (From pageable memory
  /// cudaMemcpyAsync only "may" stage the source before returning, CUDA Runtime API "API
  /// synchronization behavior"; it already syncs the stream before such a copy, so the wait after
  /// it costs the copy's own time.)
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    KVLAB_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    synchronize();
  }

  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) KVLAB_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    synchronize();
  }

  void poison(void* p, std::size_t bytes) override {
    if (bytes > 0) KVLAB_CUDA_CHECK(cudaMemsetAsync(p, 0xFF, bytes, stream_.get()));
  }

  void synchronize() override { KVLAB_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

  /// Row-major y [rows, n] = x [rows, k] w [k, n] is, read column-major, y^T [n, rows] =
  /// w^T [n, k] x^T [k, rows]: the same bytes, no transpose. So cuBLAS's C = A B (both
  /// CUBLAS_OP_N) with m = n, n = rows, k = k, A = w (lda = n), B = x (ldb = k), C = y (ldc = n).
  /// The bias is a broadcast add after the GEMM (beta = 0), so y = fl(fl(x w) + b): one more
  /// rounding per element than a fused epilogue, inside the test's gamma_(k+1) bound.
  void linear(const float* x, const float* w, const float* bias, float* y, int rows, int k, int n) override {
    if (rows < 0 || k < 1 || n < 1)
      throw CudaError("linear: rows must be >= 0 and k, n >= 1 (got rows " + std::to_string(rows) + ", k " +
                      std::to_string(k) + ", n " + std::to_string(n) + ")");
    if (rows == 0) return;
    const Cublas& blas = cublas();
    cublasHandle_t h = blas_.get(stream_.get());
    const float alpha = 1.f, beta = 0.f;
    KVLAB_CUBLAS_CHECK(blas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, k, &alpha, w, n, x, k, &beta, y, n));
    if (bias) {
      const std::size_t total = static_cast<std::size_t>(rows) * n;
      bias_add_kernel<<<grid_for(total, kThreads), kThreads, 0, stream_.get()>>>(y, bias, rows, n);
      KVLAB_CUDA_LAUNCHED("bias_add_kernel");
    }
  }

  void embed(const std::vector<int>& tokens, const std::vector<int>& pos, const float* wte, const float* wpe,
             float* x, int d) override {
    if (tokens.size() != pos.size())
      throw CudaError("embed: " + std::to_string(tokens.size()) + " tokens but " + std::to_string(pos.size()) +
                      " positions");
    if (d < 1) throw CudaError("embed: d must be >= 1");
    const int rows = static_cast<int>(tokens.size());
    if (rows == 0) return;
    int* idx = upload_ints({&tokens, &pos});  // [tokens | pos]
    const std::size_t total = static_cast<std::size_t>(rows) * d;
    embed_kernel<<<grid_for(total, kThreads), kThreads, 0, stream_.get()>>>(idx, idx + rows, wte, wpe, x, rows, d);
    KVLAB_CUDA_LAUNCHED("embed_kernel");
  }

  void add(float* x, const float* y, std::size_t n) override {
    if (n == 0) return;
    add_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_.get()>>>(x, y, n);
    KVLAB_CUDA_LAUNCHED("add_kernel");
  }

  void layer_norm(const float* x, const float* gain, const float* bias, float* y, int rows, int cols) override {
    if (rows < 0 || cols < 1) throw CudaError("layer_norm: rows must be >= 0 and cols >= 1");
    launch_layer_norm(x, gain, bias, y, rows, cols, stream_.get());
  }

  void gelu(float* x, std::size_t n) override { launch_gelu(x, x, n, stream_.get()); }

  void rope(float* x, const std::vector<int>& pos, int n_heads, int head_dim, double theta) override {
    if (n_heads < 1 || head_dim < 2 || head_dim % 2 != 0)
      throw CudaError("rope: n_heads must be >= 1 and head_dim even and >= 2 (got " + std::to_string(n_heads) +
                      ", " + std::to_string(head_dim) + ")");
    if (pos.empty()) return;
    const int* p = upload_ints({&pos});
    // In place: rope_kernel gives each thread one pair and reads both elements before writing
    // (kernels/attention_launch.cuh, launch_rope).
    launch_rope(x, p, x, static_cast<int>(pos.size()), n_heads, head_dim, theta, stream_.get());
  }

  void kv_append(const float* k_new, const float* v_new, void* k_cache, void* v_cache, const CacheRows& rows,
                 int kvw, Storage storage) override {
    if (kvw < 1) throw CudaError("kv_append: kvw must be >= 1");
    check_rows("kv_append", rows);
    if (rows.rows() == 0) return;
    const Geometry g = geometry(rows);
    const int* idx = upload_ints(g.contiguous ? std::vector<const std::vector<int>*>{&rows.pos}
                                              : std::vector<const std::vector<int>*>{&rows.pos, &rows.table});
    launch_kv_append(k_new, v_new, idx, k_cache, v_cache, rows.rows(), kvw, !g.contiguous, rows.block_size,
                     rows.block_size, rows.blocks_per_seq, g.contiguous ? nullptr : idx + rows.rows(), storage,
                     stream_.get());
  }

  void attention(const float* q, const void* k_cache, const void* v_cache, const CacheRows& rows, float* out,
                 int n_head, int n_kv_head, int head_dim, Storage storage) override {
    check_attention_shape(n_head, n_kv_head, head_dim);
    check_rows("attention", rows);
    const int n = rows.rows();
    if (n == 0) return;
    const Geometry g = geometry(rows);
    std::vector<int> lengths(rows.pos.size());
    int max_len = 1;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      lengths[r] = rows.pos[r] + 1;  // causal: positions 0 .. pos[r]
      max_len = std::max(max_len, lengths[r]);
    }
    const int* idx = upload_ints(g.contiguous ? std::vector<const std::vector<int>*>{&lengths}
                                              : std::vector<const std::vector<int>*>{&lengths, &rows.table});
    AttentionArgs a;
    a.q = q, a.k = k_cache, a.v = v_cache, a.lengths = idx, a.out = out;
    a.table = g.contiguous ? nullptr : idx + n;
    a.batch = n, a.n_head = n_head, a.n_kv_head = n_kv_head, a.head_dim = head_dim;
    a.paged = !g.contiguous;
    a.max_ctx = rows.block_size;  // contiguous: a sequence's slab is block_size (= max_ctx) slots
    a.block_size = rows.block_size, a.blocks_per_seq = rows.blocks_per_seq;
    a.storage = storage;
    plan_attention(a, max_len, sm_count_);
    const std::size_t heads = static_cast<std::size_t>(a.batch) * a.n_head * a.n_chunks;
    float* work = grow(workspace_, attention_workspace_floats(a) * sizeof(float)).as<float>();
    a.part_acc = work, a.part_m = work + heads * a.head_dim, a.part_l = a.part_m + heads;
    launch_decode_attention(a, stream_.get());
  }

 private:
  /// How a call's CacheRows map onto the kernels' cache layouts.
  struct Geometry {
    /// Row r is sequence r of a contiguous cache (not paged, table[r] == r): the kernels'
    /// contiguous layout, slot = r * max_ctx + p with max_ctx = block_size, and no table read.
    /// Otherwise the paged layout with the given table (which also covers a contiguous cache whose
    /// rows are not sequences 0, 1, 2, ...: blocks_per_seq 1, block_size max_ctx).
    bool contiguous = false;
  };

  static Geometry geometry(const CacheRows& rows) {
    Geometry g;
    if (rows.paged || rows.blocks_per_seq != 1) return g;
    for (int r = 0; r < rows.rows(); ++r)
      if (rows.table[static_cast<std::size_t>(r)] != r) return g;
    g.contiguous = true;
    return g;
  }

  /// Host-side checks of a CacheRows before its indices reach a kernel, which would otherwise
  /// read or write out of bounds: table size, table entries, positions. Throws CudaError.
  static void check_rows(const char* op, const CacheRows& rows) {
    const auto fail = [&](const std::string& what) { throw CudaError(std::string(op) + ": " + what); };
    if (rows.block_size < 1 || rows.blocks_per_seq < 1 || rows.num_blocks < 1)
      fail("block_size, blocks_per_seq and num_blocks must be >= 1");
    const std::size_t want = static_cast<std::size_t>(rows.rows()) * rows.blocks_per_seq;
    if (rows.table.size() != want)
      fail("table has " + std::to_string(rows.table.size()) + " entries, rows x blocks_per_seq = " +
           std::to_string(want));
    for (int t : rows.table)
      if (t < 0 || t >= rows.num_blocks)
        fail("table entry " + std::to_string(t) + " outside [0, " + std::to_string(rows.num_blocks) + ")");
    const long long cap = static_cast<long long>(rows.block_size) * rows.blocks_per_seq;
    for (int p : rows.pos)
      if (p < 0 || p >= cap) fail("position " + std::to_string(p) + " outside [0, " + std::to_string(cap) + ")");
  }

  /// `buf`, replaced by a larger one when it holds fewer than `bytes` (sized with 1.5x headroom).
  /// The stream is drained first: a queued kernel may still read the old buffer.
  DeviceBuffer& grow(DeviceBuffer& buf, std::size_t bytes) {
    if (buf.bytes() >= bytes && buf.bytes() > 0) return buf;
    synchronize();
    buf = DeviceBuffer();  // free the old one before allocating the larger one
    buf = DeviceBuffer(std::max<std::size_t>(bytes + bytes / 2, 256));
    return buf;
  }

  /// Copies the host arrays, back to back, into the index scratch (grown as needed) and returns
  /// its device address. The copy is queued on the stream, so a kernel queued before it has read
  /// the previous contents by the time they are overwritten; upload() waits for the copy, so
  /// staging_ may be refilled by the next call.
  int* upload_ints(const std::vector<const std::vector<int>*>& parts) {
    std::size_t total = 0;
    for (const auto* v : parts) total += v->size();
    staging_.clear();
    staging_.reserve(total);
    for (const auto* v : parts) staging_.insert(staging_.end(), v->begin(), v->end());
    int* d = grow(scratch_, total * sizeof(int)).as<int>();
    upload(d, staging_.data(), total * sizeof(int));
    return d;
  }

  // Declaration order is destruction order reversed: the stream outlives everything queued on it.
  Stream stream_;
  BlasHandle blas_;
  DeviceBuffer scratch_;    ///< index arrays (tokens, positions, lengths, block tables), int32
  DeviceBuffer workspace_;  ///< attention's per-span partials: attention_workspace_floats floats
  std::vector<int> staging_;  ///< host side of one upload_ints
  std::unordered_map<void*, DeviceBuffer> allocations_;  ///< alloc()'s buffers, freed by release or here
  std::string name_;
  int sm_count_ = 1;
};

}  // namespace

std::unique_ptr<ModelOps> make_cuda_model_ops() { return std::make_unique<CudaModelOps>(); }

}  // namespace kvlab::kernels
