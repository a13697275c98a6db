// abs-pos-window (004 §1.6, group 7): options and the testable entry point. See abs_pos_window.cpp.
#pragma once

#include <functional>

#include "support/check.hpp"

namespace kvlab::checks {

struct AbsPosWindowOptions {
  int window = 16;  ///< block_size: the window that slides by one token
  int layers = 2;
};

/// Injectable parts. `rope_next_position(window)`: the position the RoPE model gives the next token
/// when it keeps its cache and counts on (right: window). Unit tests pass window − 1 (the new
/// token placed as if the window had been renumbered while the keys kept their old positions).
struct AbsPosWindowParts {
  std::function<int(int window)> rope_next_position;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_abs_pos_window(const AbsPosWindowOptions& o, const RunContext& ctx, const AbsPosWindowParts& parts = {});

}  // namespace kvlab::checks
