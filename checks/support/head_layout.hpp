// The rule the checks that build MHA / MQA / GQA variants of one mini-GPT share for their
// --heads, --head-dim and --groups options (attn-params, cache-shape).
#pragma once

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::checks {

/// Throws InputError, in the command line's words, unless G = `groups` is in [1, H] and divides
/// H = `heads`, and D = H · `head_dim` is at most `max_width`.
inline void require_head_layout(int heads, int head_dim, int groups, int max_width) {
  require_range("--groups", groups, 1, heads);
  if (heads % groups != 0) throw InputError(fmt::format("--groups: must divide --heads ({}), got {}", heads, groups));
  if (heads * head_dim > max_width)
    throw InputError(fmt::format("--heads × --head-dim: D = H·d_head must be at most {}, got {}", max_width,
                                 heads * head_dim));
}

}  // namespace kvlab::checks
