// The Day 4 generation and counting checks: bench-generate, complexity, intensity, ragged-batch, max-batch. Each check passes with the library's parts and fails with a deliberately broken one;
// plus the library pieces they rest on (generation schedules, FLOP counts).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "cache/kv_cache.hpp"
#include "cost/traffic.hpp"
#include "checks/intensity.hpp"
#include "checks/bench_generate.hpp"
#include "checks/complexity.hpp"
#include "checks/max_batch.hpp"
#include "checks/ragged_batch.hpp"
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

TEST_CASE("max-batch: 298 with errata E3 and E4, and fails with a cache that forgets K or V, or wrong weights") {
  checks::RunContext ctx;
  const Result r = checks::run_max_batch({}, ctx);
  CHECK(r.passed());
  CHECK(r.metric_value("max_batch") == 298.0);
  CHECK(r.errata().size() == 2);

  checks::MaxBatchParts half;  // forgets the factor 2 of K and V
  half.capacity = [](const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n, double bpp,
                     std::uint64_t c, CacheDtype d, std::optional<double> budget) {
    BatchCapacity cap = batch_capacity(m, g, gpus, n, bpp, c, d, budget);
    cap.kv_bytes_per_sequence /= 2;
    cap.max_batch = static_cast<std::uint64_t>(std::floor(cap.kv_budget_bytes / static_cast<double>(cap.kv_bytes_per_sequence)));
    return cap;
  };
  CHECK_FALSE(checks::run_max_batch({}, ctx, half).passed());

  checks::MaxBatchParts int8_weights;  // weights counted at 1 B whatever --weight-bytes says
  int8_weights.capacity = [](const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n, double,
                             std::uint64_t c, CacheDtype d, std::optional<double> budget) {
    return batch_capacity(m, g, gpus, n, 1.0, c, d, budget);
  };
  CHECK_FALSE(checks::run_max_batch({}, ctx, int8_weights).passed());

  checks::MaxBatchOptions o;
  o.model = "llama-2-7b";
  o.gpu = "a100-40gb";
  o.gpus = 1;
  o.kv_dtype = "fp8";
  const Result one = checks::run_max_batch(o, ctx);
  CHECK(one.passed());
  CHECK(one.errata().empty());
  o.kv_budget_gb = 1e6;
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("--kv-budget-gb") != std::string::npos);
  o.kv_budget_gb.reset();
  o.model = "llama-3.1-405b";  // 810 GB of weights on one 40 GB card
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("weights") != std::string::npos);
  o.model = "deepseek-v2";
  CHECK(input_error([&] { checks::run_max_batch(o, ctx); }).find("--model") != std::string::npos);
}

TEST_CASE("ragged-batch passes, and fails with an MLP that normalizes across the batch or attention over the flattened rows") {
  checks::RunContext ctx;
  checks::RaggedBatchOptions o;
  const Result ok = checks::run_ragged_batch(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_mlp") == 0.0);

  checks::RaggedBatchParts batch_norm;  // subtracts the mean over all rows of the batch first
  batch_norm.mlp = [](const BlockWeights<double>& b, const Mat<double>& x) {
    Mat<double> centred = x.rowwise() - x.colwise().mean();
    return mlp_sublayer(b, centred);
  };
  CHECK_FALSE(checks::run_ragged_batch(o, ctx, batch_norm).passed());

  checks::RaggedBatchParts one_sequence;  // attends across requests
  one_sequence.batched_attention = [](const BlockWeights<double>& b, const ModelConfig& c, const Mat<double>& x,
                                      const std::vector<int>&) { return attention_sublayer(b, c, x); };
  CHECK_FALSE(checks::run_ragged_batch(o, ctx, one_sequence).passed());

  o.requests = 1;  // one request: nothing to mix
  CHECK(checks::run_ragged_batch(o, ctx).passed());
  o.max_len = 0;
  CHECK(input_error([&] { checks::run_ragged_batch(o, ctx); }).find("--max-len") != std::string::npos);
}

TEST_CASE("complexity: counts equal the closed forms, E18 flagged; fails with a recomputing cache or a count without the mask") {
  checks::RunContext ctx;
  checks::ComplexityOptions o;
  const Result ok = checks::run_complexity(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.errata().size() == 2);  // prefill at N = d/8 and the cached total at N + T = d (E18)
  CHECK(ok.metric_value("prefill_exponent_small_n") < 1.1);

  checks::ComplexityParts recompute;  // a "cached" generator that recomputes the prefix every step
  recompute.schedule = [](GenerationMode, std::int64_t p, std::int64_t n, std::optional<std::int64_t> b) {
    return generation_schedule(GenerationMode::naive, p, n, b);
  };
  CHECK_FALSE(checks::run_complexity(o, ctx, recompute).passed());

  checks::ComplexityParts no_mask;  // counts every (query, key) pair, as if bidirectional
  no_mask.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    ModelConfig b = c;
    b.causal = false;
    return count_forward(b, n, s);
  };
  CHECK_FALSE(checks::run_complexity(o, ctx, no_mask).passed());

  o.d_model = 16384;
  o.new_tokens = 4096;
  CHECK(input_error([&] { checks::run_complexity(o, ctx); }).find("--d-model") != std::string::npos);
}

TEST_CASE("intensity: 000 §3.1 terms, MLP ∝ B, attention ≈ 1 (E17 on GQA); fails when AV is forgotten or the FFN is 2D") {
  checks::RunContext ctx;
  checks::IntensityOptions o;
  const Result ok = checks::run_intensity(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.errata().size() == 1);  // E17: the GQA row
  CHECK(ok.metric_value("attention_intensity") == doctest::Approx(1.0).epsilon(0.001));

  checks::IntensityParts no_av;
  no_av.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    OpCount k = count_forward(c, n, s);
    k.attn_values = 0;
    return k;
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, no_av).passed());

  checks::IntensityParts narrow_ffn;
  narrow_ffn.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    OpCount k = count_forward(c, n, s);
    k.mlp /= 2;
    return k;
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, narrow_ffn).passed());

  checks::IntensityParts weights_per_row;  // re-reads the weights for every row: no batch reuse
  weights_per_row.linear_bytes = [](std::uint64_t rows, std::uint64_t in, std::uint64_t out, double b) {
    return static_cast<double>(rows) * linear_bytes(1, in, out, b);
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, weights_per_row).passed());

  o.kv_heads = 8;  // GQA: the attention rows differ from 1 on every batch
  const Result gqa = checks::run_intensity(o, ctx);
  CHECK(gqa.passed());
  CHECK(gqa.errata().size() == 4);
  o.kv_heads = 5;
  CHECK(input_error([&] { checks::run_intensity(o, ctx); }).find("--kv-heads") != std::string::npos);
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
