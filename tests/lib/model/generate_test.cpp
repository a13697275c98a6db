// The library pieces the Day 4 generation checks rest on: generation schedules and FLOP counts
// (the checks themselves have their tests in tests/checks/).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "cache/kv_cache.hpp"
#include "cost/traffic.hpp"
#include "model/ragged.hpp"
#include "core/error.hpp"
#include "model/generate.hpp"
#include "test_util.hpp"

namespace model_generate_test {

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

}  // namespace model_generate_test
