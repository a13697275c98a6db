// causal-mask (004 §3.3; 000 §6.3): options, what it measures, and its testable steps. See causal_mask.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attention/causal_mask.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::causal_mask {

struct CausalMaskOptions {
  int keys = 8;     ///< S: cached + new positions
  int queries = 3;  ///< T of the chunk case, 1 <= T < S
};

/// Builds the causal mask the check calls "correct" for (T, S).
using MaskBuilder = std::function<CausalMaskGrid(int n_query, int n_key)>;
/// The first query's absolute position the kernel is given for T new queries over S keys.
using QueryOffset = std::function<int(int n_query, int n_key)>;

/// Injectable parts; empty: causal_mask_from_positions and q_pos0 = S − T. Unit tests pass the
/// top-left mask (tril(0)) and a forgotten offset (0) to show the check fails.
struct CausalMaskParts {
  MaskBuilder lower_right;
  QueryOffset query_offset;
};

/// One of the three cases (prefill T = S, decode T = 1, a chunk T < S), as measured.
struct MaskCase {
  std::string name;            ///< "prefill (T = S)"
  int queries = 0;             ///< T
  int vs_tril = 0;             ///< cells where the mask from positions differs from tril(S − T)
  int kernel_vs_positions = 0; ///< cells where grouped_query_attention's mask differs from it
  CausalMaskGrid kernel;        ///< the mask read off grouped_query_attention
};

/// What causal-mask measured: cell counts and the masks themselves (for the tables).
struct CausalMaskMeasured {
  CausalMaskOptions options;
  std::uint64_t seed = 0;          ///< unused by the masks; printed so the report says so
  std::vector<MaskCase> cases;
  CausalMaskGrid decode_lower_right;  ///< 1 query over S keys, from positions
  CausalMaskGrid decode_top_left;     ///< the same under is_causal (tril(0))
  int decode_kernel_visible = 0;     ///< keys the decode query sees in grouped_query_attention
  int chunk_cells_wrong_top_left = 0;  ///< cells where tril(0) differs from lower-right for the chunk
};

/// Builds and reads every mask. Throws InputError on out-of-range options.
CausalMaskMeasured measure_causal_mask(const CausalMaskOptions& o, const RunContext& ctx,
                                       const CausalMaskParts& parts = {});
/// The verdict rows: every comparison is a count of mask cells, exact (tolerance 0).
std::vector<Expectation> judge_causal_mask(const CausalMaskMeasured& m);

/// The check as data (registered as `causal-mask`).
const CheckDef<CausalMaskOptions, CausalMaskMeasured>& causal_mask_check();

/// Runs the check with `parts` (validate, measure, judge, present). Throws InputError on
/// out-of-range options.
Result run_causal_mask(const CausalMaskOptions& o, const RunContext& ctx, const CausalMaskParts& parts = {});

/// The mask grouped_query_attention applies for T queries starting at q_pos0 over S keys, read
/// off its output: q = 0 (every score equal) and V = the identity, so output (i, j) is 1/n_i on
/// the keys query i sees and exactly 0 elsewhere.
CausalMaskGrid kernel_mask(int n_query, int n_key, int q_pos0);

}  // namespace kvlab::checks::causal_mask

namespace kvlab::checks {
using namespace causal_mask;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
