// attn-params (checks/attn_params.cpp): passes on the mini-GPT; fails when the model ignores
// n_kv_head or one layer keeps MHA's width; and its judge on counts made by hand.
#include <doctest/doctest.h>

#include "checks/attn_params.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"

namespace check_attn_params_test {

using namespace kvlab;

TEST_CASE("attn-params passes, and fails when the model ignores n_kv_head (every variant MHA)") {
  checks::RunContext ctx;
  checks::AttnParamsOptions o;
  const Result ok = checks::run_attn_params(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("mha_kv_params_per_layer") == 2.0 * 128 * 128);  // 2D², D = 16 · 8
  CHECK(ok.metric_value("mqa_kv_params_per_layer") == 2.0 * 128 * 8);
  CHECK(ok.metric_value("gqa_kv_params_per_layer") == 2.0 * 2 * 128 * 8);
  checks::AttnParamsParts all_mha;
  all_mha.build = [](ModelConfig c, std::uint64_t seed) {
    c.n_kv_head = c.n_head;
    return MiniGPT<double>(c, seed);
  };
  CHECK_FALSE(checks::run_attn_params(o, ctx, all_mha).passed());
  checks::AttnParamsParts one_layer_mqa;  // the second layer keeps MHA's width: only the per-layer scan sees it
  one_layer_mqa.build = [](const ModelConfig& c, std::uint64_t seed) {
    MiniGPT<double> m(c, seed);
    if (c.n_kv_head == 1) {
      ModelConfig mha = c;
      mha.n_kv_head = c.n_head;
      const MiniGPT<double> wide(mha, seed);
      m.weights().blocks[1].w_k = wide.weights().blocks[1].w_k;
    }
    return m;
  };
  CHECK_FALSE(checks::run_attn_params(o, ctx, one_layer_mqa).passed());
  o.groups = 3;
  CHECK_THROWS_WITH_AS(checks::run_attn_params(o, ctx), doctest::Contains("--groups"), InputError);
}

TEST_CASE("attn-params: judge fails a count off by one parameter, in any layer, and a wrong ratio") {
  // Hand-made: H = 4, d_head = 2, G = 2 (D = 8), 2 layers: MHA 2D² = 128, MQA 2·D·d_head = 32, GQA 64.
  checks::AttnParamsMeasured m;
  m.options = {.heads = 4, .head_dim = 2, .groups = 2, .layers = 2};
  m.variants = {{.n_kv = 4, .per_layer = {128, 128}}, {.n_kv = 1, .per_layer = {32, 32}},
                {.n_kv = 2, .per_layer = {64, 64}}};
  const auto rows = checks::judge_attn_params(m);
  REQUIRE(rows.size() == 8);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[0].expected == 128);
  CHECK(rows[6].expected == 4);  // MHA / MQA = H
  CHECK(rows[7].expected == 2);  // MHA / GQA = H/G

  checks::AttnParamsMeasured off = m;
  off.variants[1].per_layer[1] = 33;  // MQA's second layer one parameter wider: only the scan sees it
  auto judged = checks::judge_attn_params(off);
  CHECK(judged[2].holds());
  CHECK_FALSE(judged[3].holds());
  off = m;
  off.variants[2].per_layer = {128, 128};  // "GQA" built as MHA
  judged = checks::judge_attn_params(off);
  CHECK_FALSE(judged[4].holds());
  CHECK_FALSE(judged[7].holds());
}

}  // namespace check_attn_params_test
