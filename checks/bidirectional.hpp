// bidirectional (004 §1.2, "why BERT has no KV cache"): options and the testable entry point.
#pragma once

#include "support/check.hpp"

namespace kvlab::checks {

struct BidirectionalOptions {
  int tokens = 12;  ///< the shorter prefix; the longer one has tokens + 1
  int layers = 3;   ///< >= 2: layer 1's K/V depend on the embeddings only
};

/// Injectable parts. `bidirectional_is_causal`: the "bidirectional" model keeps its causal mask
/// (a wrong mask), which the unit tests use to show the check fails.
struct BidirectionalParts {
  bool bidirectional_is_causal = false;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_bidirectional(const BidirectionalOptions& o, const RunContext& ctx, const BidirectionalParts& parts = {});

}  // namespace kvlab::checks
