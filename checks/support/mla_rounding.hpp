// The length of the longest chain of summed terms in the MLA mini-GPT's logits: the n of the
// rounding bound 2·n·u·max(1, |logit|) that mla-absorb, mla-decoupled and incremental-vs-full
// allow between two ways of computing the same logits (model/mla.hpp).
#pragma once

#include "model/mla.hpp"

namespace kvlab::checks {

/// Longest chain of summed terms a logit of the MLA mini-GPT `c` passes through over both paths
/// (naive and absorbed), with S cached positions.
inline double mla_reduction_length(const MlaConfig& c, int S) {
  const double D = c.d_model, dq = c.query_dim(), dc = c.kv_lora_rank, dh = c.head_dim, dr = c.rope_head_dim;
  const double per_layer = 2 * D + dq + 3 * dc + 2 * dh + dr + 2.0 * S + c.n_head * (dh + dc) + 5 * D;
  return c.n_layer * per_layer + D;
}

}  // namespace kvlab::checks
