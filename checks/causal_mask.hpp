// causal-mask (004 §3.3; 000 §6.3): options and the testable entry point. See causal_mask.cpp.
#pragma once

#include <functional>

#include "attention/causal_mask.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

struct CausalMaskOptions {
  int keys = 8;     ///< S: cached + new positions
  int queries = 3;  ///< T of the chunk case, 1 <= T < S
};

/// Builds the causal mask the check calls "correct" for (T, S).
using MaskBuilder = std::function<AttentionMask(int n_query, int n_key)>;
/// The first query's absolute position the kernel is given for T new queries over S keys.
using QueryOffset = std::function<int(int n_query, int n_key)>;

/// Injectable parts; empty: causal_mask_from_positions and q_pos0 = S − T. Unit tests pass the
/// top-left mask (tril(0)) and a forgotten offset (0) to show the check fails.
struct CausalMaskParts {
  MaskBuilder lower_right;
  QueryOffset query_offset;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_causal_mask(const CausalMaskOptions& o, const RunContext& ctx, const CausalMaskParts& parts = {});

/// The mask grouped_query_attention applies for T queries starting at q_pos0 over S keys, read
/// off its output: q = 0 (every score equal) and V = the identity, so output (i, j) is 1/n_i on
/// the keys query i sees and exactly 0 elsewhere.
AttentionMask kernel_mask(int n_query, int n_key, int q_pos0);

}  // namespace kvlab::checks
