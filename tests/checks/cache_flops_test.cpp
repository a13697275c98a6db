// cache-flops (checks/cache_flops.cpp): the check passing with the library's formulas and failing
// with the non-causal attention count, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cstdint>

#include "checks/cache_flops.hpp"
#include "core/error.hpp"

namespace check_cache_flops_test {

using namespace kvlab;

TEST_CASE("cache-flops passes, and fails with the non-causal attention count (4t²d per step)") {
  checks::RunContext ctx;
  checks::CacheFlopsOptions o;
  const Result ok = checks::run_cache_flops(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.plots.size() == 1);
  CHECK(ok.metric_value("ratio_naive_over_cached_d4096_t2048") > 1000);
  checks::CacheFlopsParts full_square;
  full_square.naive = [](std::uint64_t T, std::uint64_t d) {  // Σ_t (24td² + 4t²d): no causal mask
    return 12 * T * (T + 1) * d * d + 4 * (T * (T + 1) * (2 * T + 1) / 6) * d;
  };
  CHECK_FALSE(checks::run_cache_flops(o, ctx, full_square).passed());
  o.count_tokens = 3;
  CHECK_THROWS_AS(checks::run_cache_flops(o, ctx), InputError);
}

TEST_CASE("cache-flops: judge fails a count off by one FLOP, and a saving of two orders of magnitude") {
  checks::CacheFlopsOptions o;
  o.count_tokens = 4;
  o.max_tokens = 64;
  const checks::CacheFlopsMeasured good = checks::measure_cache_flops(o, checks::RunContext{});
  REQUIRE(good.counted.size() == 12);
  const auto rows = checks::judge_cache_flops(good);
  REQUIRE(rows.size() == 3);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::CacheFlopsMeasured off = good;
  off.counted[5].naive_counted += 1;  // one naive count off by one FLOP
  CHECK_FALSE(checks::judge_cache_flops(off)[0].holds());
  CHECK(checks::judge_cache_flops(off)[1].holds());
  off = good;
  off.counted[11].cached_counted -= 2;
  CHECK_FALSE(checks::judge_cache_flops(off)[1].holds());
  off = good;
  off.cached_2048 = off.naive_2048 / 500;  // a saving of 500×: two orders of magnitude, not three
  CHECK_FALSE(checks::judge_cache_flops(off)[2].holds());
}

}  // namespace check_cache_flops_test
