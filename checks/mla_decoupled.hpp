// mla-decoupled (000 §4.4.2, §6.3): options and the testable entry point. See mla_decoupled.cpp.
#pragma once

#include <functional>

#include "model/mla.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct MlaDecoupledOptions {
  int prefill = 8;   ///< prompt tokens of the incremental run
  int decode = 8;    ///< tokens then decoded one at a time (absorbed path)
  int pairs = 32;    ///< random (t, s, h_t, h_s) draws for the score split
};

struct MlaDecoupledParts {
  /// The absorbed weights of one layer; empty: kvlab::absorb. Tests pass a broken one.
  std::function<MlaAbsorbed<double>(const MlaWeights<double>&, const MlaConfig&)> absorb;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_mla_decoupled(const MlaDecoupledOptions& o, const RunContext& ctx, const MlaDecoupledParts& parts = {});

}  // namespace kvlab::checks
