// linear-attention (checks/linear_attention.cpp): passes with kvlab's LinearAttention; fails with a
// layer whose state grows or whose normaliser is not decayed; and its judge on counts made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/linear_attention.hpp"
#include "checks/linear_attention.hpp"
#include "core/error.hpp"

namespace check_linear_attention_test {

using namespace kvlab;

namespace {

/// Keeps every past key and value beside the state, as a KV cache would: its bytes grow with t.
class HoardingLayer final : public LinearAttention {
 public:
  using LinearAttention::LinearAttention;
  Vec<double> step(const Vec<double>& q, const Vec<double>& k, const Vec<double>& v) override {
    ++kept_;
    return LinearAttention::step(q, k, v);
  }
  std::size_t state_bytes() const override {
    return LinearAttention::state_bytes() + static_cast<std::size_t>(kept_) * (key_dim_ + value_dim_) * sizeof(double);
  }

 private:
  int kept_ = 0;
};

/// Forgets to decay the normaliser z: the recurrent form no longer equals the parallel one (γ < 1).
class UndecayedNormaliser final : public LinearAttention {
 public:
  using LinearAttention::LinearAttention;
  Vec<double> step(const Vec<double>& q, const Vec<double>& k, const Vec<double>& v) override {
    const Vec<double> fq = linear_attention_feature(q), fk = linear_attention_feature(k);
    s_ = decay_ * s_ + fk * v.transpose();
    z_ += fk;
    last_macs_ = 2 * static_cast<std::uint64_t>(key_dim_) * value_dim_ + 2 * key_dim_;  // honest count
    return (fq.transpose() * s_).transpose() / fq.dot(z_);
  }
};

}  // namespace

TEST_CASE("linear-attention passes, and fails with a state that grows or a normaliser that is not decayed") {
  checks::RunContext ctx;
  checks::LinearAttentionOptions o;
  const Result ok = checks::run_linear_attention(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("linear_state_bytes") == (16.0 * 16 + 16) * 8);
  CHECK(ok.metric_value("kv_cache_bytes_at_T") == 2.0 * 64 * 16 * 8);
  checks::LinearAttentionParts hoarding;
  hoarding.make_layer = [](int dk, int dv, double g) { return std::make_unique<HoardingLayer>(dk, dv, g); };
  CHECK_FALSE(checks::run_linear_attention(o, ctx, hoarding).passed());
  checks::LinearAttentionParts undecayed;
  undecayed.make_layer = [](int dk, int dv, double g) { return std::make_unique<UndecayedNormaliser>(dk, dv, g); };
  const Result bad = checks::run_linear_attention(o, ctx, undecayed);
  CHECK_FALSE(bad.passed());
  int failing = 0;
  for (const auto& e : bad.expectations) failing += !e.holds();
  CHECK(failing == 1);  // only γ = 0.9's recurrent-vs-parallel row
  o.steps = 1;
  CHECK_THROWS_WITH_AS(checks::run_linear_attention(o, ctx), doctest::Contains("--steps"), InputError);
}

TEST_CASE("linear-attention: judge fails a state that grows, work off by one, a cache row short, and a wrong form") {
  const checks::LinearAttentionMeasured good = checks::measure_linear_attention({}, checks::RunContext{});
  const auto rows = checks::judge_linear_attention(good);
  REQUIRE(rows.size() == 14);  // γ = 1: 4 + 4 + 1; γ = 0.9: 4 + 1
  for (const Expectation& e : rows) CHECK(e.holds());

  checks::LinearAttentionMeasured off = good;
  off.runs[1].steps.back().state_bytes += 8;  // γ = 0.9's state one double larger at the last step
  auto judged = checks::judge_linear_attention(off);
  CHECK_FALSE(judged[9].holds());
  CHECK_FALSE(judged[10].holds());
  off = good;
  off.runs[0].steps[3].macs -= 1;
  CHECK_FALSE(checks::judge_linear_attention(off)[2].holds());
  off = good;
  off.runs[0].steps.back().kv_bytes -= 2 * 16 * 8;  // the cache one token short at t = T
  judged = checks::judge_linear_attention(off);
  CHECK_FALSE(judged[4].holds());
  CHECK_FALSE(judged[5].holds());
  off = good;
  off.runs[1].diff = 1e-9;  // recurrent and parallel forms disagree far beyond rounding
  CHECK_FALSE(checks::judge_linear_attention(off)[13].holds());

  // Hand-made: T = 2, d = 1: state (1 + 1)·8 = 16 B, work 2 + 2 = 4, cache 2·t·8 B, softmax 2·t.
  checks::LinearAttentionMeasured hand;
  hand.options = {.steps = 2, .head_dim = 1};
  hand.max_v = 1;
  hand.runs = {{.gamma = 1.0, .steps = {{16, 4, 16, 2}, {16, 4, 32, 4}}}};
  for (const Expectation& e : checks::judge_linear_attention(hand)) CHECK(e.holds());
  hand.runs[0].steps[1].softmax_macs = 2;  // softmax work that did not grow with t
  judged = checks::judge_linear_attention(hand);
  CHECK_FALSE(judged[6].holds());
  CHECK_FALSE(judged[7].holds());
}

}  // namespace check_linear_attention_test
