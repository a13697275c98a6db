// Unit tests of the library pieces spec-sampler and spec-speedup add (spec/positional,
// core/martingale, the loop's on_step and drop_bonus) on their own; the checks' own tests are in
// tests/checks/spec_sampler_test.cpp, spec_speedup_test.cpp and spec_etau_test.cpp.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "core/martingale.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "spec/expected_tokens.hpp"
#include "spec/loop.hpp"
#include "spec/positional.hpp"

namespace spec_positional_test {

namespace {

namespace spec = kvlab::spec;
kvlab::ModelConfig tiny(int vocab) {
  kvlab::ModelConfig c;
  c.n_layer = 1;
  c.d_model = 16;
  c.n_head = 2;
  c.n_kv_head = 2;
  c.head_dim = 8;
  c.vocab_size = vocab;
  c.block_size = 32;
  return c;
}

}  // namespace

TEST_CASE("positional E[τ]: the document's formula at one α, the law and its variance") {
  for (double a : {0.0, 0.3, 0.6, 0.7, 0.95, 1.0})
    for (int k : {1, 2, 4, 8}) {
      const std::vector<double> same(static_cast<std::size_t>(k), a);
      CHECK(spec::expected_tokens_positional(same) ==
            doctest::Approx(spec::expected_tokens(a, k)).epsilon(1e-14));
      CHECK(spec::tokens_variance_positional(same) ==
            doctest::Approx(spec::tokens_per_step_variance(a, k)).epsilon(1e-12));
    }
  const std::vector<double> a{0.9, 0.5, 0.2};
  const auto law = spec::tokens_law_positional(a);
  CHECK(law[0] == doctest::Approx(0.1));
  CHECK(law[3] == doctest::Approx(0.09));
  CHECK(spec::expected_tokens_positional(a) == doctest::Approx(1 + 0.9 + 0.45 + 0.09));
  const std::vector<double> bad{0.5, 1.5};
  CHECK(kvlab::test::input_error([&] { spec::expected_tokens_positional(bad); })
            .find("acceptance probability") != std::string::npos);
}

TEST_CASE("freedman_radius: grows with the variation, covers a simulated martingale") {
  const double small = kvlab::freedman_radius(1.0, 1.0, 1000.0, 1e-4);
  const double large = kvlab::freedman_radius(500.0, 1.0, 1000.0, 1e-4);
  CHECK(small < large);
  CHECK(large >= kvlab::bernstein_radius(500.0, 1.0, 1, 1e-4));
  CHECK_THROWS_AS(kvlab::freedman_radius(2.0, 1.0, 1.0, 1e-4), std::invalid_argument);
  CHECK_THROWS_AS(kvlab::freedman_radius(1.0, 0.0, 1.0, 1e-4), std::invalid_argument);
  // Bernoulli(a_i) with a_i varying: the sum of (X − a) stays inside the radius at 1e-3 in 200 runs.
  kvlab::Rng rng(7);
  int outside = 0;
  for (int run = 0; run < 200; ++run) {
    double s = 0.0, w = 0.0;
    for (int i = 0; i < 500; ++i) {
      const double a = 0.05 + 0.9 * rng.uniform();
      s += (rng.uniform() < a ? 1.0 : 0.0) - a;
      w += a * (1.0 - a);
    }
    outside += std::abs(s) >= kvlab::freedman_radius(w, 1.0, 125.0, 1e-3) ? 1 : 0;
  }
  CHECK(outside == 0);
}

TEST_CASE("loop: draft and target with different vocabularies are a clear InputError") {
  const kvlab::MiniGPT<double> target(tiny(12), 1), draft(tiny(10), 2);
  const std::vector<int> prompt{1, 2, 3};
  kvlab::Rng rng(3);
  const std::string msg = kvlab::test::input_error(
      [&] { spec::speculative_decode(target, draft, prompt, spec::SpecConfig{}, rng); });
  CHECK(msg.find("vocab_size") != std::string::npos);
  CHECK(msg.find("10") != std::string::npos);
  CHECK(msg.find("12") != std::string::npos);
}

TEST_CASE("loop: on_step sees every step; drop_bonus emits K on an all-accepted step") {
  const kvlab::MiniGPT<double> target(tiny(12), 1);
  const std::vector<int> prompt{1, 2, 3};
  spec::SpecConfig sc;
  sc.k = 3;
  sc.max_new_tokens = 12;
  std::int64_t seen = 0, bonus = 0;
  sc.on_step = [&](const spec::StepTrace& s) {
    ++seen;
    bonus += s.bonus ? 1 : 0;
    CHECK(s.target.size() == 4);
    CHECK(s.draft.size() == 3);
  };
  // The target as its own draft: every draft is accepted, every step ends with a bonus.
  kvlab::Rng rng(5);
  const auto good = spec::speculative_decode(target, target, prompt, sc, rng);
  CHECK(seen == good.stats.steps);
  CHECK(bonus == good.stats.steps);
  CHECK(good.stats.emitted == 4 * good.stats.steps);
  spec::SpecFaults drop;
  drop.drop_bonus = true;
  kvlab::Rng rng2(5);
  const auto bad = spec::speculative_decode(target, target, prompt, sc, rng2, drop);
  CHECK(bad.tokens.size() == 12);
  CHECK(bad.stats.emitted == 3 * bad.stats.steps);
}

}  // namespace spec_positional_test
