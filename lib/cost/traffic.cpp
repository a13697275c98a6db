#include "cost/traffic.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

void require_sizes(std::initializer_list<std::uint64_t> sizes, double bytes_per_elem) {
  for (std::uint64_t s : sizes)
    if (s == 0) throw InputError("traffic: every size must be >= 1");
  if (!std::isfinite(bytes_per_elem) || bytes_per_elem <= 0)
    throw InputError(fmt::format("traffic: bytes per element must be finite and > 0 (got {})", bytes_per_elem));
}

}  // namespace

double linear_bytes(std::uint64_t rows, std::uint64_t in, std::uint64_t out, double bytes_per_elem) {
  require_sizes({rows, in, out}, bytes_per_elem);
  const char* what = "linear layer elements";
  const std::uint64_t elements =
      checked_add(checked_add(checked_mul(in, out, what), checked_mul(rows, in, what), what), checked_mul(rows, out, what), what);
  return static_cast<double>(elements) * bytes_per_elem;
}

double decode_attention_bytes(std::uint64_t batch, std::uint64_t ctx, std::uint64_t n_head, std::uint64_t n_kv_head,
                              std::uint64_t head_dim, double bytes_per_elem) {
  require_sizes({batch, ctx, n_head, n_kv_head, head_dim}, bytes_per_elem);
  if (n_head % n_kv_head != 0)
    throw InputError(fmt::format("traffic: n_kv_head = {} must divide n_head = {}", n_kv_head, n_head));
  const char* what = "decode attention elements";
  const std::uint64_t kv = checked_mul(checked_mul(batch, ctx, what), checked_mul(2 * n_kv_head, head_dim, what), what);
  const std::uint64_t q_out = checked_mul(batch, checked_mul(2 * n_head, head_dim, what), what);
  return static_cast<double>(checked_add(kv, q_out, what)) * bytes_per_elem;
}

}  // namespace kvlab
