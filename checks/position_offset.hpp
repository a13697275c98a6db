// position-offset (004 §3.2): options, what it measures, and its testable steps. See position_offset.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::position_offset {

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

/// One decoded step: its logits against the full forward's, with the right start and with it forgotten.
struct DecodedStep {
  int position = 0;
  double right = 0;       ///< max |Δlogits|, right start
  double forgotten = 0;   ///< max |Δlogits|, start forgotten
  bool argmax_changed = false;  ///< the forgotten start changed the most likely next token
};

/// What position-offset measured.
struct PositionOffsetMeasured {
  PositionOffsetOptions options;
  RunContext context;
  ModelConfig config;
  double bound = 0;           ///< the rounding bound 2·n·u·max|logit|
  double right_diff = 0;      ///< max |Δlogits| over every position, right start
  int errors_raised = 0;      ///< exceptions the forgotten-start forward threw
  std::vector<DecodedStep> steps;  ///< empty when the forgotten start raised an error
};

/// Prefills, decodes with the right start and with it forgotten, and compares with the full
/// forward. Throws InputError on a --weights file that cannot run it.
PositionOffsetMeasured measure_position_offset(const PositionOffsetOptions& o, const RunContext& ctx,
                                               const PositionOffsetParts& parts = {});
/// The right start within rounding; every step of the forgotten one beyond it (a count); no error.
std::vector<Expectation> judge_position_offset(const PositionOffsetMeasured& m);

/// The check as data (registered as `position-offset`).
const CheckDef<PositionOffsetOptions, PositionOffsetMeasured>& position_offset_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_position_offset(const PositionOffsetOptions& o, const RunContext& ctx, const PositionOffsetParts& parts = {});

}  // namespace kvlab::checks::position_offset

namespace kvlab::checks {
using namespace position_offset;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
