// Unit tests of lib/spec (acceptance rate, residual, E[tau], rejection sampler, Monte Carlo) and
// lib/core/stats. The checks built on them: tests/checks/spec_alpha_test.cpp, spec_etau_test.cpp.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/expected_tokens.hpp"
#include "spec/monte_carlo.hpp"
#include "spec/rejection.hpp"
#include "core/numerics.hpp"

namespace spec_acceptance_test {

namespace {

using kvlab::InputError;
using kvlab::Rng;
namespace spec = kvlab::spec;

constexpr double u = kvlab::unit_roundoff<double>();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Runs f, expects an InputError whose message contains `word` (the field it must name).
template <class F>
void check_input_error(F&& f, const std::string& word) {
  const std::string msg = kvlab::test::input_error(std::forward<F>(f));
  CHECK_MESSAGE(msg.find(word) != std::string::npos, "message '" << msg << "' does not name '" << word << "'");
}

double sum(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("stats: normal tail, inverse and Bonferroni") {
  CHECK(kvlab::normal_two_sided_tail(1.959963984540054) == doctest::Approx(0.05).epsilon(1e-12));
  CHECK(kvlab::z_for_two_sided(0.05) == doctest::Approx(1.959963984540054).epsilon(1e-10));
  CHECK(kvlab::z_for_two_sided(1.0) == doctest::Approx(0.0).epsilon(1e-9));
  // 8 comparisons at family 1e-4: each at 1.25e-5, z = 4.3702...
  CHECK(kvlab::bonferroni_z(1e-4, 8) == doctest::Approx(kvlab::z_for_two_sided(1.25e-5)));
  CHECK(kvlab::normal_two_sided_tail(kvlab::bonferroni_z(1e-4, 8)) * 8 ==
        doctest::Approx(1e-4).epsilon(1e-9));
  CHECK_THROWS_AS(kvlab::z_for_two_sided(0.0), std::invalid_argument);
  CHECK_THROWS_AS(kvlab::bonferroni_z(0.01, 0), std::invalid_argument);
}

TEST_CASE("alpha: sum min(p, q) = 1 - TV(p, q) on random pairs, to float64 rounding") {
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t v = 2 + trial % 30;
    const auto p = spec::random_distribution(v, rng), q = spec::random_distribution(v, rng);
    const double a = spec::acceptance_rate(p, q);
    const double d = std::abs(0.5 * (spec::sum_deviation(p) + spec::sum_deviation(q)));
    CHECK(std::abs(a - spec::acceptance_rate_from_tv(p, q)) <= (3.0 * v + 2.0) * u + d);
    CHECK(std::abs(spec::tv_distance(p, q) - (1.0 - a)) <= (3.0 * v + 2.0) * u + d);
    CHECK(a >= 0.0);
    CHECK(a <= 1.0 + v * u);
  }
}

TEST_CASE("alpha: edge cases (p = q, disjoint supports, one-hot q, q(x) = 0 where p(x) > 0)") {
  const std::vector<double> p{0.5, 0.25, 0.125, 0.125};
  CHECK(spec::acceptance_rate(p, p) == 1.0);  // dyadic values: exact
  CHECK(spec::tv_distance(p, p) == 0.0);
  const std::vector<double> a{0.5, 0.5, 0.0, 0.0}, b{0.0, 0.0, 0.25, 0.75};
  CHECK(spec::acceptance_rate(a, b) == 0.0);
  CHECK(spec::tv_distance(a, b) == 1.0);
  CHECK(spec::acceptance_rate(p, spec::one_hot(4, 1)) == 0.25);  // alpha = p(x0) for a greedy draft
  const std::vector<double> zq{0.75, 0.25, 0.0, 0.0};            // q = 0 where p > 0
  CHECK(spec::acceptance_rate(p, zq) == 0.75);
  CHECK(spec::acceptance_rate_from_tv(p, zq) == 0.75);
  // Normalized to rounding, this vector sums to 1 + 2.2e-16 in float64: alpha(p, p) is capped at 1
  // (E[tau] and the other functions take alpha only in [0, 1]).
  const std::vector<double> over{0.3372324773319348, 0.1746221632523333, 0.307581160570602,
                                 0.0008497956969693919, 0.17971440314816067};
  REQUIRE(spec::sum_deviation(over) > 0.0);
  CHECK(spec::acceptance_rate(over, over) == 1.0);
  CHECK_NOTHROW(spec::expected_tokens(spec::acceptance_rate(over, over), 4));
}

TEST_CASE("residual: min(p, q) + (1 - alpha) p' = p (000 §7.3), including q(x) = 0 and alpha = 1") {
  Rng rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t v = 2 + trial % 16;
    auto p = spec::random_distribution(v, rng);
    auto q = spec::random_distribution(v, rng);
    if (trial % 3 == 0) {  // q(0) = 0 where p(0) > 0
      q[0] = 0.0;
      const double s = sum(q);
      for (auto& x : q) x /= s;
    }
    const double alpha = spec::acceptance_rate(p, q);
    const auto r = spec::residual_distribution(p, q);
    CHECK(sum(r) == doctest::Approx(1.0).epsilon(4 * v * u));
    for (std::size_t i = 0; i < v; ++i)
      CHECK(std::abs(std::min(p[i], q[i]) + (1.0 - alpha) * r[i] - p[i]) <= 8.0 * v * u);
  }
  // The greedy-draft counterexample: p = [0.6, 0.4], greedy draft q = [1, 0]: the residual puts
  // all its mass on token 1 and the output law is p.
  const std::vector<double> p{0.6, 0.4}, q{1.0, 0.0};
  const auto r = spec::residual_distribution(p, q);
  CHECK(r[0] == 0.0);
  CHECK(r[1] == 1.0);
  // alpha = 1: p' is defined as p.
  CHECK(spec::residual_distribution(p, p) == p);
}

TEST_CASE("exact acceptance rule min(1, p(x)/q(x)) and its edge cases") {
  const std::vector<double> p{0.6, 0.4, 0.0}, q{0.3, 0.0, 0.7};
  CHECK(spec::exact_accept_probability(p, q, 0) == 1.0);  // p >= q
  CHECK(spec::exact_accept_probability(p, q, 1) == 1.0);  // q(x) = 0 < p(x): no division by zero
  CHECK(spec::exact_accept_probability(p, q, 2) == 0.0);  // p(x) = 0
  const std::vector<double> p2{0.2, 0.8}, q2{0.8, 0.2};
  CHECK(spec::exact_accept_probability(p2, q2, 0) == 0.25);
}

TEST_CASE("E[tau]: closed form, defining sum, limits, stability near alpha = 1") {
  for (int k : {0, 1, 2, 4, 8, 64, 256}) {
    CHECK(spec::expected_tokens(0.0, k) == 1.0);
    CHECK(spec::expected_tokens(1.0, k) == k + 1.0);
    CHECK(spec::expected_tokens_by_definition(1.0, k) == k + 1.0);
    for (double a : {0.1, 0.3, 0.5, 0.6, 0.7, 0.9, 0.99, 1.0 - 0x1p-28, 1.0 - 1e-15}) {
      const double e = spec::expected_tokens(a, k);
      CHECK(std::abs(e - spec::expected_tokens_by_definition(a, k)) <= (4.0 * k + 8.0) * u * e);
      CHECK(e >= 1.0);
      CHECK(e <= k + 1.0);
    }
  }
  CHECK(spec::expected_tokens(0.5, 1) == 1.5);
  CHECK(spec::expected_tokens(0.6, 4) == doctest::Approx(2.3056).epsilon(1e-14));
  CHECK(spec::expected_tokens(0.7, 4) == doctest::Approx(2.7731).epsilon(1e-14));
  // The reason for the geometric sum: the closed form as written loses ~half the digits at
  // 1 - alpha = 2^-28 (it returns 5 where the value is 4.99999996).
  const double a = 1.0 - 0x1p-28;
  const double stable = spec::expected_tokens(a, 4),
               naive = spec::expected_tokens_closed_form(a, 4);
  CHECK(std::abs(stable - spec::expected_tokens_by_definition(a, 4)) <= 24 * u * 5);
  CHECK(std::abs(naive - stable) / stable > 1e-9);
  CHECK(std::isnan(spec::expected_tokens_closed_form(1.0, 4)));
}

TEST_CASE("tau: law, variance, speedup, inverse") {
  const auto law = spec::tokens_per_step_law(0.6, 4);
  REQUIRE(law.size() == 5);
  CHECK(sum(law) == doctest::Approx(1.0).epsilon(1e-15));
  CHECK(law[0] == doctest::Approx(0.4));
  CHECK(law[4] == doctest::Approx(0.1296));
  double m2 = 0.0;
  for (std::size_t t = 0; t < law.size(); ++t) m2 += law[t] * (t + 1.0) * (t + 1.0);
  const double mean = spec::expected_tokens(0.6, 4);
  CHECK(spec::tokens_per_step_variance(0.6, 4) == doctest::Approx(m2 - mean * mean).epsilon(1e-13));
  CHECK(spec::tokens_per_step_variance(0.0, 4) == 0.0);
  CHECK(spec::tokens_per_step_variance(1.0, 4) == 0.0);
  CHECK(spec::speedup(0.6, 4, 0.05) == doctest::Approx(2.3056 / 1.2).epsilon(1e-14));
  CHECK(spec::speedup(0.6, 0, 0.05) == 1.0);
  const double a = spec::alpha_for_expected_tokens(2.7, 4);
  CHECK(spec::expected_tokens(a, 4) == doctest::Approx(2.7).epsilon(1e-13));
  CHECK(a > 0.68);
  CHECK(a < 0.69);
  CHECK(spec::alpha_for_expected_tokens(1.0, 4) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(spec::alpha_for_expected_tokens(5.0, 4) == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("input validation: InputError naming the field") {
  for (double a : {1.5, -0.1, kNaN, kInf, -kInf}) {
    check_input_error([&] { spec::expected_tokens(a, 4); }, "alpha");
    check_input_error([&] { spec::tokens_per_step_variance(a, 4); }, "alpha");
  }
  for (int k : {-1, spec::kMaxDraftTokens + 1}) {
    check_input_error([&] { spec::expected_tokens(0.5, k); }, "K");
    check_input_error([&] { spec::expected_tokens_by_definition(0.5, k); }, "K");
  }
  check_input_error([] { spec::speedup(0.5, 4, -0.1); }, "c (draft/target cost ratio)");
  check_input_error([] { spec::speedup(0.5, 4, kNaN); }, "c (draft/target cost ratio)");
  check_input_error([] { spec::alpha_for_expected_tokens(6.0, 4); }, "tokens");
  check_input_error([] { spec::alpha_for_expected_tokens(2.0, 0); }, "K");

  const std::vector<double> ok{0.5, 0.5};
  check_input_error(
      [&] {
        spec::acceptance_rate(std::vector<double>{0.5, 0.5, 0.0}, ok);
      },
      "same vocabulary");
  check_input_error(
      [&] {
        spec::acceptance_rate(std::vector<double>{1.5, -0.5}, ok);
      },
      "p (target");
  check_input_error([&] { spec::acceptance_rate(ok, std::vector<double>{kNaN, 0.5}); }, "q (draft");
  check_input_error([&] { spec::acceptance_rate(ok, std::vector<double>{0.3, 0.6}); }, "q (draft");
  check_input_error([&] { spec::acceptance_rate(std::vector<double>{}, std::vector<double>{}); },
                    "p (target");
  check_input_error(
      [&] {
        spec::acceptance_rate(ok, std::vector<double>{0.5, 0.5 + 1e-8});
      },
      "sums to");
  CHECK_NOTHROW(spec::acceptance_rate(ok, std::vector<double>{0.5, 0.5 + 1e-10}));  // within 1e-9

  Rng rng(1);
  check_input_error([&] { spec::estimate_acceptance_rate(ok, ok, 0, rng); }, "samples");
  check_input_error([&] { spec::estimate_acceptance_rate(ok, ok, -5, rng); }, "samples");
  check_input_error([&] { spec::simulate_tokens_per_step(ok, ok, -1, 10, rng); }, "K");
  check_input_error([&] { spec::simulate_tokens_per_step(ok, ok, 4, 0, rng); }, "steps");
  check_input_error([&] { spec::pair_with_acceptance(1.01, 8, rng); }, "alpha");
  check_input_error([&] { spec::pair_with_acceptance(0.5, 1, rng); }, "vocab");
  check_input_error([&] { spec::accept_or_resample(ok, ok, 2, rng); }, "x (draft token)");

  const std::vector<spec::Dist> two{ok, ok}, one{ok};
  const std::vector<std::size_t> drafts1{0}, bad_token{5};
  check_input_error([&] { spec::verify_draft(one, one, drafts1, rng); }, "target");
  check_input_error([&] { spec::verify_draft(two, two, drafts1, rng); }, "draft");
  check_input_error([&] { spec::verify_draft(two, one, bad_token, rng); }, "drafts");
}

TEST_CASE("pair_with_acceptance: sum min(p, q) = alpha, TV = 1 - alpha, fractional ratios") {
  Rng rng(3);
  for (double a : {0.0, 0.2, 0.5, 0.7, 0.95, 1.0})
    for (std::size_t v : {2u, 3u, 8u, 33u}) {
      const auto [p, q] = spec::pair_with_acceptance(a, v, rng);
      CHECK(std::abs(spec::acceptance_rate(p, q) - a) <= 4.0 * v * u);
      CHECK(std::abs(spec::tv_distance(p, q) - (1.0 - a)) <= 4.0 * v * u);
      if (a == 1.0) CHECK(p == q);
      if (a == 0.0)
        for (std::size_t i = 0; i < v; ++i) CHECK(std::min(p[i], q[i]) == 0.0);
    }
}

TEST_CASE(
    "rejection sampler: deterministic cases, replay by seed, q(x) = 0 tokens come from the "
    "residual") {
  Rng rng(5);
  const auto p = spec::random_distribution(6, rng);
  for (int i = 0; i < 1000; ++i) CHECK(spec::rejection_step(p, p, rng).accepted);  // alpha = 1
  const std::vector<double> a{0.5, 0.5, 0.0, 0.0}, b{0.0, 0.0, 0.25, 0.75};
  for (int i = 0; i < 1000; ++i) {
    const auto v = spec::rejection_step(a, b, rng);  // alpha = 0: always the residual, = p
    CHECK_FALSE(v.accepted);
    CHECK(v.token < 2);
  }
  // q(x) = 0 where p(x) > 0: token 1 is never proposed, yet it is emitted (rejections only).
  const std::vector<double> p2{0.5, 0.5}, q2{1.0, 0.0};
  int ones = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto v = spec::rejection_step(p2, q2, rng);
    if (v.token != 1) continue;
    ++ones;
    CHECK_FALSE(v.accepted);
  }
  CHECK(ones > 400);
  CHECK(ones < 600);

  Rng r1(99), r2(99);
  const auto q = spec::random_distribution(6, r1);
  (void)spec::random_distribution(6, r2);
  for (int i = 0; i < 100; ++i) {
    const auto v1 = spec::rejection_step(p, q, r1), v2 = spec::rejection_step(p, q, r2);
    CHECK(v1.token == v2.token);
    CHECK(v1.accepted == v2.accepted);
  }
}

TEST_CASE("verify_draft: accepted prefix, replacement, bonus") {
  const std::vector<double> p{0.5, 0.5}, q{0.5, 0.5}, zero_on_1{1.0, 0.0};
  Rng rng(1);
  // p = q at every position: all K accepted, bonus drawn from target[K].
  const std::vector<spec::Dist> target{p, p, zero_on_1}, draft{q, q};
  const std::vector<std::size_t> drafts{1, 0};
  const auto s = spec::verify_draft(target, draft, drafts, rng);
  CHECK(s.accepted == 2);
  CHECK(s.bonus);
  CHECK(s.next == 0);
  CHECK(s.emitted() == 3);
  // A draft token the target gives probability 0 is always rejected at that position.
  const std::vector<spec::Dist> target2{p, zero_on_1, p};
  const std::vector<std::size_t> drafts2{0, 1};
  const auto s2 = spec::verify_draft(target2, draft, drafts2, rng);
  CHECK(s2.accepted == 1);
  CHECK_FALSE(s2.bonus);
  CHECK(s2.next == 0);  // the residual of ([1, 0], [0.5, 0.5]) is token 0
  // K = 0: one plain target sample.
  const std::vector<spec::Dist> only{zero_on_1};
  const auto s3 = spec::verify_draft(only, {}, {}, rng);
  CHECK(s3.emitted() == 1);
  CHECK(s3.next == 0);
}

TEST_CASE("Monte Carlo: acceptance rate and tokens per step agree with the formulas") {
  Rng pair_rng(17);
  const auto [p, q] = spec::pair_with_acceptance(0.6, 8, pair_rng);
  const double alpha = spec::acceptance_rate(p, q);
  Rng rng(18);
  const auto est = spec::estimate_acceptance_rate(p, q, 50'000, rng);
  CHECK(std::abs(est.alpha() - alpha) <= 5.0 * std::sqrt(alpha * (1 - alpha) / 50'000));
  const auto tau = spec::simulate_tokens_per_step(p, q, 4, 50'000, rng);
  const double e = spec::expected_tokens(alpha, 4);
  CHECK(std::abs(tau.mean() - e) <=
        5.0 * std::sqrt(spec::tokens_per_step_variance(alpha, 4) / 50'000));
  CHECK(tau.sample_variance() ==
        doctest::Approx(spec::tokens_per_step_variance(alpha, 4)).epsilon(0.05));
  // Deterministic ends: p = q emits K + 1 every step, disjoint supports 1, K = 0 always 1.
  const auto same = spec::simulate_tokens_per_step(p, p, 4, 1000, rng);
  CHECK(same.tokens == 5000);
  CHECK(same.sample_variance() == 0.0);
  const std::vector<double> a{0.5, 0.5, 0.0, 0.0}, b{0.0, 0.0, 0.25, 0.75};
  CHECK(spec::simulate_tokens_per_step(a, b, 8, 1000, rng).tokens == 1000);
  CHECK(spec::simulate_tokens_per_step(p, q, 0, 1000, rng).tokens == 1000);
  // Same seed, same estimate.
  Rng s1(42), s2(42);
  CHECK(spec::estimate_acceptance_rate(p, q, 1000, s1).accepted ==
        spec::estimate_acceptance_rate(p, q, 1000, s2).accepted);
  CHECK(spec::derive_seed(1, 0) != spec::derive_seed(1, 1));
  CHECK(spec::derive_seed(1, 0) != spec::derive_seed(2, 0));
}

}  // namespace spec_acceptance_test
