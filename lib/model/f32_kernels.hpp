// Multi-threaded float32 kernels of the fast CPU path (model/fast_gpt.hpp).
//
// linear_f32 is y = x W + b with W given transposed (W^T [out, in], one contiguous row per output
// feature). Few rows (decode, B <= kGemmRows): the output features are split across OpenMP
// threads and each thread streams its rows of W^T once, computing all B dot products per row
// (a vectorised kernel compiled for AVX-512, AVX2+FMA and baseline x86-64, picked at run time by
// the CPU's feature bits: fast_isa()).
// Many rows (prefill): each OpenMP thread multiplies its slice of the output features by OpenBLAS
// sgemm (set to one thread: one pool of threads, kvlab's) when kvlab was built with it, else by
// Eigen's GEMM. The choice and its measurements: docs/perf.md.
#pragma once

#include <cstdint>

namespace kvlab {

/// Rows at or above which linear_f32 calls the GEMM (OpenBLAS or Eigen) rather than the
/// streaming kernel (measured: docs/perf.md, "Eigen, OpenBLAS or our own kernel").
inline constexpr int kGemmRows = 16;

/// y[r, o] = bias[o] + sum_i x[r, i] wt[o, i] for r < rows, o < out. x: [rows, in] row-major
/// (leading dimension in); wt: [out, in]; bias: [out] or nullptr; y: [rows, out] (leading
/// dimension ldy >= out). Allocates nothing. Preconditions (not checked): all sizes positive,
/// y does not overlap x or wt.
void linear_f32(const float* x, int rows, int in, const float* wt, const float* bias, int out, float* y, int ldy);

/// y = x W + b with weights quantized per output row (quantize_rows) and the activations quantized
/// per batch row (quantize_activations: qx, sx), multiplied in integers (W8A8; the quantized
/// drafts of speculative decoding, model/fast_gpt.hpp):
///   y[r, o] = bias[o] + (sx[r] · scale[o]) · sum_i qx[r, i] q[o, i],
/// the sum exact in int32. Streams the packed weights (1 byte per weight for int8, half a byte for
/// int4) once for all rows. Keeps a per-thread buffer for qx (allocated when a call needs more than
/// the last). Preconditions (not checked): in a multiple of 8 and below 133,000 (the int32 sum),
/// sizes positive, y disjoint from the inputs.
void linear_q8(const float* x, int rows, int in, const std::int8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy);
void linear_q4(const float* x, int rows, int in, const std::uint8_t* wq, const float* scale, const float* bias, int out,
               float* y, int ldy);

/// Symmetric per-row absmax quantization of activations x [rows, in] to int8: sx[r] =
/// max_i |x[r, i]| / 127 (1 for an all-zero row), qx[r, i] = round(x[r, i] / sx[r]) in
/// [-127, 127] (the int8 GEMM of LLM.int8(), Dettmers et al. 2022, per token). qx: [rows, in].
void quantize_activations(const float* x, int rows, int in, std::int8_t* qx, float* sx);

/// Symmetric per-row absmax quantization of W^T [out, in] (in a multiple of 8) to `bits` = 8
/// (levels -127..127, `q` holds out x in int8 bytes) or 4 (levels -7..7, `q` holds out x in / 2
/// bytes: weights 8j..8j+7 of a row in bytes 4j..4j+3, byte 4j+k = (q[8j+k] + 8) | (q[8j+k+4] + 8) << 4).
/// scale[o] = max_i |w[o, i]| / levels (1 for an all-zero row); w ≈ scale[o] · q[o, i].
void quantize_rows(const float* wt, int out, int in, int bits, std::uint8_t* q, float* scale);

/// y[r, o] = sum_i x[r, i] wt[o, i] through the streaming kernel only, on `threads` threads
/// (for the measurements of docs/perf.md and the unit test).
void stream_matmul_f32(const float* x, int rows, int in, const float* wt, int out, float* y, int ldy);

/// C[m, n] = A[m, k] op(B) with op(B) = B^T (B [n, k], trans_b) or B (B [k, n]); row-major with
/// leading dimensions lda, ldb, ldc, on the calling thread (OpenBLAS sgemm set to one thread when
/// built with it, else Eigen), so OpenMP threads may call it concurrently. Allocates nothing in
/// kvlab (the BLAS may use its own buffers).
void gemm_f32(int m, int n, int k, const float* a, int lda, const float* b, int ldb, bool trans_b, float* c, int ldc);

/// The instruction set the kernels run with on this CPU ("AVX-512", "AVX2+FMA" or "baseline (no
/// AVX2)"): each kernel is compiled for all three and the widest the CPU's feature bits allow is
/// picked once, at first use.
const char* fast_isa();

/// One chunk of decode attention, split over positions as in flash-decoding (Dao, Haziza, Massa,
/// Sizov, "Flash-Decoding for long-context inference", 2023): the n_head query heads of one
/// sequence, q [n_head, head_dim], against `n` consecutive cached positions whose K and V rows are
/// at k + j * row_stride and v + j * row_stride (each row [n_kv_head, head_dim] floats; query head
/// h reads K/V head h / (n_head / n_kv_head), 004 §2). Each K and V row is read once, front to
/// back, for every query head. Writes the chunk's softmax statistics and unnormalised output, with
/// s_hj = scale * q_h . k_j: m[h] = max_j s_hj, l[h] = sum_j exp(s_hj - m[h]) and
/// out[h, :] = sum_j exp(s_hj - m[h]) v_j ([n_head, head_dim]). scores: scratch [n_head, n].
/// Preconditions (not checked): n >= 1, n_kv_head divides n_head, buffers disjoint.
void attend_chunk_f32(const float* q, int n_head, int n_kv_head, int head_dim, const float* k, const float* v,
                      long row_stride, int n, float scale, float* scores, float* m, float* l, float* out);

/// Joins `chunks` results of attend_chunk_f32 over consecutive chunks of one sequence (m, l
/// [chunks, n_head] and out [chunks, n_head, head_dim], chunk-major) into the normalised attention
/// output y [n_head, head_dim]: y_h = sum_c exp(m_ch - M_h) out_ch / sum_c exp(m_ch - M_h) l_ch,
/// M_h = max_c m_ch (the softmax over all positions, exactly up to rounding).
void combine_chunks_f32(int chunks, int n_head, int head_dim, const float* m, const float* l, const float* out,
                        float* y);

}  // namespace kvlab
