// The primitive operations of the mini-GPT forward on one device (`--device cuda`), and
// the memory they work in. model/device_gpt.hpp strings them into the model's forward pass; this
// header says only *what* each operation computes, so that the same forward runs on:
//   - the GPU: make_cuda_model_ops() (kernels/model_ops.cu): cuBLAS SGEMM for the matrix
//     products, the kernels of kernels/decode_kernels.cu for the rest;
//   - the CPU: device/host_ops.hpp, a plain float32 implementation on host memory, which the unit
//     tests run through the forward, the checks and deliberate faults (no GPU on CI).
//
// Pointers returned by alloc() belong to the ops object that made them: device addresses for
// CUDA, host addresses for the CPU one. The forward never dereferences them; it passes them back,
// or an address inside the same allocation (upload, download and poison of one cache row).
// Small index arrays (token ids, positions, block tables) travel as host vectors: an
// implementation copies them to its memory itself.
//
// Plain C++17 with no CUDA header, like gpu_kernels.hpp. Every CUDA or cuBLAS failure throws
// CudaError naming the call (one line); a shape outside a kernel's limits throws CudaError too.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gpu_kernels.hpp"

namespace kvlab::kernels {

/// Where the rows of one call read and write the KV cache of one layer. Row r of the call is the
/// token at position pos[r] of some sequence; that sequence's position p lives in cache slot
///   table[r * blocks_per_seq + p / block_size] * block_size + p % block_size
/// (a slot is one row of n_kv_head * head_dim elements). A paged cache gives each row its
/// sequence's block table (000 §5.2); a contiguous cache of max_ctx positions per sequence is the
/// special case block_size = max_ctx, blocks_per_seq = 1, table[r] = the row's sequence.
/// Attention is causal: row r attends to positions 0 .. pos[r] of its sequence.
struct CacheRows {
  bool paged = false;          ///< false: the contiguous special case above. The table stays authoritative: a contiguous
                               ///< kernel (slot = r * max_ctx + p) fits only when row r is sequence r (table[r] == r);
                               ///< a prefill's rows all belong to one sequence
  int block_size = 16;         ///< positions per block (contiguous: max_ctx)
  int blocks_per_seq = 1;      ///< entries of one row of `table`
  int num_blocks = 1;          ///< blocks in the cache (contiguous: sequences); slots = num_blocks * block_size
  std::vector<int> table;      ///< [rows, blocks_per_seq], entries in [0, num_blocks)
  std::vector<int> pos;        ///< [rows]: the position each row writes (append), rotates (RoPE), attends up to
  int rows() const { return static_cast<int>(pos.size()); }
};

/// One device's memory and the mini-GPT's operations on it. Shapes are row-major element counts;
/// d = d_model, q_w = n_head * head_dim, kvw = n_kv_head * head_dim. Every operation may run
/// asynchronously; download() and synchronize() wait for the work before them.
class ModelOps {
 public:
  virtual ~ModelOps() = default;
  /// For reports: "cuda: NVIDIA H200" or "host-f32".
  virtual std::string name() const = 0;

  /// `bytes` of memory of this device (contents undefined); throws CudaError when it fails.
  virtual void* alloc(std::size_t bytes) = 0;
  /// Frees what alloc() returned (nullptr: nothing). Never throws.
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  /// Sets every byte to 0xFF: NaN as float32 and as bf16, so an element nobody writes shows.
  virtual void poison(void* p, std::size_t bytes) = 0;
  virtual void synchronize() = 0;

  /// y [rows, n] = x [rows, k] · w [k, n] (+ bias [n] when bias is not null). float32 (cuBLAS
  /// SGEMM on the GPU, default math mode: no TF32). y does not alias x.
  virtual void linear(const float* x, const float* w, const float* bias, float* y, int rows, int k, int n) = 0;
  /// x [rows, d]: row r = wte[tokens[r]] + wpe[pos[r]] (wpe null: no position embedding, RoPE).
  /// Token ids and positions are checked by the caller.
  virtual void embed(const std::vector<int>& tokens, const std::vector<int>& pos, const float* wte, const float* wpe,
                     float* x, int d) = 0;
  /// x [n] += y [n].
  virtual void add(float* x, const float* y, std::size_t n) = 0;
  /// y [rows, cols] = LayerNorm of each row of x (biased variance, eps 1e-5) · gain + bias.
  virtual void layer_norm(const float* x, const float* gain, const float* bias, float* y, int rows, int cols) = 0;
  /// x [n] = 0.5 x (1 + erf(x / sqrt 2)), in place.
  virtual void gelu(float* x, std::size_t n) = 0;
  /// RoPE in place on x [rows, n_heads, head_dim], row r at position pos[r]: rotate-half pairs
  /// (i, i + head_dim/2), angle pos · theta^(-2i/head_dim) computed in float64.
  virtual void rope(float* x, const std::vector<int>& pos, int n_heads, int head_dim, double theta) = 0;
  /// Writes k_new, v_new [rows, kvw] to slot (rows.pos[r]) of each row's sequence in k_cache and
  /// v_cache ([slots, kvw] each, stored as `storage`: bf16 rounds to nearest even).
  virtual void kv_append(const float* k_new, const float* v_new, void* k_cache, void* v_cache, const CacheRows& rows,
                         int kvw, Storage storage) = 0;
  /// out [rows, n_head, head_dim]: causal grouped-query attention of q [rows, n_head, head_dim]
  /// over positions 0 .. pos[r] of row r's sequence, scores scaled by 1/sqrt(head_dim); query head
  /// h reads KV head h / (n_head / n_kv_head). Throws CudaError outside the kernel's limits
  /// (check_attention_shape: head_dim <= 256, group <= 128, group x head_dim <= 8192).
  virtual void attention(const float* q, const void* k_cache, const void* v_cache, const CacheRows& rows, float* out,
                         int n_head, int n_kv_head, int head_dim, Storage storage) = 0;
};

/// The GPU implementation on the current CUDA device (defined only with KVLAB_HAVE_CUDA, in
/// kernels/model_ops.cu). Throws CudaError when no device is usable or cuBLAS cannot be opened.
std::unique_ptr<ModelOps> make_cuda_model_ops();

}  // namespace kvlab::kernels
