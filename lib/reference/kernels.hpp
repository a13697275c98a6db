// float64 CPU references of the CUDA kernels (kernels/gpu_kernels.hpp), the per-element scale
// each error is measured against, the dtype-derived error bounds, and the comparison that
// `kvlab parity` applies (NaN/Inf first, then the normalised error against the bound). Like the
// other oracles here they share no code with attention/ or model/: attention through
// reference/attention.hpp, RoPE through reference/rope.hpp, LayerNorm, GELU and softmax written
// out. They live in namespace kvlab::gpu beside the kernels' inputs they read.
//
// Error metric (gemma's ops tests, llama.cpp test-backend-ops): for every output element i,
//   err_i = |got_i - ref_i| / scale_i
// where scale_i is the magnitude the element's rounding errors are proportional to (for a sum,
// the sum of the absolute values of its terms: Higham, "Accuracy and Stability of Numerical
// Algorithms", §3.1), computed by the reference in float64. A kernel passes when no output is
// NaN/Inf and max_i err_i <= bound. Bounds are first-order rounding analyses in units of
// u = 2^-24 (float32 unit roundoff) with gamma_n = n u / (1 - n u) (Higham (3.8)), plus the
// bf16 storage unit roundoff u_bf16 = 2^-8 where the cache is stored as bf16. docs/gpu.md writes
// each derivation out.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "kernels/gpu_kernels.hpp"

namespace kvlab::gpu {

/// float32 unit roundoff 2^-24 and bf16's 2^-8 (round to nearest even, 8 significant bits).
inline constexpr double kUnitF32 = unit_roundoff<float>();
inline constexpr double kUnitBf16 = 0x1.0p-8;

/// Higham's gamma_n = n u / (1 - n u) for float32 (n u < 1 assumed; n up to ~10^6 here).
double gamma_f32(double n);

/// The storage dtype's unit roundoff: 0 for float32 (a copy is exact), 2^-8 for bf16.
double storage_unit(kernels::Storage s);

/// Round-to-nearest-even float32 -> bf16 -> float32 (what __float2bfloat16_rn stores). NaN stays NaN.
float round_to_bf16(float x);

/// A reference output: values in float64 and the scale of each element (same length).
/// A NaN in `value` marks an element that must still hold the NaN poison (KV append: a slot no
/// write should touch).
struct Reference {
  std::vector<double> value;
  std::vector<double> scale;
  double bound = 0;          ///< max allowed err_i
  std::string bound_why;     ///< the bound's formula with its numbers, one line
};

/// KV append: the cache with only the appended slots holding values (NaN elsewhere); scale |v|;
/// bound = storage_unit (0 for float32: the copy must be exact). Covers K then V (2 x elems()).
Reference ref_kv_append(const kernels::KvAppendInput& in);

/// RoPE as the rotation matrix R_pos (reference/rope.hpp) times each head, one row per sequence at
/// its position; scale |a cos| + |b sin| per output; bound gamma_3 (cos/sin rounded to float32,
/// two products, one sum).
Reference ref_rope(const kernels::RopeInput& in);

/// Decode attention through reference/attention.hpp's masked_attention<double> on each
/// sequence's gathered rows (the float32 cache values, unrounded); scale_i = sum_j p_j |v_j,d|.
/// Bound (docs/gpu.md): 2 (e_s + 2u R + 9u) + 2 gamma_(n+2) + u_s + u, with the score error
/// e_s = (gamma_hd + u_s + 3u) max_j (|q|.|k_j|)/sqrt(hd), R the widest score range, n the
/// longest sequence, u_s the storage unit.
Reference ref_decode_attention(const kernels::DecodeAttentionInput& in);

/// LayerNorm (torch.nn.LayerNorm: biased variance, eps 1e-5); scale |g| (mean|x| + |x - mu|)/sigma + |b|;
/// bound gamma_(C+6).
Reference ref_layer_norm(const kernels::RowsInput& in);

/// Exact GELU, 0.5 x (1 + erf(x / √2)); scale |x|; bound 4u (erff's 2 ulp).
Reference ref_gelu(const kernels::RowsInput& in);

/// Row softmax in float64; scale p_i; bound gamma_(C+9) + 2 u R (R the row's widest x - max).
Reference ref_softmax(const kernels::RowsInput& in);

/// The verdict of one comparison.
struct Comparison {
  std::size_t n = 0;                ///< elements compared
  std::size_t non_finite = 0;       ///< NaN/Inf where a value was expected
  std::size_t poison_lost = 0;      ///< elements that must still be NaN but were written
  std::size_t first_bad = std::numeric_limits<std::size_t>::max();  ///< first NaN/Inf/stray write
  double error = 0;                 ///< max_i |got_i - ref_i| / scale_i over finite elements
  std::size_t worst = 0;            ///< index of that maximum
  double bound = 0;
  bool passed = false;              ///< n > 0, no NaN/Inf, no stray write, error <= bound
};

/// Compares a device output with its reference. A size mismatch is a failure (n = 0).
/// scale_i = 0 demands got_i == ref_i exactly.
Comparison compare(std::span<const float> got, const Reference& ref);

}  // namespace kvlab::gpu
