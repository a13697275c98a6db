#include "core/error.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kvlab {

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw InputError(fmt::format("{}: {} x {} overflows 64 bits (max {}); use smaller sizes", what,
                                 a, b, std::numeric_limits<std::uint64_t>::max()));
  return r;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw InputError(fmt::format("{}: {} + {} overflows 64 bits; use smaller sizes", what, a, b));
  return r;
}

void require_range(const std::string& field, long long v, long long lo, long long hi) {
  if (v < lo || v > hi)
    throw InputError(fmt::format("{}: must be in [{}, {}] (got {})", field, lo, hi, v));
}

void require_finite_range(const std::string& field, double v, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(fmt::format("{}: must be a finite number in [{}, {}] (got {})", field, lo, hi, v));
}

std::string printable(const std::string& s, std::size_t max) {
  std::string out;
  for (unsigned char ch : s) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    out += (ch >= 0x20 && ch < 0x7f) ? static_cast<char>(ch) : '?';
  }
  return out;
}

}  // namespace kvlab
