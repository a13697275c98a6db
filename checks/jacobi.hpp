// jacobi: options, injectable parts and the pure run function (see jacobi.cpp).
#pragma once

#include "spec/jacobi.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct JacobiOptions {
  int prompts = 4;  ///< seeded prompts
  int block = 16;   ///< largest block size n; the check runs n = 1, 2, 4, ... below it, and n itself
};

/// The pieces the unit tests break: the Jacobi update (empty = spec::jacobi_update).
struct JacobiParts {
  spec::JacobiUpdate update;
};

/// Runs the check. Throws InputError naming --prompts or --block when out of range.
Result run_jacobi(const JacobiOptions& opts, const RunContext& ctx, const JacobiParts& parts = {});

}  // namespace kvlab::checks
