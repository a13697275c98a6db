// Small floating-point formats, encoded and decoded by kvlab itself: FP8 E4M3 and E5M2
// (Micikevicius et al., "FP8 Formats for Deep Learning", arXiv 2209.05433) and IEEE fp16
// (binary16), which the quantized KV cache uses for its scales and zero points.
//
// A code is sign | exponent (E bits, bias 2^(E-1) - 1) | mantissa (M bits), held in the low
// 1 + E + M bits of a uint16. Value of a code with exponent field e and mantissa field f:
//   e = 0          subnormal: (-1)^s · f · 2^(1 - bias - M)          (+0 and -0 when f = 0)
//   0 < e < max    normal:    (-1)^s · (1 + f / 2^M) · 2^(e - bias)
// Special values:
//   E4M3  no infinities; S.1111.111 is NaN, so the largest finite is S.1111.110 = ±448
//   E5M2  IEEE-like: S.11111.00 = ±inf, S.11111.{01,10,11} NaN; largest finite ±57344
//   fp16  IEEE binary16: S.11111.0000000000 = ±inf, other all-ones exponents NaN; max ±65504
// Encoding rounds to nearest, ties to even, and saturates: a finite value beyond the largest
// finite one, and ±inf, become ±max (the "satfinite" conversion of NVIDIA's cvt, and of the OCP
// FP8 spec's saturating mode); NaN becomes NaN. Within the normal range the relative error of a
// round trip is at most the unit roundoff 2^-(M+1): 1/16 for E4M3, 1/8 for E5M2, 2^-11 for fp16.
// Below the smallest normal 2^(1 - bias) the error is absolute, at most half a subnormal step
// 2^(-bias - M).
#pragma once

#include <cstdint>

namespace kvlab {

enum class MiniFloat { fp8_e4m3, fp8_e5m2, fp16 };

/// The parameters of a MiniFloat format.
struct MiniFloatSpec {
  const char* name;      ///< "fp8 e4m3", "fp8 e5m2", "fp16"
  int exp_bits;          ///< E
  int man_bits;          ///< M
  int bias;              ///< 2^(E-1) - 1
  double max_finite;     ///< 448, 57344, 65504
  bool has_inf;          ///< false for E4M3
  double min_normal() const;      ///< 2^(1 - bias)
  double unit_roundoff() const;   ///< 2^-(M+1): the round-trip relative error bound for normals
  double half_subnormal_step() const;  ///< 2^(-bias - M): the absolute error bound below min_normal
};

const MiniFloatSpec& minifloat_spec(MiniFloat f);

/// The code of x, rounded to nearest (ties to even), saturating to ±max_finite (±inf too).
std::uint16_t minifloat_encode(double x, MiniFloat f);
/// The smallest representable value >= x, as a code (for scales that must not shrink).
/// Throws std::domain_error when x is NaN or above max_finite.
std::uint16_t minifloat_encode_up(double x, MiniFloat f);
/// The largest representable value <= x, as a code (for zero points that must not grow).
/// Throws std::domain_error when x is NaN or below -max_finite.
std::uint16_t minifloat_encode_down(double x, MiniFloat f);
/// The value of a code (only the low 1 + E + M bits are read). NaN codes give a quiet NaN.
double minifloat_decode(std::uint16_t code, MiniFloat f);
/// minifloat_decode(minifloat_encode(x, f), f).
double minifloat_round(double x, MiniFloat f);

/// The nearest integer to y, ties to the even one (2.5 → 2, 3.5 → 4): the rounding of the codecs
/// and of the integer KV quantizer. Exact for every finite double (floor and a comparison).
double round_half_even(double y);

}  // namespace kvlab
