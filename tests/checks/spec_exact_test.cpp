// spec-exact (checks/spec_exact.cpp, support/spec_exactness.cpp): passes at defaults and on the
// trained pair; the biased sampler (soft q for a greedy draft) and a bonus drawn from the wrong
// row fail it; its judge on hand-made fits.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <cmath>
#include <filesystem>
#include <string>

#include "checks/spec_exact.hpp"
#include "io/data_dir.hpp"

namespace check_spec_exact_test {

using namespace kvlab;
using kvlab::checks::RunContext;

namespace {

/// The committed trained pair, or "" when data/weights lacks it (the test then says so).
std::string trained(const std::string& name) {
  const std::string p = data_dir() + "/weights/" + name + ".safetensors";
  return std::filesystem::exists(p) ? p : std::string();
}

}  // namespace

TEST_CASE("spec-exact passes, and the biased sampler (soft q for a greedy draft) fails it") {
  const RunContext ctx;
  checks::SpecExactOptions o;
  o.samples = 4000;
  CHECK(checks::run_spec_exact(o, ctx).passed());
  spec::SpecFaults biased;
  biased.soft_q_for_greedy_draft = true;
  const auto bad = checks::run_spec_exact(o, ctx, biased);
  CHECK_FALSE(bad.passed());
  CHECK(kvlab::test::failed_row(bad, "TV(empirical, exact target law): speculative, greedy draft"));
  CHECK(kvlab::test::failed_row(bad, "χ² against the exact law: speculative, greedy draft"));
  // Drawing the bonus from the wrong row biases the law too (the K = 1 row, where the bonus token
  // is inside the emitted tokens).
  spec::SpecFaults wrong_bonus;
  wrong_bonus.bonus_from_last_draft_row = true;
  CHECK_FALSE(checks::run_spec_exact(o, ctx, wrong_bonus).passed());
  // Too few samples for the TV bound to be below 1: refused, naming --samples.
  o.samples = 10;
  CHECK(test::input_error([&] { checks::run_spec_exact(o, ctx); }).find("--samples: must be at least") == 0);
  o.samples = 2'000'000;
  CHECK(test::input_error([&] { checks::run_spec_exact(o, ctx); }).find("work budget") != std::string::npos);
}

TEST_CASE("spec-exact on the trained pair (temperature 1): passes; the biased sampler fails it") {
  const std::string target = trained("target"), draft = trained("draft");
  if (target.empty() || draft.empty()) {
    MESSAGE("data/weights lacks the trained pair: not run");
    return;
  }
  RunContext ctx;
  ctx.dtype = Dtype::f32;
  ctx.weights = target;
  ctx.draft_weights = draft;
  checks::SpecExactOptions o;
  o.samples = 300;
  o.temperature = 1.0;
  const Result good = checks::run_spec_exact(o, ctx);
  CHECK(good.passed());
  spec::SpecFaults biased;  // the biased sampler: greedy proposals verified against the soft q
  biased.soft_q_for_greedy_draft = true;
  const Result bad = checks::run_spec_exact(o, ctx, biased);
  CHECK_FALSE(bad.passed());
  CHECK(kvlab::test::failed_row(bad, "TV(empirical, exact target law): speculative, greedy draft"));
}

TEST_CASE("spec-exact: judge on hand-made fits: a TV over its bound, a χ² over its critical value or a NaN fails") {
  checks::SpecExactMeasured m;
  m.exactness.options.samples = 5000;
  m.exactness.cells = 64;
  for (const char* key : {"direct", "spec_soft_k1", "spec_soft", "spec_greedy"})
    m.exactness.samplers.push_back({.name = key, .key = key, .fit = {.tv = 0.01, .chi2 = 50, .df = 63, .critical = 110}});
  auto rows = checks::judge_spec_exact(m);
  REQUIRE(rows.size() == 8);  // per sampler: TV, χ²
  for (const Expectation& e : rows) CHECK(e.holds());
  auto broken = [&](auto change, std::size_t row) {
    checks::SpecExactMeasured b = m;
    change(b.exactness.samplers[3].fit);
    CHECK_FALSE(checks::judge_spec_exact(b)[row].holds());
  };
  broken([](LawFit& f) { f.tv = 0.2; }, 6);
  broken([](LawFit& f) { f.tv = std::nan(""); }, 6);
  broken([](LawFit& f) { f.chi2 = 200; }, 7);
  broken([](LawFit& f) { f.chi2 = std::nan(""); }, 7);
}

}  // namespace check_spec_exact_test
