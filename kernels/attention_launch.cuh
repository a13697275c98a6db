// Device-pointer launchers of the kernels in kernels/decode_kernels.cu, shared by that file's
// parity entry points, kernels/bench.cu (timing) and kernels/model_ops.cu (the mini-GPT forward
// on the GPU): the decode-attention plan (span of positions per thread block) and its two
// kernels; KV append, RoPE, LayerNorm and GELU on device buffers. Every launcher checks its
// launch (KVLAB_CUDA_LAUNCHED) and returns without waiting; zero rows or elements launch nothing.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "kernels/gpu_kernels.hpp"

namespace kvlab::kernels {

/// Device pointers and sizes of one decode-attention launch (layouts: gpu_kernels.hpp).
struct AttentionArgs {
  const float* q = nullptr;        ///< [batch, n_head, head_dim]
  const void* k = nullptr;         ///< cache, float or __nv_bfloat16 per `storage`
  const void* v = nullptr;
  const int* lengths = nullptr;    ///< [batch]
  const int* table = nullptr;      ///< [batch, blocks_per_seq] (paged only)
  float* out = nullptr;            ///< [batch, n_head, head_dim]
  float* part_acc = nullptr;       ///< [batch, n_head, n_chunks, head_dim] workspace
  float* part_m = nullptr;         ///< [batch, n_head, n_chunks]
  float* part_l = nullptr;         ///< [batch, n_head, n_chunks]
  int batch = 1, n_head = 1, n_kv_head = 1, head_dim = 1;
  bool paged = false;
  int max_ctx = 1, block_size = 16, blocks_per_seq = 1;
  Storage storage = Storage::f32;
  int chunk = 32;                  ///< positions per thread block
  int n_chunks = 1;                ///< spans per sequence: ceil(max length / chunk)
};

/// Sets args.chunk and args.n_chunks from plan_attention_spans (gpu_kernels.hpp).
void plan_attention(AttentionArgs& args, int max_len, int sm_count);

/// Workspace floats the plan needs: part_acc, then part_m, then part_l.
inline std::size_t attention_workspace_floats(const AttentionArgs& a) {
  const std::size_t heads = static_cast<std::size_t>(a.batch) * a.n_head * a.n_chunks;
  return heads * a.head_dim + 2 * heads;
}

/// Launches the partial (one span per block) and combine kernels on `stream`; checks both launches.
void launch_decode_attention(const AttentionArgs& args, cudaStream_t stream);

/// Validates the shapes a launch supports (head_dim <= 256, group <= 128, group x head_dim <= 8192,
/// n_kv_head divides n_head); throws CudaError naming the limit otherwise (the CLI checks earlier).
void check_attention_shape(int n_head, int n_kv_head, int head_dim);

/// Blocks of `threads` covering n elements (at least 1); throws CudaError when n needs more than
/// 2^31 - 1 blocks (one grid's x limit).
inline unsigned grid_for(std::size_t n, int threads) {
  const std::size_t blocks = (n + threads - 1) / threads;
  if (blocks > 0x7fffffffu) throw CudaError("kernel launch: " + std::to_string(n) + " elements exceed one grid");
  return static_cast<unsigned>(blocks > 0 ? blocks : 1);
}

/// Multiprocessors of the current device (cudaDevAttrMultiProcessorCount); throws CudaError.
int device_sm_count();

/// KV append: row b of k_new, v_new [batch, kvw] (float32) goes to position pos[b] of sequence b
/// in k, v ([slots, kvw], float or __nv_bfloat16 per `storage`; bf16 rounds to nearest even).
/// Slot: contiguous b * max_ctx + pos[b]; paged table[b * blocks_per_seq + pos[b] / block_size]
/// * block_size + pos[b] % block_size. pos and table are device pointers (table: paged only).
/// Nothing is range-checked on the device: the caller checks pos and table.
void launch_kv_append(const float* k_new, const float* v_new, const int* pos, void* k, void* v, int batch, int kvw,
                      bool paged, int max_ctx, int block_size, int blocks_per_seq, const int* table,
                      Storage storage, cudaStream_t stream);

/// RoPE on x [batch, n_heads, head_dim] at positions pos[b] (device), into y (same shape):
/// rotate-half pairs (i, i + head_dim/2), angle pos * theta^(-2i/head_dim) in float64. head_dim
/// even. In place (y == x) is allowed: one thread owns one pair and reads both of its elements
/// before writing either, and no two threads share an element.
void launch_rope(const float* x, const int* pos, float* y, int batch, int n_heads, int head_dim, double theta,
                 cudaStream_t stream);

/// LayerNorm of each row of x [rows, cols] (biased variance, eps 1e-5) * gain [cols] + bias [cols]
/// into y [rows, cols]; one block of 256 threads per row. In place (y == x) is allowed: every
/// element is read and written by the same thread, its last read before its write.
void launch_layer_norm(const float* x, const float* gain, const float* bias, float* y, int rows, int cols,
                       cudaStream_t stream);

/// Exact GELU y[i] = 0.5 x (1 + erf(x / sqrt 2)) over n elements; in place (y == x) is allowed.
void launch_gelu(const float* x, float* y, std::size_t n, cudaStream_t stream);

}  // namespace kvlab::kernels
