// complexity (checks/complexity.cpp): the check passing with the library's schedules and counts,
// failing with a recomputing cache or a count without the causal mask, and its judge on
// measurements made by hand.
#include <doctest/doctest.h>

#include <optional>

#include "checks/complexity.hpp"
#include "core/error.hpp"
#include "model/generate.hpp"
#include "../test_util.hpp"

namespace check_complexity_test {

using namespace kvlab;
using kvlab::test::input_error;

TEST_CASE("complexity: counts equal the closed forms, E18 flagged; fails with a recomputing cache or a count without the mask") {
  checks::RunContext ctx;
  checks::ComplexityOptions o;
  const Result ok = checks::run_complexity(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.errata().size() == 2);  // prefill at N = d/8 and the cached total at N + T = d (E18)
  CHECK(ok.metric_value("prefill_exponent_small_n") < 1.1);

  checks::ComplexityParts recompute;  // a "cached" generator that recomputes the prefix every step
  recompute.schedule = [](GenerationMode, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    return generation_schedule(GenerationMode::naive, p, n, b);
  };
  CHECK_FALSE(checks::run_complexity(o, ctx, recompute).passed());

  checks::ComplexityParts no_mask;  // counts every (query, key) pair, as if bidirectional
  no_mask.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    ModelConfig b = c;
    b.causal = false;
    return count_forward(b, n, s);
  };
  CHECK_FALSE(checks::run_complexity(o, ctx, no_mask).passed());

  o.d_model = 16384;
  o.new_tokens = 4096;
  CHECK(input_error([&] { checks::run_complexity(o, ctx); }).find("--d-model") != std::string::npos);
}

TEST_CASE("complexity: judge fails a count one FLOP off its closed form, and an exponent off by rounding twice over") {
  checks::ComplexityOptions o;
  o.d_model = 64;
  o.new_tokens = 8;
  const checks::ComplexityMeasured good = checks::measure_complexity(o);
  const auto rows = checks::judge_complexity(good);
  REQUIRE(rows.size() == 10);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::ComplexityMeasured off = good;
  off.sweep[2].decode.counted += 1;  // a decode step counted one FLOP over its closed form
  off.sweep[2].decode.equal = false;
  CHECK_FALSE(checks::judge_complexity(off)[1].holds());
  CHECK(checks::judge_complexity(off)[0].holds());
  off = good;
  off.sweep[0].cached.equal = false;  // differs from the formula below double resolution
  CHECK(checks::judge_complexity(off)[3].measured == 1);
  CHECK_FALSE(checks::judge_complexity(off)[3].holds());
  off = good;
  off.exponents[3].counted_2x *= 1 + 1e-12;  // the cached total at 2x, a relative 1e-12 too large
  CHECK_FALSE(checks::judge_complexity(off)[7].holds());
}

TEST_CASE("complexity: the cached total's erratum names 12d, where 24(N + T)d² meets 2d(N + T)²") {
  // Regression: the arithmetic printed 6d under the name 12d (24576 for d = 4096).
  checks::ComplexityOptions o;
  o.d_model = 64;
  o.new_tokens = 8;
  const auto rows = checks::judge_complexity(checks::measure_complexity(o));
  REQUIRE(rows.size() == 10);
  CHECK(rows[9].stated);
  CHECK(rows[9].arithmetic.find("N + T < 12d = 768 (E18)") != std::string::npos);
  CHECK(rows[4].arithmetic.find("N < 12d = 768 (E18") != std::string::npos);
}

}  // namespace check_complexity_test
