#include "quant/minifloat.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvlab {

namespace {

// E, M, bias, max finite, inf.
constexpr MiniFloatSpec kE4M3{"fp8 e4m3", 4, 3, 7, 448.0, false};
constexpr MiniFloatSpec kE5M2{"fp8 e5m2", 5, 2, 15, 57344.0, true};
constexpr MiniFloatSpec kFp16{"fp16", 5, 10, 15, 65504.0, true};

std::uint16_t sign_bit(const MiniFloatSpec& s) {
  return static_cast<std::uint16_t>(1u << (s.exp_bits + s.man_bits));
}

std::uint16_t nan_code(const MiniFloatSpec& s) {  // all-ones exponent and mantissa
  return static_cast<std::uint16_t>(sign_bit(s) - 1u);
}

// 2^e for e in [-1022, 1023], exactly (std::ldexp is a library call; this is hot).
double pow2(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

// Code of |x| <= max_finite, rounded to nearest even; no sign.
std::uint16_t encode_magnitude(double a, const MiniFloatSpec& s) {
  if (a == 0.0) return 0;
  const int emin = 1 - s.bias;
  int e2 = 0;
  std::frexp(a, &e2);           // a = f · 2^e2, f in [0.5, 1)
  int e = std::max(e2 - 1, emin);  // exponent of a's binade; subnormals share emin's quantum
  double r = round_half_even(a * pow2(s.man_bits - e));  // a / 2^(e - M), exact
  const double implicit = pow2(s.man_bits);
  if (r == 2 * implicit) {  // rounded up into the next binade
    r = implicit;
    ++e;
  }
  const auto man = static_cast<std::uint32_t>(r >= implicit ? r - implicit : r);
  const auto exp = static_cast<std::uint32_t>(r >= implicit ? e + s.bias : 0);
  return static_cast<std::uint16_t>((exp << s.man_bits) | man);
}

// The next code towards +inf from a finite code (never called on the largest finite value).
std::uint16_t next_up(std::uint16_t c, const MiniFloatSpec& s) {
  const std::uint16_t sb = sign_bit(s);
  if ((c & sb) == 0) return static_cast<std::uint16_t>(c + 1u);
  if ((c & ~sb) == 0) return 1;  // -0 -> smallest positive subnormal
  return static_cast<std::uint16_t>(c - 1u);
}

std::uint16_t negate(std::uint16_t c, const MiniFloatSpec& s) { return static_cast<std::uint16_t>(c ^ sign_bit(s)); }

}  // namespace

double MiniFloatSpec::min_normal() const { return std::ldexp(1.0, 1 - bias); }
double MiniFloatSpec::unit_roundoff() const { return std::ldexp(1.0, -(man_bits + 1)); }
double MiniFloatSpec::half_subnormal_step() const { return std::ldexp(1.0, -bias - man_bits); }

const MiniFloatSpec& minifloat_spec(MiniFloat f) {
  switch (f) {
    case MiniFloat::fp8_e4m3: return kE4M3;
    case MiniFloat::fp8_e5m2: return kE5M2;
    case MiniFloat::fp16: break;
  }
  return kFp16;
}

std::uint16_t minifloat_encode(double x, MiniFloat f) {
  const MiniFloatSpec& s = minifloat_spec(f);
  if (std::isnan(x)) return nan_code(s);
  const double a = std::min(std::fabs(x), s.max_finite);  // saturate (±inf too)
  const std::uint16_t mag = encode_magnitude(a, s);
  return std::signbit(x) ? negate(mag, s) : mag;
}

std::uint16_t minifloat_encode_up(double x, MiniFloat f) {
  const MiniFloatSpec& s = minifloat_spec(f);
  if (std::isnan(x) || x > s.max_finite) throw std::domain_error("minifloat_encode_up: value above the format's range");
  std::uint16_t c = minifloat_encode(x, f);
  if (minifloat_decode(c, f) < x) c = next_up(c, s);
  return c;
}

std::uint16_t minifloat_encode_down(double x, MiniFloat f) {
  const MiniFloatSpec& s = minifloat_spec(f);
  if (std::isnan(x) || x < -s.max_finite) throw std::domain_error("minifloat_encode_down: value below the format's range");
  return negate(minifloat_encode_up(-x, f), s);
}

namespace {

double decode_slow(std::uint16_t code, MiniFloat f) {
  const MiniFloatSpec& s = minifloat_spec(f);
  const std::uint32_t man_mask = (1u << s.man_bits) - 1u, exp_max = (1u << s.exp_bits) - 1u;
  const std::uint32_t man = code & man_mask;
  const std::uint32_t exp = (static_cast<std::uint32_t>(code) >> s.man_bits) & exp_max;
  const bool negative = (code & sign_bit(s)) != 0;
  double v = 0;
  if (exp == exp_max && (s.has_inf || man == man_mask)) {
    v = (s.has_inf && man == 0) ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = static_cast<double>(man) * pow2(1 - s.bias - s.man_bits);
  } else {
    v = static_cast<double>(man + (1u << s.man_bits)) * pow2(static_cast<int>(exp) - s.bias - s.man_bits);
  }
  return negative ? -v : v;
}

// All 256 values of an fp8 format, decoded once.
std::array<double, 256> fp8_table(MiniFloat f) {
  std::array<double, 256> t{};
  for (unsigned c = 0; c < 256; ++c) t[c] = decode_slow(static_cast<std::uint16_t>(c), f);
  return t;
}

}  // namespace

double minifloat_decode(std::uint16_t code, MiniFloat f) {
  static const std::array<double, 256> e4m3 = fp8_table(MiniFloat::fp8_e4m3), e5m2 = fp8_table(MiniFloat::fp8_e5m2);
  if (f == MiniFloat::fp8_e4m3) return e4m3[code & 0xFFu];
  if (f == MiniFloat::fp8_e5m2) return e5m2[code & 0xFFu];
  return decode_slow(code, f);
}

double minifloat_round(double x, MiniFloat f) { return minifloat_decode(minifloat_encode(x, f), f); }

double round_half_even(double y) {
  double r = std::floor(y);
  const double d = y - r;  // exact: y and floor(y) share their exponent's grid
  if (d > 0.5 || (d == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return r;
}

}  // namespace kvlab
