// rope-relative (000 §4.4.1; 004 §1.6): options, what it measures, and its testable
// steps. See rope_relative.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::rope_relative {

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

/// One drawn pair: the positions and the size of its score, ‖q‖‖k‖ (what the bounds scale with).
struct RopePair {
  std::int64_t t = 0, s = 0;  ///< query and key positions
  double norms = 0;           ///< ‖q‖‖k‖
};

/// One shift of both positions: the largest |score(t, s) − score(t + offset, s + offset)|.
struct RopeShift {
  std::int64_t offset = 0;
  double diff = 0;
};

/// What rope-relative measured over the drawn pairs.
struct RopeRelativeMeasured {
  RopeRelativeOptions options;
  std::uint64_t seed = 0;
  std::vector<RopePair> pairs;
  double identity_error = 0;     ///< max entry |R_tᵀR_s − R_(s−t)|
  double closed_form_error = 0;  ///< max |(R_t q)·(R_s k) − qᵀR_(s−t)k|
  std::vector<RopeShift> shifts; ///< offsets 1, 10, 100, ... and --max-offset
};

/// Draws --pairs (t, s, q, k) and measures the identity, the closed form and every shift through
/// `parts`' RoPE (the library's apply_rope when empty).
RopeRelativeMeasured measure_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx,
                                           const RopeRelativeParts& parts = {});
/// Every row expects 0 within a float64 rounding bound computed from the pairs' positions and norms.
std::vector<Expectation> judge_rope_relative(const RopeRelativeMeasured& m);

/// The check as data (registered as `rope-relative`).
const CheckDef<RopeRelativeOptions, RopeRelativeMeasured>& rope_relative_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_rope_relative(const RopeRelativeOptions& o, const RunContext& ctx, const RopeRelativeParts& parts = {});

}  // namespace kvlab::checks::rope_relative

namespace kvlab::checks {
using namespace rope_relative;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
