// Host-side entry points of kvlab's CUDA kernels (kernels/decode_kernels.cu, kernels/bench.cu),
// and the buffer layouts they share with their float64 CPU references (reference/kernels.hpp).
//
// This header includes no CUDA header and is plain C++17, so the library's C++20 code, the unit
// tests and a CUDA-off build can all include it; the functions are only *defined* when kvlab was
// built with nvcc (KVLAB_HAVE_CUDA), so callers guard their calls with #ifdef KVLAB_HAVE_CUDA.
//
// Every entry point copies host buffers to the device, fills the output buffer with NaN (every
// byte 0xFF: a NaN in float32 and in bf16) before the launch, launches, synchronises and copies
// the output back as float32. Every CUDA runtime and cuBLAS call is checked: a failure throws
// CudaError whose one-line message names the call, e.g.
//   "cudaMalloc(&p, bytes) failed: out of memory (kernels/decode_kernels.cu:88)".
//
// Layouts (row-major, element counts; "kvw" = n_kv_head * head_dim):
//   q, attention output       [batch, n_head, head_dim]
//   new K/V rows (append)     [batch, n_kv_head, head_dim]
//   contiguous cache          [batch, max_ctx, n_kv_head, head_dim]   (one K, one V)
//   paged pool                [num_blocks, block_size, n_kv_head, head_dim]   (one K, one V)
//   block table               [batch, blocks_per_seq] int32: logical block j of sequence b is
//                             physical block table[b * blocks_per_seq + j]   (000 §5.2, vLLM)
//   LayerNorm/GELU/softmax    [rows, cols]
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvlab::kernels {

/// A failed CUDA runtime, kernel launch or cuBLAS call; what() names the call, one line.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How the KV cache is stored on the device. Compute is float32 either way; bf16 storage rounds
/// each appended element to nearest-even bfloat16 (8 significant bits: relative error <= 2^-8).
enum class Storage { f32, bf16 };

inline const char* storage_name(Storage s) { return s == Storage::f32 ? "f32" : "bf16"; }

/// Where sequence b's position p lives in a KV cache: contiguous (a preallocated [max_ctx] slab
/// per sequence) or paged (block table gather). Shapes are element counts.
struct CacheLayout {
  int batch = 1;
  int n_kv_head = 1;
  int head_dim = 1;
  bool paged = false;
  int max_ctx = 1;         ///< contiguous: positions reserved per sequence
  int block_size = 16;     ///< paged: positions per block
  int num_blocks = 1;      ///< paged: physical blocks in the pool
  int blocks_per_seq = 1;  ///< paged: block-table row length
  std::vector<int> block_table;  ///< paged: [batch, blocks_per_seq], entries in [0, num_blocks)
  Storage storage = Storage::f32;

  /// Elements of one K/V row (one position, every KV head).
  std::size_t row_elems() const { return static_cast<std::size_t>(n_kv_head) * head_dim; }
  /// Positions the whole cache holds (one of K or V).
  std::size_t slots() const {
    return paged ? static_cast<std::size_t>(num_blocks) * block_size
                 : static_cast<std::size_t>(batch) * max_ctx;
  }
  /// Elements of one of K or V.
  std::size_t elems() const { return slots() * row_elems(); }
  /// The slot (row index into the cache) of sequence b's position p.
  std::size_t slot(int b, int p) const {
    if (!paged) return static_cast<std::size_t>(b) * max_ctx + p;
    const int block = block_table[static_cast<std::size_t>(b) * blocks_per_seq + p / block_size];
    return static_cast<std::size_t>(block) * block_size + p % block_size;
  }
};

/// KV append: row b of k_new/v_new ([batch, kvw]) goes to position pos[b] of sequence b.
struct KvAppendInput {
  CacheLayout layout;
  std::vector<float> k_new, v_new;  ///< [batch, n_kv_head, head_dim]
  std::vector<int> pos;             ///< [batch], each in [0, capacity of the sequence)
};

/// The whole cache after an append into a NaN-poisoned cache, as float32: [slots, kvw] each.
struct KvAppendOutput {
  std::vector<float> k_cache, v_cache;
};

/// RoPE on one token per sequence: x [batch, n_heads, head_dim] at positions pos[b].
/// Rotate-half pairing (x[i], x[i + head_dim/2]), angle pos * theta^(-2i/head_dim) (attention/gqa.hpp).
struct RopeInput {
  int batch = 1, n_heads = 1, head_dim = 2;
  double theta = 10000.0;
  std::vector<int> pos;   ///< [batch]
  std::vector<float> x;   ///< [batch, n_heads, head_dim]
};

/// Decode attention: one query token per sequence over positions 0 .. lengths[b] - 1 of its
/// cache (the new token's K/V already appended). Scores scaled by 1/sqrt(head_dim).
struct DecodeAttentionInput {
  CacheLayout layout;
  int n_head = 1;                   ///< query heads; n_kv_head divides it (GQA group = n_head / n_kv_head)
  std::vector<float> q;             ///< [batch, n_head, head_dim]
  std::vector<float> k_cache, v_cache;  ///< [slots, kvw] float32; stored as layout.storage on the device
  std::vector<int> lengths;         ///< [batch], each in [1, capacity]
};

/// Row-wise kernels: x [rows, cols]; gain and bias [cols] (LayerNorm only).
struct RowsInput {
  int rows = 1, cols = 1;
  std::vector<float> x, gain, bias;
};

/// How decode attention splits each sequence: `chunk` positions per thread block (a span), and
/// `n_chunks` spans per sequence.
struct AttentionPlan {
  int chunk = 32;
  int n_chunks = 1;
};

/// The span size for a launch: a power of two in [32, 4096 / group] so that the span's scores
/// [group, chunk] fit in 16 KiB of shared memory (beside the group's queries, <= 32 KiB), grown
/// while batch x n_kv_head x spans still gives about 4 blocks per SM. group = n_head / n_kv_head
/// (1 .. 128), max_len >= 1. Plain C++ so that the unit tests check it without a GPU.
inline AttentionPlan plan_attention_spans(int group, int n_kv_head, int batch, int max_len, int sm_count) {
  int cap = 32;
  while (cap * 2 * group <= 4096 && cap < 4096) cap *= 2;
  const long long target = 4LL * (sm_count > 0 ? sm_count : 1);
  const long long heads = static_cast<long long>(batch) * n_kv_head;
  int chunk = 32;
  while (chunk < cap && heads * ((max_len + chunk * 2 - 1) / (chunk * 2)) >= target) chunk *= 2;
  return {chunk, (max_len + chunk - 1) / chunk};
}

/// Why the decode-attention kernel cannot take this shape ("" when it can): n_kv_head must divide
/// n_head, head_dim <= 256 (8 registers x 32 lanes per K row), group = n_head / n_kv_head <= 128
/// and group x head_dim <= 8192 (the group's queries in 32 KiB of shared memory, beside 16 KiB of
/// scores). Plain C++, so that DeviceGpt refuses such a model before anything is launched.
inline std::string attention_shape_problem(int n_head, int n_kv_head, int head_dim) {
  if (n_kv_head < 1 || n_head < 1 || n_head % n_kv_head != 0) return "n_kv_head must divide n_head";
  if (head_dim < 1 || head_dim > 256) return "head_dim must be in [1, 256] (got " + std::to_string(head_dim) + ")";
  const int group = n_head / n_kv_head;
  if (group > 128) return "n_head / n_kv_head must be at most 128 (got " + std::to_string(group) + ")";
  if (group * head_dim > 8192)
    return "(n_head / n_kv_head) x head_dim must be at most 8192 (shared memory; got " +
           std::to_string(group * head_dim) + ")";
  return "";
}

/// The most rows (query tokens) one decode-attention launch takes: its grid has one z-block per
/// row and CUDA caps gridDim.z (and the combine kernel's gridDim.y) at 65535.
inline constexpr int kMaxAttentionRows = 65535;

// ---- kernels/decode_kernels.cu (defined only with KVLAB_HAVE_CUDA) -------------------------

/// KV append into a contiguous or paged cache (poisoned with NaN first). Throws CudaError.
KvAppendOutput cuda_kv_append(const KvAppendInput& in);
/// RoPE, out of place: [batch, n_heads, head_dim]. Angles in float64 on the device.
std::vector<float> cuda_rope(const RopeInput& in);
/// GQA decode attention over the contiguous or paged cache: [batch, n_head, head_dim].
/// Each thread block reads one KV head's rows for a span of positions once, for all the
/// query heads of its group; spans are combined flash-decoding style.
std::vector<float> cuda_decode_attention(const DecodeAttentionInput& in);
/// LayerNorm (eps 1e-5, biased variance), GELU (exact, erf) and softmax over each row.
std::vector<float> cuda_layer_norm(const RowsInput& in);
std::vector<float> cuda_gelu(const RowsInput& in);
std::vector<float> cuda_softmax(const RowsInput& in);

// ---- kernels/bench.cu (defined only with KVLAB_HAVE_CUDA) ----------------------------------

/// The device's L2 size in bytes, its name and the memory it has free now.
struct DeviceFacts {
  std::string name;
  std::size_t l2_bytes = 0;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  int sm_count = 0;
};
DeviceFacts device_facts();

/// Times of one timed configuration, in milliseconds: every repeat, CUDA-event timed.
struct KernelTiming {
  std::vector<double> ms;   ///< one per timed launch, after warm-up
  int buffers = 1;          ///< rotating input buffers (their total exceeds 2x L2 where memory allows)
};

/// One decode-attention benchmark configuration. The cache holds ctx positions per sequence
/// (paged: block_size positions per block, blocks in a seeded random order in the pool).
struct AttentionBenchConfig {
  int batch = 1, ctx = 4096, n_head = 32, n_kv_head = 8, head_dim = 128;
  bool paged = false;
  int block_size = 16;
  Storage storage = Storage::f32;
  int warmup = 3, repeats = 20;
  std::uint64_t seed = 1234;
};
/// Times cuda_decode_attention's kernels on device-resident inputs. Throws CudaError (also when
/// the buffers do not fit in the free device memory: the message says so).
KernelTiming bench_decode_attention(const AttentionBenchConfig& c);

/// cudaMemcpyAsync device-to-device of `bytes`, timed like the kernels (rotating buffers).
KernelTiming bench_copy(std::size_t bytes, int warmup, int repeats);

/// cuBLAS SGEMM C[m, n] = A[m, k] B[k, n] (float32, column-major as cuBLAS wants), timed.
KernelTiming bench_sgemm(int m, int n, int k, int warmup, int repeats);

}  // namespace kvlab::kernels
