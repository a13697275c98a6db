// spec-sampler (checks/spec_sampler.cpp): passes at defaults, fails when the verifier uses the raw
// p or the loop gives a greedy draft's soft q to the verifier; its judge on hand-made numbers.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <cmath>
#include <span>
#include <string>

#include "checks/spec_sampler.hpp"

namespace check_spec_sampler_test {

using namespace kvlab;
using kvlab::checks::RunContext;


TEST_CASE("spec-sampler passes at defaults and bites when the verifier uses the raw p") {
  const auto good = checks::run_spec_sampler({}, RunContext{});
  CHECK(good.passed());
  CHECK(good.metric_value("alpha_first_greedy") < good.metric_value("alpha_first_same"));
  checks::SpecSamplerParts raw;
  raw.verifier_target = [](std::span<const double> logits, const spec::SamplerConfig&) {
    return spec::process_logits(logits, spec::SamplerConfig{});  // temperature 1, no cuts
  };
  const auto bad = checks::run_spec_sampler({}, RunContext{}, raw);
  CHECK_FALSE(bad.passed());
  CHECK(kvlab::test::failed_row(bad, "one-step law − p̃"));
  // The biased sampler (soft q for a greedy draft) fails the greedy rows too.
  checks::SpecSamplerParts soft;
  soft.faults.soft_q_for_greedy_draft = true;
  CHECK_FALSE(checks::run_spec_sampler({}, RunContext{}, soft).passed());
}

TEST_CASE("spec-sampler: bad options name the option") {
  const RunContext ctx;
  CHECK(test::input_error([&] { checks::run_spec_sampler({.samples = 10}, ctx); }).find("--samples: must be at least") == 0);
  CHECK(test::input_error([&] { checks::run_spec_sampler({.top_k = 9}, ctx); }).find("--top-k") == 0);
  CHECK(test::input_error([&] { checks::run_spec_sampler({.top_p = 0}, ctx); }).find("--top-p") == 0);
}

TEST_CASE("spec-sampler: judge on hand-made numbers: a wrong law, a wide TV, a far α or a NaN fails its row") {
  checks::SpecSamplerMeasured m;
  m.p_tilde = {0.5, 0.5};
  m.support = 4;
  checks::SamplerDraft d{.name = "greedy", .key = "greedy"};
  d.fit = {.tv = 0.01, .chi2 = 1.0, .df = 3, .critical = 30.0};
  d.evaluated = 1000, d.accepted = 500, d.alpha_exact_sum = 500, d.alpha_variation = 250;
  m.drafts = {d, d};
  auto rows = checks::judge_spec_sampler(m);
  REQUIRE(rows.size() == 8);  // closed form per draft, then TV, χ², α per draft
  for (const Expectation& e : rows) CHECK(e.holds());
  auto broken = [&](auto change, std::size_t row) {
    checks::SpecSamplerMeasured b = m;
    change(b.drafts[1]);
    CHECK_FALSE(checks::judge_spec_sampler(b)[row].holds());
  };
  broken([](checks::SamplerDraft& x) { x.first_law_error = 0.1; }, 1);
  broken([](checks::SamplerDraft& x) { x.first_law_error = std::nan(""); }, 1);
  broken([](checks::SamplerDraft& x) { x.fit.tv = 0.9; }, 5);
  broken([](checks::SamplerDraft& x) { x.fit.chi2 = std::nan(""); }, 6);
  broken([](checks::SamplerDraft& x) { x.accepted = 900; }, 7);
}

}  // namespace check_spec_sampler_test
