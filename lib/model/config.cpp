#include "model/config.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

Positional parse_positional(const std::string& s) {
  if (s == "learned") return Positional::learned;
  if (s == "rope") return Positional::rope;
  throw InputError("positional: must be learned or rope (got '" + s + "')");
}

void ModelConfig::validate() const {
  constexpr long long kMaxDim = 65536, kMaxLen = 1 << 20;
  require_range("n_layer", n_layer, 1, kMaxDim);
  require_range("d_model", d_model, 1, kMaxDim);
  require_range("n_head", n_head, 1, kMaxDim);
  require_range("n_kv_head", n_kv_head, 1, n_head);
  require_range("head_dim", head_dim, 1, kMaxDim);
  require_range("vocab_size", vocab_size, 1, kMaxLen);
  require_range("block_size", block_size, 1, kMaxLen);
  if (n_head % n_kv_head != 0)
    throw InputError(fmt::format("n_kv_head: must divide n_head = {} (got {}); allowed: a divisor of {}",
                                 n_head, n_kv_head, n_head));
  require_range("sliding_window", sliding_window, 0, kMaxLen);
  if (sliding_window > 0 && !causal)
    throw InputError("sliding_window: needs a causal model (got causal = false)");
  require_range("cla_share", cla_share, 1, n_layer);
  if (positional == Positional::rope) {
    if (head_dim % 2 != 0)
      throw InputError(fmt::format("head_dim: must be even with RoPE (got {})", head_dim));
    if (!std::isfinite(rope_theta) || rope_theta <= 1.0)
      throw InputError(fmt::format("rope_theta: must be a finite number > 1 (got {})", rope_theta));
  }
}

}  // namespace kvlab
