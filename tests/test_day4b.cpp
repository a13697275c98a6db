// The Day 4 generation checks greedy-generate and bench-generate (complexity, intensity,
// ragged-batch and max-batch have theirs in tests/checks/). Each check passes with the library's
// parts and fails with a deliberately broken one; plus the library pieces they rest on
// (generation schedules, FLOP counts).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "cache/kv_cache.hpp"
#include "cost/traffic.hpp"
#include "checks/greedy_generate.hpp"
#include "checks/bench_generate.hpp"
#include "model/ragged.hpp"
#include "core/error.hpp"
#include "model/generate.hpp"
#include "test_util.hpp"

using namespace kvlab;
using kvlab::test::input_error;

namespace {

/// A cache that keeps only the last `keep` positions' values right: older V rows are overwritten
/// with the newest one (a cache that "loses" positions, in the style of test_model.cpp).
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

TEST_CASE("generation schedules: naive feeds the window every step, cached one token until the window slides") {
  const auto naive = generation_schedule(GenerationMode::naive, 3, 4, std::int64_t{4});
  REQUIRE(naive.size() == 4);
  CHECK(naive[0].n_tokens == 3);
  CHECK(naive[1].n_tokens == 4);
  CHECK(naive[2].begin == 1);  // 5 tokens, window 4
  CHECK(naive[2].n_tokens == 4);
  const auto cached = generation_schedule(GenerationMode::cached, 3, 4, std::int64_t{4});
  CHECK(cached[0].fresh_cache);
  CHECK(cached[1].n_tokens == 1);
  CHECK(cached[1].start_pos == 3);
  CHECK_FALSE(cached[1].fresh_cache);
  CHECK(cached[2].fresh_cache);  // slid: re-prefill
  CHECK(cached[2].begin == 1);
  const auto rope = generation_schedule(GenerationMode::cached, 3, 4, std::nullopt);
  CHECK_FALSE(rope[3].fresh_cache);
  CHECK(rope[3].start_pos == 5);
  CHECK_THROWS_AS(generation_schedule(GenerationMode::naive, 0, 4, std::nullopt), InputError);
}

TEST_CASE("count_forward: MHA per-layer terms 6nd², 2nd², 16nd², and causal/bidirectional attention") {
  ModelConfig c;
  c.n_layer = 1;
  c.d_model = 8;
  c.n_head = 2;
  c.n_kv_head = 2;
  c.head_dim = 4;
  c.vocab_size = 10;
  const OpCount k = count_forward(c, 3, 2);
  CHECK(k.qkv == 6u * 3 * 64);
  CHECK(k.out_proj == 2u * 3 * 64);
  CHECK(k.mlp == 16u * 3 * 64);
  CHECK(k.attn_scores == 2u * 8 * (3 + 4 + 5));  // queries at positions 2, 3, 4 see 3, 4, 5 keys
  CHECK(k.lm_head == 2u * 3 * 8 * 10);
  c.causal = false;
  CHECK(count_forward(c, 3, 2).attn_scores == 2u * 8 * 3 * 5);
  CHECK_THROWS_AS(count_forward(c, 0, 0), InputError);
}

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
  CHECK(input_error([&] { checks::run_greedy_generate(o, ctx); }).find("--kv-heads") != std::string::npos);
}

TEST_CASE("bench-generate: counted work n(n+1)/2 vs n passes; a 'cached' generator that recomputes fails; timing only in timing") {
  checks::RunContext ctx;
  checks::BenchGenerateOptions o;
  o.repeats = 1;
  const Result ok = checks::run_bench_generate(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("positions_naive_64") == 64.0 * 65 / 2);
  CHECK(ok.metric_value("positions_cached_64") == 64.0);
  REQUIRE(ok.plots.size() == 1);
  CHECK(ok.plots[0].series.size() == 2);
  for (const auto& t : ok.tables)
    if (t.title.rfind("timing", 0) != 0)
      for (const auto& c : t.columns) CHECK(c.find("ms") == std::string::npos);

  checks::BenchGenerateParts recompute;
  recompute.schedule = [](GenerationMode, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    return generation_schedule(GenerationMode::naive, p, n, b);
  };
  CHECK_FALSE(checks::run_bench_generate(o, ctx, recompute).passed());

  checks::BenchGenerateParts stale;  // never refreshes the cache after the prefill: wrong positions
  stale.schedule = [](GenerationMode m, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    auto calls = generation_schedule(m, p, n, b);
    if (m == GenerationMode::cached)
      for (auto& c : calls)
        if (c.n_tokens == 1) c.begin = 0;  // feeds the first token again at the new position
    return calls;
  };
  CHECK_FALSE(checks::run_bench_generate(o, ctx, stale).passed());
  CHECK(checks::bench_lengths(true).back() == 255);

  o.repeats = 0;
  CHECK(input_error([&] { checks::run_bench_generate(o, ctx); }).find("--repeats") != std::string::npos);
}
