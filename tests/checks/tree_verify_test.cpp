// tree-verify (checks/tree_verify.cpp): passes at defaults (and in float32), fails with a mask that
// lets siblings see each other, flat positions or no residual between siblings; its judge on
// hand-made numbers. The tree library itself: tests/lib/spec/variants_test.cpp.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "checks/tree_verify.hpp"

namespace check_tree_verify_test {

using kvlab::checks::RunContext;
namespace spec = kvlab::spec;


TEST_CASE("tree-verify: passes; a sibling-visible mask, flat positions or no residual update fail") {
  const RunContext ctx;
  kvlab::checks::TreeVerifyOptions fast;
  fast.samples = 5000;
  CHECK(kvlab::checks::run_tree_verify(fast, ctx).passed());
  RunContext f32 = ctx;
  f32.dtype = kvlab::Dtype::f32;
  CHECK(kvlab::checks::run_tree_verify(fast, f32).passed());

  kvlab::checks::TreeVerifyParts sibling;
  sibling.mask = [](const spec::TokenTree& t, int prefix) {
    auto m = spec::tree_attention_mask(t, prefix);
    for (int i = 0; i < t.size(); ++i)  // also read the previous sibling (same parent)
      if (i > 0 && t.parent[static_cast<std::size_t>(i - 1)] == t.parent[static_cast<std::size_t>(i)])
        m.set(i, prefix + i - 1, true);
    return m;
  };
  const auto bad_mask = kvlab::checks::run_tree_verify(fast, ctx, sibling);
  CHECK_FALSE(bad_mask.passed());
  CHECK(kvlab::test::failed_row(bad_mask, "tree forward vs per-path forwards"));

  kvlab::checks::TreeVerifyParts flat;  // positions = flat index, not depth
  flat.positions = [](const spec::TokenTree& t, int prefix) {
    std::vector<int> p(static_cast<std::size_t>(t.size()));
    for (int i = 0; i < t.size(); ++i) p[static_cast<std::size_t>(i)] = std::min(prefix + i, 15);
    return p;
  };
  CHECK_FALSE(kvlab::checks::run_tree_verify(fast, ctx, flat).passed());

  kvlab::checks::TreeVerifyParts naive;
  naive.rule.carry_residual = false;
  const auto bad_rule = kvlab::checks::run_tree_verify(fast, ctx, naive);
  CHECK_FALSE(bad_rule.passed());
  CHECK(kvlab::test::failed_row(bad_rule, "TV(closed-form law, target law)"));
  CHECK(kvlab::test::failed_row(bad_rule, "TV(empirical"));
}

TEST_CASE("tree-verify: bad options are InputErrors naming the option") {
  const RunContext ctx;
  auto named = [&](kvlab::checks::TreeVerifyOptions o, const std::string& word) {
    const auto msg = kvlab::test::input_error([&] { kvlab::checks::run_tree_verify(o, ctx); });
    CHECK_MESSAGE(msg.find(word) != std::string::npos, msg);
  };
  named({.keep = 781}, "--keep");
  named({.heads = 5}, "--heads");
  named({.top_k = 9}, "--top-k");
  named({.samples = 100}, "--samples");
  named({.width = 4, .samples = 2'000'000}, "budget");
  named({.temperature = 0.0}, "--temperature");
}

TEST_CASE("tree-verify: judge on hand-made numbers: a wrong path count, a logit off its bound, a NaN or a wrong law fails its row") {
  kvlab::checks::TreeVerifyMeasured m;  // the defaults: top-5 × 4 heads, depth 2, width 3, 20000 samples
  m.full_paths = 625;
  for (const char* target : {"learned positions", "RoPE"})
    for (const char* tree : {"full", "pruned"})
      m.forwards.push_back({.target = target, .tree = tree, .max_diff = 0.0, .bound = 1e-13});
  m.support = 512;
  m.tv_empirical = 0.01;
  auto rows = kvlab::checks::judge_tree_verify(m);
  REQUIRE(rows.size() == 5);  // paths, two targets' forwards, the closed-form law, the sampled law
  for (const kvlab::Expectation& e : rows) CHECK_MESSAGE(e.holds(), e.quantity);
  m.full_paths = 624;
  CHECK_FALSE(kvlab::checks::judge_tree_verify(m)[0].holds());
  m.full_paths = 625;
  m.forwards[3].max_diff = 2e-13;  // the RoPE target's pruned tree, twice its bound
  rows = kvlab::checks::judge_tree_verify(m);
  CHECK(rows[1].holds());
  CHECK_FALSE(rows[2].holds());
  m.forwards[3].max_diff = std::nan("");
  CHECK_FALSE(kvlab::checks::judge_tree_verify(m)[2].holds());
  m.forwards[3].max_diff = 0.0;
  m.tv_law = 1e-3;  // the law of a step off the target's
  CHECK_FALSE(kvlab::checks::judge_tree_verify(m)[3].holds());
  m.tv_law = 0.0;
  m.tv_empirical = 0.2;
  CHECK_FALSE(kvlab::checks::judge_tree_verify(m)[4].holds());
  m.tv_empirical = std::nan("");
  CHECK_FALSE(kvlab::checks::judge_tree_verify(m)[4].holds());
}

}  // namespace check_tree_verify_test
