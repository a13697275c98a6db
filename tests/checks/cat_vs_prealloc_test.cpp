// cat-vs-prealloc (checks/cat_vs_prealloc.cpp): passes with kvlab's caches, fails with broken
// ones; its judge on counts made by hand.
#include <doctest/doctest.h>

#include "cache/kv_cache.hpp"
#include "checks/cat_vs_prealloc.hpp"
#include "core/error.hpp"

namespace check_cat_vs_prealloc_test {

using namespace kvlab;

TEST_CASE("cat-vs-prealloc counts 8,390,656 vs 4,096 and fails when the 'concat' cache does not copy") {
  checks::RunContext ctx;
  checks::CatVsPreallocOptions o;
  o.repeats = 1;
  const Result r = checks::run_cat_vs_prealloc(o, ctx);
  CHECK(r.passed());
  CHECK(r.errata().empty());
  checks::CatVsPreallocParts broken;
  broken.concat = [](int w, int n) { return std::make_unique<PreallocCache<double>>(1, w, n); };
  CHECK_FALSE(checks::run_cat_vs_prealloc(o, ctx, broken).passed());
}
TEST_CASE("cat-vs-prealloc: judge fails on one position too many, and names the course's figures at 4096") {
  checks::CatVsPreallocMeasured m{.options = {}, .context = {}};
  m.concat.positions_written = 4096;
  m.concat.positions_copied = 4096 * 4095 / 2;
  m.prealloc.positions_written = 4096;
  const auto rows = checks::judge_cat_vs_prealloc(m);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[2].stated.has_value());
  m.concat.positions_copied += 1;  // one stray copy
  CHECK_FALSE(checks::judge_cat_vs_prealloc(m)[0].holds());
  CHECK_FALSE(checks::judge_cat_vs_prealloc(m)[2].holds());
}

}  // namespace check_cat_vs_prealloc_test
