// mla-cache (checks/mla_cache.cpp): the check passing with E20 its one erratum, failing when the
// MLA cache is counted as separate K and V, refusing models of the wrong kind, and its judge on
// measurements made by hand.
#include <doctest/doctest.h>

#include <cstdint>

#include "checks/mla_cache.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"

namespace check_mla_cache_test {

using namespace kvlab;

TEST_CASE("mla-cache passes and fails when the MLA cache is counted as separate K and V") {
  checks::RunContext ctx;
  checks::MlaCacheOptions o;
  const Result r = checks::run_mla_cache(o, ctx);
  CHECK(r.passed());
  // E20: 64× with d_r (56.9). "约 1/3.5" (3.556) and "约 1/28" (28.44) are truncations the
  // precision rule allows for a figure marked approximate: no erratum.
  REQUIRE(r.errata().size() == 1);
  CHECK(r.errata()[0].find("MHA / what MLA caches") != std::string::npos);
  for (const auto& e : r.expectations)
    if (e.quantity.rfind("GQA / MLA elements per token per layer", 0) == 0 ||
        e.quantity.rfind("MHA / MLA elements per token per layer", 0) == 0) {
      CAPTURE(e.quantity);
      CHECK(e.stated.has_value());
      CHECK_FALSE(e.is_erratum());
    }
  checks::MlaCacheParts doubled;  // a cost model that caches the latent twice, like K and V
  doubled.elements_per_layer = [](const ModelSpec& m, std::uint64_t kv_heads) {
    KvQuery q;
    q.ctx = 1;
    if (kv_heads) q.kv_heads = kv_heads;
    const std::uint64_t n = count_elements(kv_cache_tensors(m, q)) / m.n_layer;
    return m.is_mla() ? n + *m.kv_lora_rank : n;
  };
  CHECK_FALSE(checks::run_mla_cache(o, ctx, doubled).passed());
  o.mla_model = "llama-3-70b";
  CHECK_THROWS_WITH_AS(checks::run_mla_cache(o, ctx), doctest::Contains("--mla-model"), InputError);
  o = {};
  o.gqa_model = "no-such-model";
  CHECK_THROWS_WITH_AS(checks::run_mla_cache(o, ctx), doctest::Contains("--gqa-model"), InputError);
}

TEST_CASE("mla-cache: judge fails a cache one element wide, a mini-GPT that skips a token, and a miscounted MHA") {
  checks::MlaCacheOptions o;
  o.tokens = 4;
  o.layers = 1;
  const checks::MlaCacheMeasured good = checks::measure_mla_cache(o, checks::RunContext{});
  const auto rows = checks::judge_mla_cache(good);
  REQUIRE(rows.size() == 9);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::MlaCacheMeasured off = good;
  off.mla_n = 577;  // one element more than d_c + d_r = 576
  const auto wide = checks::judge_mla_cache(off);
  CHECK_FALSE(wide[0].holds());
  CHECK_FALSE(wide[3].holds());  // and every ratio over it
  CHECK_FALSE(wide[7].holds());
  off = good;
  off.mini_written -= 36;  // one token × one layer × (32 + 4) missing from the latent cache
  CHECK_FALSE(checks::judge_mla_cache(off).back().holds());
  off = good;
  off.mha_n = 8192;  // the MHA shape counted with half its heads
  CHECK_FALSE(checks::judge_mla_cache(off)[2].holds());
  CHECK_FALSE(checks::judge_mla_cache(off)[4].holds());
}

}  // namespace check_mla_cache_test
