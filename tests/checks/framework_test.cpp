// The check framework (checks/framework/): registration, the option table's
// one rule for the command line and for code, and the refusal of a row that cannot fail.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "checks/causal_mask.hpp"
#include "core/error.hpp"
#include "framework/spec.hpp"

namespace check_framework_test {

using namespace kvlab;

TEST_CASE("framework: every check registers once, at an order of its own, under a name of its own") {
  std::vector<std::unique_ptr<checks::Check>> all;
  REQUIRE_NOTHROW(all = checks::make_all_checks());  // throws on two checks at one order
  std::set<std::string> names;
  for (const auto& c : all) {
    CAPTURE(c->name());
    CHECK(names.insert(c->name()).second);
    CHECK_FALSE(c->source().empty());
    CHECK_FALSE(c->summary().empty());
  }
}

TEST_CASE("framework: the option table refuses in code what the command line refuses, in the same words") {
  const auto& def = checks::causal_mask_check();
  checks::CausalMaskOptions o;
  CHECK_NOTHROW(checks::validate_options(def.options, o));
  o.keys = 300;
  try {
    checks::validate_options(def.options, o);
    FAIL("--keys 300 was accepted");
  } catch (const InputError& e) {
    // `kvlab causal-mask --keys 300` prints: kvlab: --keys: must be an integer in [2, 256] (got 300)
    CHECK(std::string(e.what()) == "--keys: must be an integer in [2, 256] (got 300)");
  }
  o = {};
  o.queries = 8;  // the cross-option rule: T < S
  CHECK_THROWS_AS(checks::run_check(def, o, checks::RunContext{}), InputError);
}

TEST_CASE("framework: run_check fills the report's identity from the spec") {
  const Result r = checks::run_check(checks::causal_mask_check(), checks::CausalMaskOptions{}, checks::RunContext{});
  CHECK(r.check == "causal-mask");
  CHECK(r.source == "004 §3.3; 000 §6.3");
  CHECK(r.claim.find("over 8 keys") != std::string::npos);
  CHECK(r.passed());
}

TEST_CASE("framework: a row whose tolerance spans its whole attainable range is one that cannot fail") {
  Expectation e{.quantity = "tokens per step", .expected = 4.0, .tolerance = 3.5, .measured = 4.0};
  CHECK(e.largest_possible_deviation() == std::numeric_limits<double>::infinity());  // unbounded: no claim made
  e.attainable = {1.0, 7.0};  // K = 6: a step emits 1 .. 7 tokens
  CHECK(e.largest_possible_deviation() == 3.0);
  CHECK_FALSE(e.can_fail());  // 4 ± 3.5 takes in all of [1, 7]: the framework refuses this row
  e.tolerance = 3.0;
  CHECK_FALSE(e.can_fail());
  e.tolerance = 2.0;
  CHECK(e.can_fail());
  e.tolerance = std::numeric_limits<double>::quiet_NaN();
  CHECK(e.can_fail());  // a NaN bound fails the row (holds() is false), so it is not one that cannot fail
  e.tolerance = 3.5;
  e.expected = std::numeric_limits<double>::quiet_NaN();
  CHECK(e.can_fail());
  CHECK_FALSE(e.holds());
  // A value outside the attainable range is a bug, never a pass, however wide the tolerance.
  e.expected = 4.0, e.tolerance = 10.0, e.measured = 7.5;
  CHECK_FALSE(e.holds());
  e.measured = 7.0;
  CHECK(e.holds());
}

TEST_CASE("framework: a run too small for a row to fail is refused, naming the options that set its size") {
  struct O {};
  struct M {
    double tolerance;
  };
  checks::CheckDef<O, M> def{.spec = {.name = "toy"},
                             .measure = [](const O&, const checks::RunContext&) { return M{0.5}; },
                             .judge = [](const M& m) {
                               Expectation e{.quantity = "acceptance rate", .expected = 0.8, .tolerance = m.tolerance,
                                             .measured = 0.7};
                               e.attainable = {0.0, 1.0};
                               return std::vector<Expectation>{e};
                             },
                             .sample_options = "--prompts, --new-tokens"};
  CHECK(checks::run_check(def, O{}, checks::RunContext{}).passed());  // 0.8 ± 0.5 fails below 0.3
  const auto wide = [](const O&, const checks::RunContext&) { return M{0.9}; };  // 0.8 ± 0.9 holds on all of [0, 1]
  try {
    checks::run_check(def, O{}, checks::RunContext{}, wide);
    FAIL("a row that could not fail was judged");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("--prompts, --new-tokens: too few samples for \"acceptance rate\""));
    // ± / largest deviation = 0.9 / 0.8 = 1.125.
    CHECK(what.ends_with("raise --prompts, --new-tokens (the ± must shrink more than 1.12-fold)"));
  }
}

TEST_CASE("every check's claim has a Chinese translation, and the framework puts it in the Result") {
  for (const auto& check : checks::make_all_checks()) {
    CAPTURE(check->name());
    const std::string zh = check->claim_zh();
    REQUIRE_FALSE(zh.empty());
    // At least one CJK ideograph (UTF-8 lead byte 0xE4..0xE9): a translation, not a copy.
    bool cjk = false;
    for (unsigned char c : zh) cjk = cjk || (c >= 0xE4 && c <= 0xE9);
    CHECK(cjk);
  }
  const Result r = checks::run_causal_mask({}, {});
  CHECK(r.claim_zh == checks::causal_mask_check().spec.claim_zh);
}

}  // namespace check_framework_test
