// position-offset (004 §3.2): options and the testable entry point. See position_offset.cpp.
#pragma once

#include <functional>

#include "support/check.hpp"

namespace kvlab::checks {

struct PositionOffsetOptions {
  int prefill = 8;   ///< prompt tokens, at positions 0 .. prefill − 1
  int decode = 12;   ///< tokens decoded one at a time after it
};

/// The row of the learned position table that token t of a call starting at start_pos receives.
/// Right: start_pos + t (GPT.embed(idx, start)); forgotten: t.
using EmbedPosition = std::function<int(int start_pos, int t)>;

/// Injectable parts; empty: start_pos + t on the "right start" path. Unit tests pass the forgotten
/// offset there to show the check fails.
struct PositionOffsetParts {
  EmbedPosition right;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_position_offset(const PositionOffsetOptions& o, const RunContext& ctx, const PositionOffsetParts& parts = {});

}  // namespace kvlab::checks
