// typical-acceptance (checks/typical_acceptance.cpp): passes at defaults, fails when the "typical"
// verifier is really rejection sampling; refuses settings where the claim cannot be judged; its
// judge on hand-made laws. The library's typical rule: tests/lib/spec/variants_test.cpp.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "checks/typical_acceptance.hpp"

namespace check_typical_acceptance_test {

using namespace kvlab;
using kvlab::checks::RunContext;


TEST_CASE("typical-acceptance: passes; a 'typical' verifier that is really rejection sampling fails") {
  const RunContext ctx;
  CHECK(checks::run_typical_acceptance({}, ctx).passed());
  RunContext f32 = ctx;
  f32.dtype = Dtype::f32;
  CHECK(checks::run_typical_acceptance({}, f32).passed());
  const checks::TypicalAcceptanceParts secretly_exact{spec::exact_accept_probability, spec::residual_distribution};
  const auto bad = checks::run_typical_acceptance({}, ctx, secretly_exact);
  CHECK_FALSE(bad.passed());
  CHECK(kvlab::test::failed_row(bad, "typical acceptance, TV(closed-form law, p)"));
  CHECK(kvlab::test::failed_row(bad, "typical acceptance, TV(empirical, p)"));
  // A replacement drawn from p itself (not Medusa's argmax) is not exact either: still passes.
  const checks::TypicalAcceptanceParts from_p{spec::typical_accept_rule({}), [](spec::Dist p, spec::Dist) {
                                                return std::vector<double>(p.begin(), p.end());
                                              }};
  CHECK(checks::run_typical_acceptance({}, ctx, from_p).passed());
}

TEST_CASE("typical-acceptance: bad options are InputErrors naming the option") {
  const RunContext ctx;
  auto named = [&](checks::TypicalAcceptanceOptions o, const std::string& word) {
    const auto msg = test::input_error([&] { checks::run_typical_acceptance(o, ctx); });
    CHECK_MESSAGE(msg.find(word) != std::string::npos, msg);
  };
  named({.samples = 10}, "--samples");
  named({.samples = 10'000'000, .contexts = 16}, "budget");
  named({.contexts = 0}, "--contexts");
  named({.temperature = 0.0}, "--temperature");
  named({.epsilon = 0.0}, "--epsilon");
  named({.delta = 2.0}, "--delta");
  // Where Medusa's law is within 2β of p the claim cannot be judged: refused, naming the flag and
  // the temperatures that can judge it, never a FAIL for want of power.
  named({.temperature = 0.01}, "--temperature");
  named({.temperature = 0.01}, "it can at --temperature [");
}

TEST_CASE("typical-acceptance: judge on hand-made laws: a wrong number or a NaN fails its row") {
  checks::TypicalAcceptanceMeasured m;
  m.options.contexts = 1;
  checks::TypicalContext c{.p = {0.5, 0.5}, .q = {0.9, 0.1}, .tv_typical_law = 0.4, .tv_typical_empirical = 0.4};
  m.contexts = {c};
  auto rows = checks::judge_typical_acceptance(m);
  REQUIRE(rows.size() == 5);
  for (const Expectation& e : rows) CHECK(e.holds());
  auto broken = [&](auto change, std::size_t row) {
    checks::TypicalAcceptanceMeasured b = m;
    change(b.contexts[0]);
    CHECK_FALSE(checks::judge_typical_acceptance(b)[row].holds());
  };
  broken([](checks::TypicalContext& x) { x.rejection_law_error = 1e-6; }, 0);
  broken([](checks::TypicalContext& x) { x.rejection_law_error = std::nan(""); }, 0);
  broken([](checks::TypicalContext& x) { x.tv_rejection_empirical = 0.3; }, 1);
  broken([](checks::TypicalContext& x) { x.tv_rejection_empirical = std::nan(""); }, 1);
  broken([](checks::TypicalContext& x) { x.tv_typical_law = 0.01; }, 2);  // typical acceptance looks exact
  broken([](checks::TypicalContext& x) { x.tv_typical_law = std::nan(""); }, 2);
  broken([](checks::TypicalContext& x) { x.tv_typical_empirical = std::nan(""); }, 3);
  broken([](checks::TypicalContext& x) { x.tv_typical_own = 0.3; }, 4);
}

}  // namespace check_typical_acceptance_test
