// kvlab's CUDA kernels for one decode step: KV append (contiguous and paged), RoPE,
// grouped-query decode attention (contiguous and paged), LayerNorm, GELU, softmax. float32
// compute; the KV cache is stored as float32 or bf16. One file, so nvcc compiles it once per
// architecture (sm_80, sm_90, PTX). Their float64 references: reference/kernels.hpp; the
// comparison: `kvlab parity` (device/parity.hpp). Source: 004 §3.4 (GQA), 000 §5.2 (paging).
//
//   kv_append_kernel        one thread per (sequence, element of the new row); slot by table
//   rope_kernel             one thread per (sequence, head, pair); angle in float64
//   attn_partial_kernel     grid (span, kv head, sequence): reads the span's K and V rows of ONE
//                           KV head once, for all n_head / n_kv_head query heads of its group;
//                           writes the span's max score, exp-sum and un-normalised output
//   attn_combine_kernel     grid (query head, sequence): merges the spans (flash-decoding)
//   layer_norm_kernel, softmax_kernel   one block per row; gelu_kernel element-wise
#include <cmath>
#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/attention_launch.cuh"
#include "kernels/cuda_check.cuh"

namespace kvlab::kernels {
namespace {

constexpr int kThreads = 128;      // attention blocks: 4 warps
constexpr int kRowThreads = 256;   // LayerNorm / softmax blocks

__device__ __forceinline__ float load_elem(const float* p, std::size_t i) { return p[i]; }
__device__ __forceinline__ float load_elem(const __nv_bfloat16* p, std::size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_elem(float* p, std::size_t i, float x) { p[i] = x; }
__device__ __forceinline__ void store_elem(__nv_bfloat16* p, std::size_t i, float x) { p[i] = __float2bfloat16_rn(x); }

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

/// Row index (slot) of sequence b's position p: contiguous slab or block-table gather.
__device__ __forceinline__ std::size_t slot_of(bool paged, int b, int p, int max_ctx, int block_size,
                                               int blocks_per_seq, const int* table) {
  if (!paged) return static_cast<std::size_t>(b) * max_ctx + p;
  const int block = table[static_cast<std::size_t>(b) * blocks_per_seq + p / block_size];
  return static_cast<std::size_t>(block) * block_size + p % block_size;
}

template <class S>
__global__ void kv_append_kernel(const float* k_new, const float* v_new, const int* pos, S* k, S* v, int batch,
                                 int kvw, bool paged, int max_ctx, int block_size, int blocks_per_seq,
                                 const int* table) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::size_t>(batch) * kvw) return;
  const int b = static_cast<int>(i / kvw), e = static_cast<int>(i % kvw);
  const std::size_t dst = slot_of(paged, b, pos[b], max_ctx, block_size, blocks_per_seq, table) * kvw + e;
  store_elem(k, dst, k_new[i]);
  store_elem(v, dst, v_new[i]);
}

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void rope_kernel(const float* x, const int* pos, float* y, int batch, int n_heads, int head_dim,
                            double theta) {
  const int half = head_dim / 2;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::size_t>(batch) * n_heads * half) return;
  const int pair = static_cast<int>(i % half);
  const std::size_t bh = i / half;  // b * n_heads + h
  const int b = static_cast<int>(bh / n_heads);
  // float64 angle: at position 10^4 a float32 angle would already be off by ~10^-3 rad.
  const double angle = static_cast<double>(pos[b]) * pow(theta, -2.0 * pair / head_dim);
  const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
  const std::size_t base = bh * head_dim;
  const float a = x[base + pair], bb = x[base + pair + half];
  y[base + pair] = a * c - bb * s;
  y[base + pair + half] = a * s + bb * c;
}

/// One span of positions [c * chunk, min(len, (c + 1) * chunk)) of sequence b, KV head g, for the
/// group's query heads g*G .. g*G + G - 1. Shared memory: q [G, head_dim], then scores [G, chunk].
template <class S>
__global__ void attn_partial_kernel(AttentionArgs a) {
  extern __shared__ float smem[];
  const int G = a.n_head / a.n_kv_head, hd = a.head_dim;
  const int c = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
  const int len = a.lengths[b];
  const int j0 = c * a.chunk, n = min(len - j0, a.chunk);
  const std::size_t head0 = static_cast<std::size_t>(b) * a.n_head + static_cast<std::size_t>(g) * G;
  if (n <= 0) {  // a span past this sequence's length: contributes nothing
    for (int hh = tid; hh < G; hh += blockDim.x) {
      a.part_m[(head0 + hh) * a.n_chunks + c] = -INFINITY;
      a.part_l[(head0 + hh) * a.n_chunks + c] = 0.f;
    }
    for (int i = tid; i < G * hd; i += blockDim.x)
      a.part_acc[((head0 + i / hd) * a.n_chunks + c) * hd + i % hd] = 0.f;
    return;
  }
  float* q_s = smem;                 // [G, hd]
  float* s_s = smem + G * hd;        // [G, chunk]
  for (int i = tid; i < G * hd; i += blockDim.x) q_s[i] = a.q[head0 * hd + i];
  __syncthreads();
  const float scale = rsqrtf(static_cast<float>(hd));
  const S* K = static_cast<const S*>(a.k);
  const S* V = static_cast<const S*>(a.v);
  const std::size_t kvw = static_cast<std::size_t>(a.n_kv_head) * hd;
  // Scores: a warp per position; the K row (one KV head) is read once for the G query heads.
  for (int jj = warp; jj < n; jj += nwarps) {
    const std::size_t row =
        slot_of(a.paged, b, j0 + jj, a.max_ctx, a.block_size, a.blocks_per_seq, a.table) * kvw +
        static_cast<std::size_t>(g) * hd;
    float kr[8];  // head_dim <= 256 = 8 x 32 lanes
#pragma unroll
    for (int t = 0; t < 8; ++t) kr[t] = lane + 32 * t < hd ? load_elem(K, row + lane + 32 * t) : 0.f;
    for (int hh = 0; hh < G; ++hh) {
      float dot = 0.f;
#pragma unroll
      for (int t = 0; t < 8; ++t)
        if (lane + 32 * t < hd) dot += q_s[hh * hd + lane + 32 * t] * kr[t];
      dot = warp_sum(dot);
      if (lane == 0) s_s[hh * a.chunk + jj] = dot * scale;
    }
  }
  __syncthreads();
  // Per query head: the span's max, exp(score - max) in place, and their sum.
  for (int hh = warp; hh < G; hh += nwarps) {
    float m = -INFINITY;
    for (int jj = lane; jj < n; jj += 32) m = fmaxf(m, s_s[hh * a.chunk + jj]);
    m = warp_max(m);
    float l = 0.f;
    for (int jj = lane; jj < n; jj += 32) {
      const float e = expf(s_s[hh * a.chunk + jj] - m);
      s_s[hh * a.chunk + jj] = e;
      l += e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      a.part_m[(head0 + hh) * a.n_chunks + c] = m;
      a.part_l[(head0 + hh) * a.n_chunks + c] = l;
    }
  }
  __syncthreads();
  // Weighted V: a thread per output dimension, four query heads at a time; each V element is
  // loaded once per four heads (the repeats should come from L1/L2, not DRAM: not measured yet).
  for (int d = tid; d < hd; d += blockDim.x) {
    for (int h0 = 0; h0 < G; h0 += 4) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      for (int jj = 0; jj < n; ++jj) {
        const std::size_t row =
            slot_of(a.paged, b, j0 + jj, a.max_ctx, a.block_size, a.blocks_per_seq, a.table) * kvw +
            static_cast<std::size_t>(g) * hd;
        const float vv = load_elem(V, row + d);
#pragma unroll
        for (int t = 0; t < 4; ++t)
          if (h0 + t < G) acc[t] += s_s[(h0 + t) * a.chunk + jj] * vv;
      }
#pragma unroll
      for (int t = 0; t < 4; ++t)
        if (h0 + t < G) a.part_acc[((head0 + h0 + t) * a.n_chunks + c) * hd + d] = acc[t];
    }
  }
}

/// out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c, M = max_c m_c (flash-decoding).
__global__ void attn_combine_kernel(AttentionArgs a) {
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * a.n_head + blockIdx.x;
  const float* m = a.part_m + head * a.n_chunks;
  const float* l = a.part_l + head * a.n_chunks;
  float M = -INFINITY;
  for (int c = 0; c < a.n_chunks; ++c) M = fmaxf(M, m[c]);
  float L = 0.f;
  for (int c = 0; c < a.n_chunks; ++c) L += m[c] == -INFINITY ? 0.f : expf(m[c] - M) * l[c];
  for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
    float acc = 0.f;
    for (int c = 0; c < a.n_chunks; ++c)
      if (m[c] != -INFINITY) acc += expf(m[c] - M) * a.part_acc[(head * a.n_chunks + c) * a.head_dim + d];
    a.out[head * a.head_dim + d] = acc / L;
  }
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float x, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  x = warp_sum(x);
  __syncthreads();  // red may still be read from a previous call
  if (lane == 0) red[warp] = x;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < nwarps; ++w) t += red[w];
  return t;
}
__device__ float block_max(float x, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) red[warp] = x;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < nwarps; ++w) t = fmaxf(t, red[w]);
  return t;
}

__global__ void layer_norm_kernel(const float* x, const float* gain, const float* bias, float* y, int cols) {
  __shared__ float red[32];
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += xr[i];
  const float mean = block_sum(s, red) / static_cast<float>(cols);
  float q = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) q += (xr[i] - mean) * (xr[i] - mean);
  const float var = block_sum(q, red) / static_cast<float>(cols);
  const float inv = 1.f / sqrtf(var + 1e-5f);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = (xr[i] - mean) * inv * gain[i] + bias[i];
}

__global__ void softmax_kernel(const float* x, float* y, int cols) {
  __shared__ float red[32];
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = block_max(m, red);
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += expf(xr[i] - m);
  const float total = block_sum(s, red);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = expf(xr[i] - m) / total;
}

__global__ void gelu_kernel(const float* x, float* y, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] * (1.f + erff(x[i] * 0.70710678118654752f));
}

/// A NaN-poisoned device buffer of `bytes` (every byte 0xFF: NaN as float32 and as bf16).
DeviceBuffer poisoned(std::size_t bytes) {
  DeviceBuffer d(bytes);
  if (bytes > 0) KVLAB_CUDA_CHECK(cudaMemset(d.as<void>(), 0xFF, bytes));
  return d;
}

std::size_t storage_bytes(Storage s) { return s == Storage::f32 ? 4 : 2; }

/// The cache as float32 on the host (bf16 widened exactly: its bits are the float's top half).
std::vector<float> cache_to_host(const DeviceBuffer& d, std::size_t n, Storage s) {
  if (s == Storage::f32) return to_host<float>(d, n);
  const std::vector<std::uint16_t> h = to_host<std::uint16_t>(d, n);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h[i]) << 16;
    std::memcpy(&f[i], &bits, 4);
  }
  return f;
}

/// Uploads a float32 cache in the storage dtype (bf16: rounded on the device, nearest-even).
DeviceBuffer cache_to_device(const std::vector<float>& host, Storage s) {
  DeviceBuffer f = to_device(host);
  if (s == Storage::f32) return f;
  DeviceBuffer h(host.size() * 2);
  to_bf16_kernel<<<grid_for(host.size(), 256), 256>>>(f.as<float>(), h.as<__nv_bfloat16>(), host.size());
  KVLAB_CUDA_LAUNCHED("to_bf16_kernel");
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return h;
}

}  // namespace

int device_sm_count() {
  int dev = 0, sms = 0;
  KVLAB_CUDA_CHECK(cudaGetDevice(&dev));
  KVLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

void launch_kv_append(const float* k_new, const float* v_new, const int* pos, void* k, void* v, int batch, int kvw,
                      bool paged, int max_ctx, int block_size, int blocks_per_seq, const int* table,
                      Storage storage, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(batch) * kvw;
  if (batch <= 0 || kvw <= 0) return;
  const unsigned blocks = grid_for(n, 256);
  if (storage == Storage::f32)
    kv_append_kernel<float><<<blocks, 256, 0, stream>>>(k_new, v_new, pos, static_cast<float*>(k),
                                                        static_cast<float*>(v), batch, kvw, paged, max_ctx,
                                                        block_size, blocks_per_seq, table);
  else
    kv_append_kernel<__nv_bfloat16><<<blocks, 256, 0, stream>>>(k_new, v_new, pos, static_cast<__nv_bfloat16*>(k),
                                                                static_cast<__nv_bfloat16*>(v), batch, kvw, paged,
                                                                max_ctx, block_size, blocks_per_seq, table);
  KVLAB_CUDA_LAUNCHED("kv_append_kernel");
}

void launch_rope(const float* x, const int* pos, float* y, int batch, int n_heads, int head_dim, double theta,
                 cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(batch) * n_heads * (head_dim / 2);
  if (n == 0) return;
  rope_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, pos, y, batch, n_heads, head_dim, theta);
  KVLAB_CUDA_LAUNCHED("rope_kernel");
}

void launch_layer_norm(const float* x, const float* gain, const float* bias, float* y, int rows, int cols,
                       cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, gain, bias, y, cols);
  KVLAB_CUDA_LAUNCHED("layer_norm_kernel");
}

void launch_gelu(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, y, n);
  KVLAB_CUDA_LAUNCHED("gelu_kernel");
}

void check_attention_shape(int n_head, int n_kv_head, int head_dim) {
  if (const std::string problem = attention_shape_problem(n_head, n_kv_head, head_dim); !problem.empty())
    throw CudaError("decode attention: " + problem);
}

void plan_attention(AttentionArgs& a, int max_len, int sm_count) {
  const AttentionPlan p = plan_attention_spans(a.n_head / a.n_kv_head, a.n_kv_head, a.batch, max_len, sm_count);
  a.chunk = p.chunk;
  a.n_chunks = p.n_chunks;
}

void launch_decode_attention(const AttentionArgs& a, cudaStream_t stream) {
  const int G = a.n_head / a.n_kv_head;
  const std::size_t smem = (static_cast<std::size_t>(G) * a.head_dim + static_cast<std::size_t>(G) * a.chunk) * 4;
  const dim3 grid(static_cast<unsigned>(a.n_chunks), static_cast<unsigned>(a.n_kv_head), static_cast<unsigned>(a.batch));
  if (a.storage == Storage::f32)
    attn_partial_kernel<float><<<grid, kThreads, smem, stream>>>(a);
  else
    attn_partial_kernel<__nv_bfloat16><<<grid, kThreads, smem, stream>>>(a);
  KVLAB_CUDA_LAUNCHED("attn_partial_kernel");
  attn_combine_kernel<<<dim3(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.batch)), kThreads, 0, stream>>>(a);
  KVLAB_CUDA_LAUNCHED("attn_combine_kernel");
}

KvAppendOutput cuda_kv_append(const KvAppendInput& in) {
  const CacheLayout& L = in.layout;
  const std::size_t n = L.elems(), bytes = n * storage_bytes(L.storage);
  DeviceBuffer k = poisoned(bytes), v = poisoned(bytes);
  DeviceBuffer kn = to_device(in.k_new), vn = to_device(in.v_new), pos = to_device(in.pos);
  DeviceBuffer table = to_device(L.block_table);
  launch_kv_append(kn.as<float>(), vn.as<float>(), pos.as<int>(), k.as<void>(), v.as<void>(), L.batch,
                   static_cast<int>(L.row_elems()), L.paged, L.max_ctx, L.block_size, L.blocks_per_seq,
                   table.as<int>(), L.storage, nullptr);
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return {cache_to_host(k, n, L.storage), cache_to_host(v, n, L.storage)};
}

std::vector<float> cuda_rope(const RopeInput& in) {
  DeviceBuffer x = to_device(in.x), pos = to_device(in.pos), y = poisoned(in.x.size() * 4);
  launch_rope(x.as<float>(), pos.as<int>(), y.as<float>(), in.batch, in.n_heads, in.head_dim, in.theta, nullptr);
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<float>(y, in.x.size());
}

std::vector<float> cuda_decode_attention(const DecodeAttentionInput& in) {
  const CacheLayout& L = in.layout;
  check_attention_shape(in.n_head, L.n_kv_head, L.head_dim);
  DeviceBuffer q = to_device(in.q), lengths = to_device(in.lengths), table = to_device(L.block_table);
  DeviceBuffer k = cache_to_device(in.k_cache, L.storage), v = cache_to_device(in.v_cache, L.storage);
  DeviceBuffer out = poisoned(in.q.size() * 4);
  AttentionArgs a;
  a.q = q.as<float>(), a.k = k.as<void>(), a.v = v.as<void>(), a.lengths = lengths.as<int>();
  a.table = table.as<int>(), a.out = out.as<float>();
  a.batch = L.batch, a.n_head = in.n_head, a.n_kv_head = L.n_kv_head, a.head_dim = L.head_dim;
  a.paged = L.paged, a.max_ctx = L.max_ctx, a.block_size = L.block_size, a.blocks_per_seq = L.blocks_per_seq;
  a.storage = L.storage;
  int max_len = 1;
  for (int len : in.lengths) max_len = len > max_len ? len : max_len;
  plan_attention(a, max_len, device_sm_count());
  DeviceBuffer work = poisoned(attention_workspace_floats(a) * 4);
  const std::size_t heads = static_cast<std::size_t>(a.batch) * a.n_head * a.n_chunks;
  a.part_acc = work.as<float>(), a.part_m = a.part_acc + heads * a.head_dim, a.part_l = a.part_m + heads;
  launch_decode_attention(a, nullptr);
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<float>(out, in.q.size());
}

std::vector<float> cuda_layer_norm(const RowsInput& in) {
  DeviceBuffer x = to_device(in.x), g = to_device(in.gain), b = to_device(in.bias), y = poisoned(in.x.size() * 4);
  launch_layer_norm(x.as<float>(), g.as<float>(), b.as<float>(), y.as<float>(), in.rows, in.cols, nullptr);
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<float>(y, in.x.size());
}

std::vector<float> cuda_gelu(const RowsInput& in) {
  DeviceBuffer x = to_device(in.x), y = poisoned(in.x.size() * 4);
  launch_gelu(x.as<float>(), y.as<float>(), in.x.size(), nullptr);
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<float>(y, in.x.size());
}

std::vector<float> cuda_softmax(const RowsInput& in) {
  DeviceBuffer x = to_device(in.x), y = poisoned(in.x.size() * 4);
  softmax_kernel<<<static_cast<unsigned>(in.rows), kRowThreads>>>(x.as<float>(), y.as<float>(), in.cols);
  KVLAB_CUDA_LAUNCHED("softmax_kernel");
  KVLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return to_host<float>(y, in.x.size());
}

}  // namespace kvlab::kernels
