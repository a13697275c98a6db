#include "cost/generation_flops.hpp"

#include "core/error.hpp"

namespace kvlab {

std::uint64_t naive_generation_flops(std::uint64_t T, std::uint64_t d) {
  const char* what = "naive generation FLOPs";
  const std::uint64_t t1 = checked_mul(T, T + 1, what);
  const std::uint64_t linear = checked_mul(checked_mul(12, t1, what), checked_mul(d, d, what), what);
  // T(T + 1)(T + 2) is a product of three consecutive integers, so divisible by 3 (and 6).
  const std::uint64_t attention = checked_mul(checked_mul(2, checked_mul(t1, T + 2, what) / 3, what), d, what);
  return checked_add(linear, attention, what);
}

std::uint64_t cached_generation_flops(std::uint64_t T, std::uint64_t d) {
  const char* what = "cached generation FLOPs";
  const std::uint64_t linear = checked_mul(checked_mul(24, T, what), checked_mul(d, d, what), what);
  const std::uint64_t attention = checked_mul(checked_mul(2, checked_mul(T, T + 1, what), what), d, what);
  return checked_add(linear, attention, what);
}

}  // namespace kvlab
