// abs-pos-window (004 §1.6, group 7): options, what it measures, and its testable steps. See abs_pos_window.cpp.
#pragma once

#include <functional>

#include <vector>

#include "framework/spec.hpp"

namespace kvlab::checks::abs_pos_window {

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

/// One layer of the learned-position model: the token's K at position 1 vs position 0.
struct SlidLayer {
  double dk = 0;         ///< max |ΔK|
  double max_k = 0;      ///< max |K| (the scale of the threshold)
  double threshold = 0;  ///< 2·n·u·max(1, max|K|): the most rounding can move equal values
};

/// What abs-pos-window measured.
struct AbsPosWindowMeasured {
  AbsPosWindowOptions options;
  RunContext context;
  int token = 0;                    ///< the id of the token that moved from position 1 to 0
  std::vector<SlidLayer> learned;   ///< per layer
  double rope_max_dscore = 0;       ///< RoPE: max |Δ layer-1 score|, kept cache vs rebuilt window
  double rope_bound = 0;            ///< its rounding bound
  double rope_max_dk = 0;           ///< RoPE: max |ΔK| (it is rotated, so it does change)
  int heads = 0;                    ///< query heads of the RoPE model
};

/// Runs the learned-position and the RoPE model over the old and the slid window.
AbsPosWindowMeasured measure_abs_pos_window(const AbsPosWindowOptions& o, const RunContext& ctx,
                                            const AbsPosWindowParts& parts = {});
/// Learned: every layer's K changed (a count). RoPE: the scores equal within rounding.
std::vector<Expectation> judge_abs_pos_window(const AbsPosWindowMeasured& m);

/// The check as data (registered as `abs-pos-window`).
const CheckDef<AbsPosWindowOptions, AbsPosWindowMeasured>& abs_pos_window_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_abs_pos_window(const AbsPosWindowOptions& o, const RunContext& ctx, const AbsPosWindowParts& parts = {});

}  // namespace kvlab::checks::abs_pos_window

namespace kvlab::checks {
using namespace abs_pos_window;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
