// kv-invariance (004 §1.2, group 1): options and the testable entry point. See kv_invariance.cpp.
#pragma once

#include <string>

#include "support/check.hpp"

namespace kvlab::checks {

struct KvInvarianceOptions {
  int tokens = 12;               ///< the shorter prefix; the longer one has tokens + 1
  int layers = 2;
  int kv_heads = 8;              ///< of 8 query heads
  std::string positional = "learned";
  bool causal = true;            ///< false: bidirectional (the check must then fail; unit tests)
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx);

}  // namespace kvlab::checks
