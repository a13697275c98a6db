// causal-mask (checks/causal_mask.cpp): the masks it compares, the check passing with the
// library's parts and failing with a top-left mask or a forgotten query offset, and its judge
// on measurements made by hand.
#include <doctest/doctest.h>

#include <stdexcept>

#include "attention/causal_mask.hpp"
#include "checks/causal_mask.hpp"
#include "core/error.hpp"

namespace check_causal_mask_test {

using namespace kvlab;

TEST_CASE("causal-mask: 1 query against 8 cached keys: the correct mask lets it see all 8 keys") {
  // Regression: decode with an is_causal (top-left) mask sees key 0 only.
  const CausalMaskGrid right = causal_mask_from_positions(1, 8);
  CHECK(right.visible(0) == 8);
  CHECK(checks::kernel_mask(1, 8, 7).visible(0) == 8);
  CHECK(tril_mask(1, 8, 0).visible(0) == 1);
  CHECK(checks::kernel_mask(1, 8, 0).visible(0) == 1);  // the forgotten offset
  CHECK(right.mismatches(tril_mask(1, 8, 7)) == 0);
  CHECK(causal_mask_from_positions(3, 8).mismatches(tril_mask(3, 8, 5)) == 0);
  CHECK_THROWS_AS(causal_mask_from_positions(9, 8), std::invalid_argument);
}

TEST_CASE("causal-mask passes, and fails with a top-left mask or a forgotten query offset") {
  checks::RunContext ctx;
  checks::CausalMaskOptions o;
  CHECK(checks::run_causal_mask(o, ctx).passed());
  checks::CausalMaskParts top_left;
  top_left.lower_right = [](int t, int s) { return tril_mask(t, s, 0); };
  CHECK_FALSE(checks::run_causal_mask(o, ctx, top_left).passed());
  checks::CausalMaskParts forgotten;
  forgotten.query_offset = [](int, int) { return 0; };
  const Result r = checks::run_causal_mask(o, ctx, forgotten);
  CHECK_FALSE(r.passed());
  CHECK(r.metric_value("decode_keys_seen_lower_right") == 1.0);
  o.queries = 8;
  CHECK_THROWS_AS(checks::run_causal_mask(o, ctx), InputError);
}

TEST_CASE("causal-mask: judge fails each row whose count is off by one cell") {
  const checks::CausalMaskMeasured good = checks::measure_causal_mask({}, checks::RunContext{});
  const auto rows = checks::judge_causal_mask(good);
  REQUIRE(rows.size() == 10);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::CausalMaskMeasured off = good;
  off.cases[2].vs_tril = 1;  // the chunk's mask differs from tril(S − T) in one cell
  CHECK_FALSE(checks::judge_causal_mask(off)[4].holds());
  off = good;
  off.decode_kernel_visible = 7;  // the kernel hides one cached key from the decode query
  CHECK_FALSE(checks::judge_causal_mask(off)[7].holds());
  off = good;
  off.chunk_cells_wrong_top_left = 14;
  CHECK_FALSE(checks::judge_causal_mask(off)[9].holds());
}

}  // namespace check_causal_mask_test
