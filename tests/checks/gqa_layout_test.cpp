// gqa-layout (checks/gqa_layout.cpp): which K/V head each query head reads under each writing;
// the check passes, and fails when repeat_interleave is really a tiled repeat; its judge on
// measurements made by hand.
#include <doctest/doctest.h>

#include "attention/gqa.hpp"
#include "attention/kv_layout.hpp"
#include "checks/gqa_layout.hpp"
#include "core/error.hpp"

namespace check_gqa_layout_test {

using namespace kvlab;

TEST_CASE("gqa-layout: 4 query heads over 2 KV heads holding constants 1 and 2: query head 1 reads 1 (grouped)") {
  // Regression: under repeat (tiled) query head 1 would read K/V head 1 (constant 2).
  const auto grouped = checks::heads_read(4, 2, {}, 1);
  CHECK(grouped == std::vector<int>{0, 0, 1, 1});
  CHECK(grouped[1] + 1 == 1);  // the constant query head 1 reads
  CHECK(checks::heads_read(4, 2, repeat_interleave_kv<double>, 1) == std::vector<int>{0, 0, 1, 1});
  CHECK(checks::heads_read(4, 2, expand_reshape_kv<double>, 1) == std::vector<int>{0, 0, 1, 1});
  CHECK(checks::heads_read(4, 2, repeat_kv<double>, 1) == std::vector<int>{0, 1, 0, 1});
  CHECK(kv_head_for_query(1, 4, 2, KvHeadOrder::grouped) == 0);
  CHECK(kv_head_for_query(1, 4, 2, KvHeadOrder::tiled) == 1);
  CHECK_THROWS_AS(kv_head_for_query(4, 4, 2, KvHeadOrder::grouped), std::invalid_argument);
}

TEST_CASE("gqa-layout passes, and fails when repeat_interleave is really a tiled repeat") {
  checks::RunContext ctx;
  checks::GqaLayoutOptions o;
  CHECK(checks::run_gqa_layout(o, ctx).passed());
  o.heads = 8;
  o.kv_heads = 2;
  CHECK(checks::run_gqa_layout(o, ctx).passed());
  checks::GqaLayoutParts wrong;
  wrong.interleave = repeat_kv<double>;  // the wrong grouping
  const Result r = checks::run_gqa_layout(o, ctx, wrong);
  CHECK_FALSE(r.passed());
  CHECK(r.metric_value("heads_misread_interleave") > 0);
  o.kv_heads = 3;
  CHECK_THROWS_AS(checks::run_gqa_layout(o, ctx), InputError);
}

TEST_CASE("gqa-layout: judge fails when a grouped writing reads one head wrong, or tiled matches grouped") {
  checks::GqaLayoutMeasured m = checks::measure_gqa_layout({}, checks::RunContext{});
  for (const Expectation& e : checks::judge_gqa_layout(m)) CHECK(e.holds());
  auto broken = m;
  broken.writings[1].read[2] = 0;  // expand + reshape: query head 2 reads K/V head 0
  CHECK_FALSE(checks::judge_gqa_layout(broken)[1].holds());
  broken = m;
  broken.writings[3].heads_differing = 0;  // the tiled repeat indistinguishable from the grouped layout
  CHECK_FALSE(checks::judge_gqa_layout(broken).back().holds());
}

}  // namespace check_gqa_layout_test
