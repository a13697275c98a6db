// bench-generate (checks/bench_generate.cpp): passes with kvlab's generation schedules, fails with a
// "cached" generator that recomputes or feeds stale positions; its judge on hand-made counts.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "checks/bench_generate.hpp"
#include "model/generate.hpp"
#include "../test_util.hpp"

namespace check_bench_generate_test {

using namespace kvlab;
using kvlab::test::input_error;

TEST_CASE("bench-generate: counted work n(n+1)/2 vs n passes; a 'cached' generator that recomputes fails; timing only in timing") {
  checks::RunContext ctx;
  checks::BenchGenerateOptions o;
  o.repeats = 1;
  const Result ok = checks::run_bench_generate(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("positions_naive_64") == 64.0 * 65 / 2);
  CHECK(ok.metric_value("positions_cached_64") == 64.0);
  REQUIRE(ok.plots.size() == 1);
  CHECK(ok.plots[0].series.size() == 2);
  for (const auto& t : ok.tables)
    if (t.title.rfind("timing", 0) != 0)
      for (const auto& c : t.columns) CHECK(c.find("ms") == std::string::npos);

  checks::BenchGenerateParts recompute;
  recompute.schedule = [](GenerationMode, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    return generation_schedule(GenerationMode::naive, p, n, b);
  };
  CHECK_FALSE(checks::run_bench_generate(o, ctx, recompute).passed());

  checks::BenchGenerateParts stale;  // never refreshes the cache after the prefill: wrong positions
  stale.schedule = [](GenerationMode m, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    auto calls = generation_schedule(m, p, n, b);
    if (m == GenerationMode::cached)
      for (auto& c : calls)
        if (c.n_tokens == 1) c.begin = 0;  // feeds the first token again at the new position
    return calls;
  };
  CHECK_FALSE(checks::run_bench_generate(o, ctx, stale).passed());
  CHECK(checks::bench_lengths(true).back() == 255);

  o.repeats = 0;
  CHECK(input_error([&] { checks::run_bench_generate(o, ctx); }).find("--repeats") != std::string::npos);
}

TEST_CASE("bench-generate: judge on hand-made counts: a position, a FLOP or a token off fails its row; times are never judged") {
  checks::BenchGenerateMeasured m;
  m.lengths.push_back({.n = 32, .seconds_per_token_naive = 1e9, .seconds_per_token_cached = 0});  // absurd times: not judged
  auto rows = checks::judge_bench_generate(m);
  REQUIRE(rows.size() == 3);
  for (const Expectation& e : rows) CHECK(e.holds());
  m.lengths[0].positions_gap = 1;
  CHECK_FALSE(checks::judge_bench_generate(m)[0].holds());
  m.lengths[0].positions_gap = 0, m.lengths[0].flops_gap = 1;
  CHECK_FALSE(checks::judge_bench_generate(m)[1].holds());
  m.lengths[0].flops_gap = 0, m.lengths[0].differing = 1;
  CHECK_FALSE(checks::judge_bench_generate(m)[2].holds());
}

}  // namespace check_bench_generate_test
