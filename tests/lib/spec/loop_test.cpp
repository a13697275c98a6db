// Unit tests of the one-step law (lib/spec/step_law), the sampler pipeline, the speculative
// loop's refusals and the chi-square tail.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/step_law.hpp"
#include "spec/loop.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"

namespace spec_loop_test {

namespace {

namespace spec = kvlab::spec;

}  // namespace

TEST_CASE("step law: the greedy-draft counterexample, one-hot vs soft q") {
  const std::vector<double> p{0.6, 0.4}, hot{1.0, 0.0}, soft{0.8, 0.2};
  const auto ok = spec::step_output_law(p, hot, hot);
  CHECK(ok[0] == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(ok[1] == doctest::Approx(0.4).epsilon(1e-15));
  const auto bad = spec::step_output_law(p, soft, hot);
  CHECK(bad[0] == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(bad[1] == doctest::Approx(0.25).epsilon(1e-15));
  // q(x) = 0 where p(x) > 0: no division by zero, the law is p.
  const std::vector<double> q0{0.0, 1.0};
  const auto z = spec::step_output_law(p, q0);
  CHECK(z[0] == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(z[1] == doctest::Approx(0.4).epsilon(1e-15));
  const std::string msg = kvlab::test::input_error(
      [&] { spec::step_output_law(p, hot, std::vector<double>{1.0, 0.0, 0.0}); });
  CHECK(msg.find("proposal") != std::string::npos);
}

TEST_CASE("sampler pipeline: temperature 0 is argmax, top-k and top-p cut and renormalize") {
  const std::vector<double> lg{1.0, 3.0, 2.0, 3.0};
  const auto g = spec::process_logits(lg, {.temperature = 0.0});
  CHECK(g == std::vector<double>{0.0, 1.0, 0.0, 0.0});  // ties: the lower id
  const auto k2 = spec::process_logits(lg, {.temperature = 1.0, .top_k = 2});
  CHECK(k2[1] == doctest::Approx(0.5));
  CHECK(k2[3] == doctest::Approx(0.5));
  CHECK(k2[0] == 0.0);
  CHECK(k2[2] == 0.0);
  const auto full = spec::process_logits(lg, {});
  double s = 0.0;
  for (double x : full) s += x;
  CHECK(s == doctest::Approx(1.0));
  const auto tp = spec::process_logits(lg, {.temperature = 1.0, .top_p = 0.5});
  CHECK(tp[1] + tp[3] == doctest::Approx(1.0));
  CHECK(kvlab::test::input_error([] { spec::validate_sampler("draft ", {.temperature = -1}); })
            .find("draft temperature") != std::string::npos);
}

TEST_CASE("speculative loop: different vocabularies are an InputError naming vocab_size") {
  kvlab::ModelConfig a, b;
  b.vocab_size = 50;
  const kvlab::MiniGPT<double> t(a, 1), d(b, 2);
  const std::vector<int> prompt{1, 2, 3};
  kvlab::Rng rng(3);
  const std::string msg = kvlab::test::input_error(
      [&] { spec::speculative_decode(t, d, prompt, spec::SpecConfig{}, rng); });
  CHECK(msg.find("vocab_size") != std::string::npos);
  CHECK(msg.find("50") != std::string::npos);
  CHECK(kvlab::test::input_error([&] {
          spec::SpecConfig c;
          c.max_new_tokens = 60;
          spec::speculative_decode(t, t, prompt, c, rng);
        }).find("max_new_tokens") != std::string::npos);
}

TEST_CASE("chi-square tail and quantile") {
  // Known values: chi2(1) at 3.841458820694124 has tail 0.05; chi2(10) at 18.307038053275146 too.
  CHECK(kvlab::chi_square_sf(3.841458820694124, 1) == doctest::Approx(0.05).epsilon(1e-10));
  CHECK(kvlab::chi_square_sf(18.307038053275146, 10) == doctest::Approx(0.05).epsilon(1e-10));
  CHECK(kvlab::chi_square_sf(0.0, 5) == 1.0);
  CHECK(kvlab::chi_square_sf(2.0, 2) == doctest::Approx(std::exp(-1.0)).epsilon(1e-12));
  CHECK(kvlab::chi_square_quantile_upper(0.05, 10) == doctest::Approx(18.307038053275146).epsilon(1e-9));
  CHECK(kvlab::chi_square_quantile_upper(1e-5, 63) ==
        doctest::Approx(kvlab::chi_square_quantile_upper(1e-5, 63)));
  CHECK_THROWS_AS(kvlab::chi_square_sf(-1.0, 2), std::invalid_argument);
}

TEST_CASE("speculative loop: top-k = 1 sampling is greedy decoding, through the sampling path") {
  kvlab::ModelConfig small;
  small.n_layer = 1;
  small.d_model = 32;
  small.n_head = 4;
  small.n_kv_head = 2;
  small.head_dim = 8;
  const kvlab::MiniGPT<double> t(kvlab::ModelConfig{}, 11), d(small, 12);
  const std::vector<int> prompt{3, 1, 4, 1, 5};
  kvlab::Rng r1(1), r2(2);
  const auto ref = spec::autoregressive_decode(t, prompt, 20, {.temperature = 0.0}, r1);
  spec::SpecConfig c;
  c.k = 3;
  c.max_new_tokens = 20;
  c.target_sampler = {.temperature = 0.7, .top_k = 1};
  c.draft_sampler = {.temperature = 1.3, .top_k = 1, .top_p = 0.9};
  const auto run = spec::speculative_decode(t, d, prompt, c, r2);
  CHECK(run.tokens == ref);
  CHECK(run.stats.target_forwards == run.stats.steps);
  CHECK(run.stats.emitted >= 20);
  CHECK(run.stats.draft_forwards == run.stats.steps * 3 + run.stats.bonus);
}

}  // namespace spec_loop_test
