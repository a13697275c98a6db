// sliding-window (checks/sliding_window.cpp): passes with the rolling cache; fails with a window off
// by one, a ring read in slot order, or a cache that keeps everything; names its positional
// encoding; refuses bad options; and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/kv_cache.hpp"
#include "checks/sliding_window.hpp"
#include "core/error.hpp"

namespace check_sliding_window_test {

using namespace kvlab;

namespace {

// A ring that forgets to straighten: reads return the slots as stored (slot = position mod W), so
// after a wrap-around row 0 is no longer the oldest position.
class UnrotatedRing final : public KVCache<double> {
 public:
  UnrotatedRing(int n_layer, int width, int window)
      : KVCache<double>(n_layer, width), w_(window), n_(n_layer, 0) {
    for (int l = 0; l < n_layer; ++l) {
      k_.emplace_back(Mat<double>::Zero(window, width));
      v_.emplace_back(Mat<double>::Zero(window, width));
    }
  }
  void append(int l, const Mat<double>& k, const Mat<double>& v) override {
    for (Eigen::Index r = 0; r < k.rows(); ++r, ++n_[l]) {
      k_[l].row(n_[l] % w_) = k.row(r);
      v_[l].row(n_[l] % w_) = v.row(r);
    }
  }
  ConstMatView<double> keys(int l) const override { return {k_[l].data(), length(l), width_}; }
  ConstMatView<double> values(int l) const override { return {v_[l].data(), length(l), width_}; }
  int length(int l) const override { return std::min(n_[l], w_); }
  int first_position(int l) const override { return n_[l] - length(l); }
  void truncate(int) override {}

 private:
  int w_;
  std::vector<int> n_;
  std::vector<Mat<double>> k_, v_;
};

}  // namespace

TEST_CASE("sliding-window passes with the rolling cache and fails with a window off by one") {
  checks::RunContext ctx;
  checks::SlidingWindowOptions o;
  const Result good = checks::run_sliding_window(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("cache_positions_held_max") == o.window);
  CHECK(good.metric_value("reach_positions") == o.layers * (o.window - 1));
  // 004's l·W, measured on a window of W previous tokens + the query: a convention, not an erratum.
  CHECK(good.metric_value("reach_positions_previous_w") == o.layers * o.window);
  CHECK(good.errata().empty());
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_sliding_window(o, ctx).passed());
  ctx.dtype = Dtype::f64;

  for (int off : {-1, +1}) {  // the model's window one too small or one too large
    checks::SlidingWindowParts p;
    p.model_window = o.window + off;
    const Result bad = checks::run_sliding_window(o, ctx, p);
    CHECK_FALSE(bad.passed());
    CHECK(bad.metric_value("max_abs_diff_after_wrap") > bad.metric_value("rounding_bound"));
    CHECK(bad.metric_value("reach_positions") == o.layers * (o.window + off - 1));
    CHECK(bad.metric_value("reach_positions_previous_w") == o.layers * (o.window + off));
    for (const auto& e : bad.expectations)  // both reach rows fail on the broken window
      if (e.quantity.rfind("reach", 0) == 0) CHECK_FALSE(e.holds());
  }

  checks::SlidingWindowParts unrotated;  // the ring read in slot order after a wrap-around
  unrotated.cache_f64 = [](int n, int w, int win) { return std::make_unique<UnrotatedRing>(n, w, win); };
  const Result bad = checks::run_sliding_window(o, ctx, unrotated);
  CHECK_FALSE(bad.passed());
  CHECK(bad.metric_value("max_abs_diff_before_wrap") == 0);  // right until the first wrap-around
  CHECK(bad.metric_value("max_abs_diff_after_wrap") > bad.metric_value("rounding_bound"));

  checks::SlidingWindowParts full_cache;  // memory: a cache that keeps everything holds N, not W
  full_cache.cache_f64 = [](int n, int w, int) { return make_cache<double>(CacheKind::prealloc, n, w, 64); };
  const Result full = checks::run_sliding_window(o, ctx, full_cache);
  CHECK_FALSE(full.passed());
  CHECK(full.metric_value("max_abs_diff_after_wrap") <= full.metric_value("rounding_bound"));
  CHECK(full.metric_value("cache_positions_held_max") == o.tokens);
}

TEST_CASE("sliding-window: its rows name the positional encoding the model uses") {
  checks::RunContext ctx;
  checks::SlidingWindowOptions o;
  o.positional = "learned";
  const Result learned = checks::run_sliding_window(o, ctx);
  CHECK(learned.passed());
  bool named = false;
  for (const auto& e : learned.expectations) {
    CAPTURE(e.quantity);
    CHECK(e.quantity.find("RoPE") == std::string::npos);
    named = named || e.quantity.find("learned positions") != std::string::npos;
  }
  CHECK(named);
}

TEST_CASE("sliding-window: bad options are InputErrors naming the option") {
  checks::RunContext ctx;
  checks::SlidingWindowOptions o;
  o.window = 0;
  CHECK_THROWS_WITH_AS(checks::run_sliding_window(o, ctx), doctest::Contains("--window"), InputError);
  o = {};
  o.prefill = 25;
  CHECK_THROWS_WITH_AS(checks::run_sliding_window(o, ctx), doctest::Contains("--prefill"), InputError);
  o = {};
  o.perturb = 24;
  CHECK_THROWS_WITH_AS(checks::run_sliding_window(o, ctx), doctest::Contains("--perturb"), InputError);
}

TEST_CASE("sliding-window: judge fails logits beyond rounding, a cache that holds more, and a reach off by one") {
  const checks::SlidingWindowMeasured good = checks::measure_sliding_window({}, checks::RunContext{});
  auto rows = checks::judge_sliding_window(good);
  REQUIRE(rows.size() == 6);  // before, after the wrap-around; positions held; two reaches; disagreements
  for (const Expectation& e : rows) CHECK(e.holds());

  checks::SlidingWindowMeasured off = good;
  off.diff_after = 1e-6;
  CHECK_FALSE(checks::judge_sliding_window(off)[1].holds());
  off = good;
  off.max_held = 5;  // one position more than the window
  CHECK_FALSE(checks::judge_sliding_window(off)[2].holds());
  off = good;
  off.probe_own[3 + 2 * 3 + 1] = 1e-3;  // an output one past l·(W − 1) = 6 moved
  rows = checks::judge_sliding_window(off);
  CHECK_FALSE(rows[3].holds());
  CHECK_FALSE(rows[5].holds());
  off = good;
  off.probe_doc[3 + 2 * 4] = 0;  // 004's window: the output at l·W did not move
  rows = checks::judge_sliding_window(off);
  CHECK_FALSE(rows[4].holds());
  CHECK_FALSE(rows[5].holds());

  // Hand-made: 1 layer, W = 2 keys, N = 4, s = 1: outputs 1, 2 may move (and 1..3 under W + 1 keys).
  checks::SlidingWindowMeasured hand;
  hand.options = {.window = 2, .layers = 1, .tokens = 4, .prefill = 1, .perturb = 1};
  hand.config.n_layer = 1;
  hand.max_held = 2;
  hand.probe_own = {0, 0.5, 0.5, 0};
  hand.probe_doc = {0, 0.5, 0.5, 0.5};
  for (const Expectation& e : checks::judge_sliding_window(hand)) CHECK(e.holds());
  hand.probe_own[3] = 0.5;  // the window leaks a third key
  rows = checks::judge_sliding_window(hand);
  CHECK(rows[3].measured == 2);
  CHECK_FALSE(rows[3].holds());
}

}  // namespace check_sliding_window_test
