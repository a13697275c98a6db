// spec-residual (checks/spec_residual.cpp): passes with kvlab's residual and acceptance rule, fails
// with broken ones; its judge on hand-made errors. The step law itself: tests/lib/spec/loop_test.cpp.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "checks/spec_residual.hpp"

namespace check_spec_residual_test {

using namespace kvlab;
using kvlab::checks::RunContext;


TEST_CASE("spec-residual passes at defaults and bites with a broken residual") {
  const RunContext ctx;
  const auto good = kvlab::checks::run_spec_residual({}, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("mistaken_law_abs_error") == doctest::Approx(0.15));

  kvlab::checks::SpecResidualParts broken;
  broken.residual = [](spec::Dist p, spec::Dist q) {  // max(0, q − p): the names swapped
    return spec::residual_distribution(q, p);
  };
  const auto bad = kvlab::checks::run_spec_residual({.pairs = 50}, ctx, broken);
  CHECK_FALSE(bad.passed());
  CHECK(kvlab::test::failed_row(bad, "disjoint supports"));
  CHECK(kvlab::test::failed_row(bad, "random pairs"));

  // Unnormalized residual (max(0, p − q) without dividing by 1 − α).
  kvlab::checks::SpecResidualParts unnorm;
  unnorm.residual = [](spec::Dist p, spec::Dist q) {
    std::vector<double> m(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) m[i] = std::max(0.0, p[i] - q[i]);
    return m;
  };
  CHECK_FALSE(kvlab::checks::run_spec_residual({.pairs = 50}, ctx, unnorm).passed());

  // An acceptance rule that ignores q (always accept): the law becomes q.
  kvlab::checks::SpecResidualParts greedy_accept;
  greedy_accept.accept = [](spec::Dist, spec::Dist, std::size_t) { return 1.0; };
  CHECK_FALSE(kvlab::checks::run_spec_residual({.pairs = 50}, ctx, greedy_accept).passed());
}

TEST_CASE("spec-residual: bad options name the option") {
  const RunContext ctx;
  CHECK(kvlab::test::input_error([&] { kvlab::checks::run_spec_residual({.pairs = 0}, ctx); })
            .find("--pairs") != std::string::npos);
  CHECK(kvlab::test::input_error([&] { kvlab::checks::run_spec_residual({.vocab = 1}, ctx); })
            .find("--vocab") != std::string::npos);
  CHECK(kvlab::test::input_error(
            [&] { kvlab::checks::run_spec_residual({.pairs = 1'000'000, .vocab = 1024}, ctx); })
            .find("budget") != std::string::npos);
}

TEST_CASE("spec-residual: judge on hand-made errors: one bound exceeded, a NaN, or a mistaken law that is right fails") {
  checks::SpecResidualMeasured m;
  m.options.vocab = 8;
  checks::ResidualCase edge{.name = "p = q", .alpha = 1.0, .vocab = 8};
  m.edges = {edge};
  m.greedy_one_hot = {.name = "V = 2, greedy draft", .vocab = 2};
  m.greedy_soft = {.name = "soft q", .law_error = 0.15, .vocab = 2};
  auto rows = checks::judge_spec_residual(m);
  REQUIRE(rows.size() == 6);
  for (const Expectation& e : rows) CHECK(e.holds());
  m.edges[0].identity_error = 2 * checks::residual_identity_bound(m.edges[0]);
  CHECK_FALSE(checks::judge_spec_residual(m)[0].holds());
  m.edges[0].identity_error = 0;
  m.worst_law_ratio = std::nan("");
  CHECK_FALSE(checks::judge_spec_residual(m)[3].holds());
  m.worst_law_ratio = 0;
  m.greedy_soft.law_error = 0;  // the mistake went unseen: the closed form did not catch it
  CHECK_FALSE(checks::judge_spec_residual(m)[5].holds());
}

}  // namespace check_spec_residual_test
