// spec-speedup (checks/spec_speedup.cpp): passes at defaults, fails with the bonus term left out of
// E[τ] or dropped by the loop, refuses a run too small to fail, describes a file pair in its notes;
// its judge on a hand-made K.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <cmath>
#include <filesystem>
#include <span>
#include <string>

#include "checks/spec_speedup.hpp"
#include "model/gpt.hpp"
#include "model/weights_io.hpp"
#include "spec/expected_tokens.hpp"
#include "spec/positional.hpp"

namespace check_spec_speedup_test {

using namespace kvlab;
using kvlab::checks::RunContext;


TEST_CASE("spec-speedup passes at defaults and offers its plot") {
  const auto r = checks::run_spec_speedup({}, RunContext{});
  CHECK(r.passed());
  REQUIRE(r.plots.size() == 1);
  CHECK(r.plots[0].series.size() == 4);
  CHECK(r.plots[0].series[0].x.size() == 8);
}

TEST_CASE("spec-speedup bites: α^K instead of α^(K+1), and a loop that drops the bonus token") {
  checks::SpecSpeedupParts formula;
  // Σ_{i<K} Π a = (1 − α^K)/(1 − α) at one α: the bonus term left out.
  formula.expected_tokens = [](std::span<const double> a) { return spec::expected_tokens_positional(a.first(a.size() - 1)); };
  const auto f = checks::run_spec_speedup({}, RunContext{}, formula);
  CHECK_FALSE(f.passed());
  CHECK(kvlab::test::failed_row(f, "tokens per step vs E[τ | drafts]"));
  CHECK(kvlab::test::failed_row(f, "(1 − α^(K+1))/(1 − α)"));
  CHECK(kvlab::test::failed_row(f, "predicted speedup E[τ](α exact)/(1 + K·c) at the best K"));  // 003 part 5's "about 2×"

  checks::SpecSpeedupParts loop;
  loop.faults.drop_bonus = true;
  const auto l = checks::run_spec_speedup({}, RunContext{}, loop);
  CHECK_FALSE(l.passed());
  CHECK(kvlab::test::failed_row(l, "tokens per step vs E[τ | drafts] (per-position acceptance), K = 1"));
}

TEST_CASE("spec-speedup refuses a run too small for its bounds to fail") {
  const std::string msg = test::input_error([] { checks::run_spec_speedup({.prompts = 1, .new_tokens = 1}, RunContext{}); });
  CHECK(msg.find("--prompts") != std::string::npos);
}

TEST_CASE("spec-speedup on a file pair: every note describes the files' pair, none the random one") {
  // The random pair's shapes (target 2 × 64, draft 1 × 16, vocab 96, block 64), other seeds.
  const auto write = [](const std::string& name, int layers, int d_model, int heads, std::uint64_t seed) {
    ModelConfig c;
    c.n_layer = layers;
    c.d_model = d_model;
    c.n_head = c.n_kv_head = heads;
    c.head_dim = 8;
    const std::string path = (std::filesystem::temp_directory_path() / ("kvlab_pair_" + name + ".safetensors")).string();
    save_gpt(MiniGPT<double>(c, seed), path, {});
    return path;
  };
  RunContext ctx;
  ctx.weights = write("speed_t", 2, 64, 8, 11);
  ctx.draft_weights = write("speed_d", 1, 16, 2, 12);
  const Result r = checks::run_spec_speedup({}, ctx);
  CHECK(r.passed());
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  CHECK_MESSAGE(notes.find(ctx.weights) != std::string::npos, notes);
  for (const char* random_pair : {"MiniGPT(seed)", "SplitMix64(seed, 1)", "random pair", "Random-weight", "These mini-GPTs"})
    CHECK_MESSAGE(notes.find(random_pair) == std::string::npos, random_pair);
  // Without --weights the notes describe the seeded random pair.
  const Result seeded = checks::run_spec_speedup({}, RunContext{});
  std::string seeded_notes;
  for (const auto& n : seeded.notes) seeded_notes += n;
  CHECK(seeded_notes.find("MiniGPT(seed)") != std::string::npos);
}

TEST_CASE("spec-speedup: judge on a hand-made K: a wrong α or token count, a miscounted forward or a NaN fails its row") {
  checks::SpecSpeedupMeasured m{.options = {.prompts = 32, .new_tokens = 53}};
  checks::SpeedupK k1;  // K = 1, α = 0.7 at every verified position, 1000 steps
  k1.k = 1;
  k1.steps = k1.evaluated = k1.target_forwards = 1000;
  k1.accepted = k1.bonus = 700;
  k1.emitted = 1700;
  k1.draft_forwards = 1700;  // K per step, plus one after each bonus
  k1.sum_a = 700, k1.var_a = 210;
  k1.sum_m = 1700, k1.var_m = 210;
  k1.positional_observed = k1.positional_exact = 1.7;
  m.ks = {k1};
  auto rows = checks::judge_spec_speedup(m);
  REQUIRE(rows.size() == 6);  // α, tokens per step, two forward counts, the identity, the speedup
  for (const Expectation& e : rows) CHECK_MESSAGE(e.holds(), e.quantity);
  m.ks[0].accepted = 900;  // α observed 0.9 against an exact 0.7 over 1000 positions
  CHECK_FALSE(checks::judge_spec_speedup(m)[0].holds());
  m.ks[0].accepted = 700;
  m.ks[0].sum_a = std::nan("");
  CHECK_FALSE(checks::judge_spec_speedup(m)[0].holds());
  m.ks[0].sum_a = 700;
  m.ks[0].emitted = 2000;  // 2 tokens per step where E[τ | drafts] is 1.7
  CHECK_FALSE(checks::judge_spec_speedup(m)[1].holds());
  m.ks[0].emitted = 1700;
  m.ks[0].draft_forwards = 1000;  // the bonus token not fed to the draft
  CHECK_FALSE(checks::judge_spec_speedup(m)[3].holds());
  m.ks[0].draft_forwards = 1700;
  m.ks[0].positional_observed = std::nan("");
  CHECK_FALSE(checks::judge_spec_speedup(m)[4].holds());
  m.ks[0].positional_observed = 1.7;
  m.ks[0].positional_exact = 1.0;  // the bonus term left out: E[τ] = 1 at K = 1
  CHECK_FALSE(checks::judge_spec_speedup(m)[5].holds());
}

TEST_CASE("spec-speedup: a K whose tokens-per-step bound cannot fail is judged in a pooled row, which bites") {
  checks::SpecSpeedupMeasured m{.options = {.prompts = 32, .new_tokens = 53}};
  checks::SpeedupK k1;  // K = 1, α = 0.7, 1000 steps: judged alone
  k1.k = 1;
  k1.steps = k1.evaluated = k1.target_forwards = 1000;
  k1.accepted = k1.bonus = 700;
  k1.emitted = k1.draft_forwards = 1700;
  k1.sum_a = 700, k1.var_a = 210;
  k1.sum_m = 1700, k1.var_m = 210;
  k1.positional_observed = k1.positional_exact = 1.7;
  checks::SpeedupK k8;  // K = 8, α = 0.9, 10 steps that each emit 7 tokens: too few for a row of its own
  k8.k = 8;
  k8.steps = k8.target_forwards = 10;
  k8.evaluated = 80, k8.accepted = 60, k8.bonus = 0;
  k8.emitted = 70, k8.draft_forwards = 80;
  k8.sum_a = 72, k8.var_a = 7.2;
  k8.sum_m = 70, k8.var_m = 60;
  k8.positional_observed = k8.positional_exact = spec::expected_tokens(0.9, 8);
  m.ks = {k1, k8};
  const auto has = [](const std::vector<Expectation>& rows, const std::string& quantity) {
    for (const Expectation& e : rows)
      if (e.quantity.starts_with(quantity)) return &e;
    return static_cast<const Expectation*>(nullptr);
  };
  auto rows = checks::judge_spec_speedup(m);
  CHECK(has(rows, "tokens per step vs E[τ | drafts] (per-position acceptance), K = 1") != nullptr);
  CHECK(has(rows, "tokens per step vs E[τ | drafts] (per-position acceptance), K = 8") == nullptr);
  const Expectation* pooled = has(rows, "tokens per step vs E[τ | drafts], K = 1..8 pooled");
  REQUIRE(pooled != nullptr);
  CHECK(pooled->can_fail());
  CHECK(pooled->holds());
  m.ks[0].emitted = 2000;  // K = 1 emits 2 tokens per step where E[τ | drafts] is 1.7
  rows = checks::judge_spec_speedup(m);
  CHECK_FALSE(has(rows, "tokens per step vs E[τ | drafts], K = 1..8 pooled")->holds());
  m.ks[0].emitted = 1700;
  m.ks[0].emitted = 700, m.ks[1].emitted = 60;  // every step one token short (the bonus dropped)
  rows = checks::judge_spec_speedup(m);
  CHECK(has(rows, "tokens per step vs E[τ | drafts] (per-position acceptance), K = 8") == nullptr);
  CHECK_FALSE(has(rows, "tokens per step vs E[τ | drafts], K = 1..8 pooled")->holds());
  // With enough steps every K is judged alone, and no pooled row is added (the defaults' output).
  m.ks = {k1};
  CHECK(has(checks::judge_spec_speedup(m), "tokens per step vs E[τ | drafts], K = 1..8 pooled") == nullptr);
}

}  // namespace check_spec_speedup_test
