// greedy-generate (checks/greedy_generate.cpp): passes in float64 and float32; fails with a
// cached generator that re-prefills the wrong window, never re-prefills, or decodes against a
// lossy cache; and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "cache/kv_cache.hpp"
#include "checks/greedy_generate.hpp"
#include "core/error.hpp"
#include "model/generate.hpp"

namespace check_greedy_generate_test {

using namespace kvlab;

namespace {

/// A cache that keeps only the last `keep` positions' values right: older V rows are overwritten
/// with the newest one (a cache that "loses" positions, in the style of incremental_vs_full_test.cpp).
class LossyCache final : public KVCache<double> {
 public:
  LossyCache(int n_layer, int width, int keep)
      : KVCache<double>(n_layer, width), k_(n_layer, Mat<double>(0, width)), v_(n_layer, Mat<double>(0, width)),
        keep_(keep) {}
  void append(int layer, const Mat<double>& k, const Mat<double>& v) override {
    for (auto* pair : {&k_, &v_}) {
      Mat<double>& m = (*pair)[layer];
      const Mat<double>& add = pair == &k_ ? k : v;
      m.conservativeResize(m.rows() + add.rows(), Eigen::NoChange);
      m.bottomRows(add.rows()) = add;
    }
    if (v_[layer].rows() > keep_) v_[layer].row(0) = v_[layer].row(v_[layer].rows() - 1);
  }
  ConstMatView<double> keys(int l) const override { return {k_[l].data(), k_[l].rows(), k_[l].cols()}; }
  ConstMatView<double> values(int l) const override { return {v_[l].data(), v_[l].rows(), v_[l].cols()}; }
  int length(int l) const override { return static_cast<int>(k_[l].rows()); }
  void truncate(int) override {}

 private:
  std::vector<Mat<double>> k_, v_;
  int keep_;
};

}  // namespace

TEST_CASE("greedy-generate passes, and fails with a wrong window, a generator that never re-prefills, a lossy cache") {
  checks::RunContext ctx;
  checks::GreedyGenerateOptions o;
  const Result ok = checks::run_greedy_generate(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("differing_tokens") == 0.0);
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_greedy_generate(o, ctx).passed());
  ctx.dtype = Dtype::f64;

  checks::GreedyGenerateParts short_window;  // re-prefills one token too few after the slide
  short_window.cached_schedule = [](std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    auto calls = generation_schedule(GenerationMode::cached, p, n, b);
    for (std::size_t j = 1; j < calls.size(); ++j)
      if (calls[j].fresh_cache) calls[j].begin += 1, calls[j].n_tokens -= 1;
    return calls;
  };
  CHECK_FALSE(checks::run_greedy_generate(o, ctx, short_window).passed());

  checks::GreedyGenerateParts never_slides;  // keeps decoding: runs off the position table
  never_slides.cached_schedule = [](std::int64_t p, std::int64_t n, std::optional<std::int64_t>) {
    return generation_schedule(GenerationMode::cached, p, n, std::nullopt);
  };
  const Result off = checks::run_greedy_generate(o, ctx, never_slides);
  CHECK_FALSE(off.passed());

  checks::GreedyGenerateParts lossy;
  lossy.cache_f64 = [](int n_layer, int width, int) { return std::make_unique<LossyCache>(n_layer, width, 12); };
  o.block_size = 64;  // no slide: every token after the 12th decodes against the lossy cache
  CHECK_FALSE(checks::run_greedy_generate(o, ctx, lossy).passed());

  o.kv_heads = 3;
  CHECK_THROWS_WITH_AS(checks::run_greedy_generate(o, ctx), doctest::Contains("--kv-heads"), InputError);
}

TEST_CASE("greedy-generate: judge fails one differing token, a missed re-prefill, and a failed generator") {
  const checks::GreedyGenerateMeasured good = checks::measure_greedy_generate({}, checks::RunContext{});
  const auto rows = checks::judge_greedy_generate(good);
  REQUIRE(rows.size() == 2);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[1].expected == 15);  // 8 + 40 tokens through a 32-token window: steps 25 .. 39 re-prefill

  checks::GreedyGenerateMeasured off = good;
  off.differing = 1;
  CHECK_FALSE(checks::judge_greedy_generate(off)[0].holds());
  off = good;
  off.reprefills = 14;
  CHECK_FALSE(checks::judge_greedy_generate(off)[1].holds());
  off = good;
  off.differing = std::nan("");  // a generator threw: nothing to compare is not a pass
  CHECK_FALSE(checks::judge_greedy_generate(off)[0].holds());

  checks::GreedyGenerateMeasured hand;  // never past the window: no re-prefill expected
  hand.options.prompt = 4;
  hand.options.new_tokens = 10;
  hand.config.block_size = 32;
  CHECK(checks::judge_greedy_generate(hand)[1].expected == 0);
  CHECK(checks::judge_greedy_generate(hand)[1].holds());
  hand.reprefills = 1;
  CHECK_FALSE(checks::judge_greedy_generate(hand)[1].holds());
}

}  // namespace check_greedy_generate_test
