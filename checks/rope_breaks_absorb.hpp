// rope-breaks-absorb (000 §4.4.1): options and the testable entry point. See rope_breaks_absorb.cpp.
#pragma once

#include "checks/rope_relative.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct RopeBreaksAbsorbOptions {
  int max_delta = 64;       ///< relative offsets s − t = 1 .. max_delta compared with 0
  int pairs = 32;           ///< random (t, s, c_Q, c_KV) draws for the score identity
  double theta = 10000.0;   ///< RoPE base
};

struct RopeBreaksAbsorbParts {
  RopeFn rope;  ///< empty: kvlab::apply_rope; a rope that does not rotate must make the check fail
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_rope_breaks_absorb(const RopeBreaksAbsorbOptions& o, const RunContext& ctx,
                              const RopeBreaksAbsorbParts& parts = {});

}  // namespace kvlab::checks
