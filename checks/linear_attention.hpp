// linear-attention (003 part 3): options, what it measures, and its testable
// steps. See linear_attention.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "attention/linear_attention.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::linear_attention {

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

/// One decode step t: what each side held after it and what the step cost.
struct LinearStep {
  double state_bytes = 0;   ///< the linear layer's state
  double macs = 0;          ///< the linear layer's multiply-adds for this token
  double kv_bytes = 0;      ///< the KV cache's K and V buffers
  double softmax_macs = 0;  ///< softmax attention's multiply-adds over the cache (CountMacs)
};

/// One decay γ, decoded token by token.
struct LinearDecayRun {
  double gamma = 1;
  std::vector<LinearStep> steps;  ///< t = 1 .. T
  double diff = 0;                ///< max |y recurrent − y parallel|
  double max_y = 0;               ///< max |y recurrent|
};

/// What linear-attention measured: γ = 1, then γ = 0.9.
struct LinearAttentionMeasured {
  LinearAttentionOptions options;
  std::uint64_t seed = 0;
  double max_v = 0;  ///< max |v| over the inputs (the scale of the rounding bound)
  std::vector<LinearDecayRun> runs;
};

/// Decodes --steps tokens through `parts`' layer (kvlab's LinearAttention when empty) and through
/// softmax attention over a ConcatCache, for γ = 1 and 0.9.
LinearAttentionMeasured measure_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx,
                                                 const LinearAttentionParts& parts = {});
/// Exact counts (state, work, cache, softmax work against their formulas), and recurrent = parallel
/// within float64 rounding.
std::vector<Expectation> judge_linear_attention(const LinearAttentionMeasured& m);

/// The check as data (registered as `linear-attention`).
const CheckDef<LinearAttentionOptions, LinearAttentionMeasured>& linear_attention_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_linear_attention(const LinearAttentionOptions& o, const RunContext& ctx,
                            const LinearAttentionParts& parts = {});

}  // namespace kvlab::checks::linear_attention

namespace kvlab::checks {
using namespace linear_attention;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
