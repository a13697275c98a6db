// spec-real (checks/spec_real.cpp): skipped when a default checkpoint is absent, refuses a named
// one that is; passes on a stand-in pair and on the trained pair; fails without the bonus token or
// with the biased sampler; its judge on hand-made runs.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "checks/spec_real.hpp"
#include "io/data_dir.hpp"
#include "train/corpus.hpp"

namespace check_spec_real_test {

using namespace kvlab;

using kvlab::test::byte_config;

TEST_CASE("spec-real: skipped when a checkpoint is absent; passes on a stand-in pair; fails without the bonus") {
  checks::SpecRealOptions o;
  o.target = "/nonexistent/kvlab/target.safetensors";  // named by the user: bad input
  CHECK(test::input_error([&] { checks::run_spec_real(o, checks::RunContext{}); }).find("--target") == 0);
  o.target = "";  // an unset shell variable: refused as on the command line
  CHECK(test::input_error([&] { checks::run_spec_real(o, checks::RunContext{}); }).find("--target: empty path") == 0);
  checks::SpecRealParts absent;  // what an absent default checkpoint gives
  absent.inputs = [] { return checks::SpecRealInputs{.skipped = "the trained checkpoint is absent"}; };
  const Result skipped = checks::run_spec_real(checks::SpecRealOptions{}, checks::RunContext{}, absent);
  CHECK(!skipped.skipped.empty());
  CHECK(skipped.passed());

  checks::SpecRealParts parts;
  parts.inputs = [] {
    checks::SpecRealInputs in;
    in.target.emplace(byte_config(2, 32, 4), 5);
    in.draft.emplace(byte_config(1, 16, 2), 6);
    in.validation = train::load_fortunes(kvlab::test::fortune_fixture("kvlab_test_spec_real_fortunes"))->train;
    return in;
  };
  const Result ok = checks::run_spec_real({}, checks::RunContext{}, parts);
  CHECK(ok.skipped.empty());
  CHECK(ok.passed());
  parts.faults.drop_bonus = true;  // a step then emits at most K tokens: E[τ | drafts] no longer holds
  CHECK(!checks::run_spec_real({}, checks::RunContext{}, parts).passed());
}

TEST_CASE("spec-real refuses a pair without one byte-level vocabulary, and names --exact-samples when it is too few") {
  const auto pair = [](int v_target, int v_draft) {
    checks::SpecRealParts parts;
    parts.inputs = [v_target, v_draft] {
      checks::SpecRealInputs in;
      ModelConfig t = byte_config(2, 32, 4), d = byte_config(1, 16, 2);
      t.vocab_size = v_target, d.vocab_size = v_draft;
      in.target.emplace(t, 5);
      in.draft.emplace(d, 6);
      in.validation = train::load_fortunes(kvlab::test::fortune_fixture("kvlab_test_spec_real_fortunes"))->train;
      return in;
    };
    return parts;
  };
  // Before: the first byte past the draft's vocabulary stopped the run with "token: id 9 outside [0, 8)".
  CHECK(test::input_error([&] { checks::run_spec_real({}, checks::RunContext{}, pair(256, 8)); })
            .find("--target, --draft: the target has vocab_size 256, the draft 8") == 0);
  CHECK(test::input_error([&] { checks::run_spec_real({}, checks::RunContext{}, pair(8, 8)); })
            .find("--target, --draft: vocab_size 8 is below 256") == 0);
  checks::SpecRealOptions few;
  few.exact_samples = 1;  // before: "--samples: 1 is too few", an option spec-real does not have
  CHECK(test::input_error([&] { checks::run_spec_real(few, checks::RunContext{}, pair(256, 256)); })
            .find("--exact-samples: 1 is too few") == 0);
}

TEST_CASE("spec-real's exactness rows on the trained pair: the biased sampler fails them") {
  checks::SpecRealParts parts;
  parts.faults.soft_q_for_greedy_draft = true;
  const Result bad = checks::run_spec_real(checks::SpecRealOptions{}, checks::RunContext{}, parts);
  if (!bad.skipped.empty()) {
    MESSAGE("spec-real skipped: " << bad.skipped);
    return;
  }
  CHECK(kvlab::test::failed_row(bad, "TV(empirical, exact target law): speculative, greedy draft"));
}

TEST_CASE("spec-real: judge on hand-made runs: a far α, a wrong tokens/step, a mismatch or a NaN fails its row") {
  checks::SpecRealMeasured m;
  m.options.prompts = 8, m.options.new_tokens = 64;
  for (double t : {1.0, 0.0}) {
    checks::SpecRealTemperature temp{.temperature = t};
    for (int k = 1; k <= 8; ++k) {
      checks::SpecRealK pk{.k = k, .sum_a = 250, .var_a = 100, .sum_m = 400, .var_m = 50};
      pk.stats.evaluated = 500, pk.stats.accepted = 250, pk.stats.steps = 200, pk.stats.emitted = 400;
      temp.ks.push_back(pk);
    }
    m.temperatures.push_back(temp);
  }
  const auto rows = checks::judge_spec_real(m);
  REQUIRE(rows.size() == 2 * (2 * 8 + 1) + 1);  // α and tokens/step per K, pooled; greedy mismatches
  for (const Expectation& e : rows) CHECK(e.holds());
  auto broken = [&](auto change, const std::string& row) {
    checks::SpecRealMeasured b = m;
    change(b.temperatures[1].ks[2]);
    bool failed = false;
    for (const Expectation& e : checks::judge_spec_real(b)) failed |= e.quantity.find(row) != std::string::npos && !e.holds();
    CHECK_MESSAGE(failed, row);
  };
  broken([](checks::SpecRealK& k) { k.stats.accepted = 400; }, "α observed vs exact α of the verified positions, temperature 0 (greedy), K = 3");
  broken([](checks::SpecRealK& k) { k.sum_a = std::nan(""); }, "α observed vs exact α of the verified positions, temperature 0 (greedy), K = 3");
  broken([](checks::SpecRealK& k) { k.stats.emitted = 700; }, "tokens per step vs E[τ | drafts], temperature 0 (greedy), K = 3");
  broken([](checks::SpecRealK& k) { k.sum_m = std::nan(""); }, "temperature 0 (greedy), K = 1..8 pooled");
  broken([](checks::SpecRealK& k) { k.greedy_mismatches = 1; }, "differs from the target's greedy decoding");
  CHECK(checks::judge_spec_real({.skipped = "absent"}).empty());

  // A K that recorded no verified position (a bug: every step verifies at least one) fails its α
  // row; it does not read as a sample too small to judge.
  checks::SpecRealMeasured none = m;
  none.temperatures[0].ks[0].stats = {};
  Result r;
  r.expectations = checks::judge_spec_real(none);
  CHECK_NOTHROW(checks::require_power(r, "--prompts, --new-tokens"));
  const auto alpha = std::find_if(r.expectations.begin(), r.expectations.end(), [](const Expectation& e) {
    return e.quantity == "α observed vs exact α of the verified positions, temperature 1, K = 1";
  });
  REQUIRE(alpha != r.expectations.end());
  CHECK(std::isnan(alpha->measured));
  CHECK_FALSE(alpha->holds());
}

}  // namespace check_spec_real_test
