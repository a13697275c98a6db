// Unit tests of the Day-4 checks of issue 4 (part a): each passes with the library's parts and
// fails with a deliberately broken one (a wrong mask, a wrong grouping, a forgotten offset...).
#include <doctest/doctest.h>

#include <cmath>

#include "attention/causal_mask.hpp"
#include "checks/causal_mask.hpp"
#include "core/error.hpp"

using namespace kvlab;

TEST_CASE("causal-mask: 1 query against 8 cached keys: the correct mask lets it see all 8 keys") {
  // Failing input kept from issue 4: decode with an is_causal (top-left) mask sees key 0 only.
  const AttentionMask right = causal_mask_from_positions(1, 8);
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
