// linear-attention (003 part 3): options and the testable entry point. See linear_attention.cpp.
#pragma once

#include <functional>
#include <memory>

#include "attention/linear_attention.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct LinearAttentionOptions {
  int steps = 64;     ///< T: tokens decoded one at a time
  int head_dim = 16;  ///< d_k = d_v of the one head, and the softmax head's width
};

/// Makes the recurrent layer under test for (d_k, d_v, decay).
using LinearLayerFactory = std::function<std::unique_ptr<LinearAttention>(int key_dim, int value_dim, double decay)>;

/// Injectable parts; empty: kvlab's LinearAttention. Unit tests pass a layer that keeps every past
/// key (its state grows), one that does work proportional to t, one that forgets the decay.
struct LinearAttentionParts {
  LinearLayerFactory make_layer;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx,
                            const LinearAttentionParts& parts = {});

}  // namespace kvlab::checks
