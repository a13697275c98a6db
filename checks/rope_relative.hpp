// rope-relative (000 §4.4.1; 004 §1.6): options and the testable entry point. See rope_relative.cpp.
#pragma once

#include <cstdint>
#include <functional>

#include "core/tensor.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct RopeRelativeOptions {
  int pairs = 64;                    ///< random (t, s) position pairs (and (q, k) draws)
  int head_dim = 64;                 ///< d, even
  double theta = 10000.0;            ///< RoPE base
  int max_pos = 4096;                ///< t, s drawn from [0, max_pos]
  std::int64_t max_offset = 100000;  ///< largest shift applied to both positions
};

/// A RoPE as the library's apply_rope: rotates x [T, n_heads*head_dim] in place, row r at
/// position pos0 + r.
using RopeFn = std::function<void(Mat<double>& x, int n_heads, int head_dim, int pos0, double theta)>;

/// The RoPE applied to the query side and to the key side; empty: kvlab::apply_rope. Unit tests
/// pass broken ones (interleaved pairs on one side, k one position off) to show the check fails.
struct RopeRelativeParts {
  RopeFn rope_q;
  RopeFn rope_k;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx, const RopeRelativeParts& parts = {});

}  // namespace kvlab::checks
