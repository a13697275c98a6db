// The Day 4 generation check bench-generate (greedy-generate, complexity, intensity, ragged-batch
// and max-batch have theirs in tests/checks/): it passes with the library's parts and fails with a
// deliberately broken one; plus the library pieces the checks rest on (generation schedules, FLOP
// counts).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "cache/kv_cache.hpp"
#include "cost/traffic.hpp"
#include "checks/bench_generate.hpp"
#include "model/ragged.hpp"
#include "core/error.hpp"
#include "model/generate.hpp"
#include "test_util.hpp"

using namespace kvlab;
using kvlab::test::input_error;

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
