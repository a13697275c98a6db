// Device-pointer launchers shared by kernels/decode_kernels.cu (parity) and kernels/bench.cu
// (timing): the decode-attention plan (span of positions per thread block) and its two kernels.
#pragma once

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

}  // namespace kvlab::kernels
