// cache-shape (checks/cache_shape.cpp): passes with kv_cache_size; fails with a formula that drops
// K+V's factor 2, counts query heads, or doubles MLA's latent; and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "checks/cache_shape.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"

namespace check_cache_shape_test {

using namespace kvlab;

TEST_CASE("cache-shape passes, and fails with a formula that drops K+V's 2, counts query heads, or doubles MLA") {
  checks::RunContext ctx;
  checks::CacheShapeOptions o;
  const Result ok = checks::run_cache_shape(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("mha_bytes") == 2.0 * 2 * 16 * 8 * 2 * 24 * 4);
  CHECK(ok.metric_value("mla_bytes") == 2.0 * (32 + 4) * 2 * 24 * 4);
  checks::CacheShapeParts no_two;
  no_two.formula = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    if (!m.is_mla()) s.total_bytes /= 2;
    return s;
  };
  CHECK_FALSE(checks::run_cache_shape(o, ctx, no_two).passed());
  checks::CacheShapeParts query_heads;
  query_heads.formula = [](ModelSpec m, const KvQuery& q) {
    m.n_kv_head = m.n_head;
    return kv_cache_size(m, q);
  };
  CHECK_FALSE(checks::run_cache_shape(o, ctx, query_heads).passed());
  checks::CacheShapeParts mla_doubled;
  mla_doubled.formula = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    if (m.is_mla()) s.total_bytes *= 2;
    return s;
  };
  CHECK_FALSE(checks::run_cache_shape(o, ctx, mla_doubled).passed());
  o.head_dim = 7;  // odd: d_r = 4
  CHECK(checks::run_cache_shape(o, ctx).passed());
  o.groups = 3;
  CHECK_THROWS_WITH_AS(checks::run_cache_shape(o, ctx), doctest::Contains("--groups"), InputError);
}

TEST_CASE("cache-shape: judge fails a byte count, a tensor or a width off by one, and a wrong ratio") {
  const checks::CacheShapeMeasured good = checks::measure_cache_shape({}, checks::RunContext{});
  const auto rows = checks::judge_cache_shape(good);
  REQUIRE(rows.size() == 14);  // 3 per variant × 4, then MHA/GQA and MHA/MQA
  for (const Expectation& e : rows) CHECK(e.holds());

  checks::CacheShapeMeasured off = good;
  off.variants[1].bytes += 4;  // GQA holds one float more than the formula
  auto judged = checks::judge_cache_shape(off);
  CHECK_FALSE(judged[3].holds());
  CHECK_FALSE(judged[12].holds());  // and MHA / GQA is no longer H/G
  off = good;
  off.variants[3].worst_tensor_diff = 1;
  CHECK_FALSE(checks::judge_cache_shape(off)[10].holds());
  off = good;
  off.variants[2].width = 16;  // MQA caching two heads' worth per token
  CHECK_FALSE(checks::judge_cache_shape(off)[8].holds());

  // Hand-made: H = 4, G = 2 heads of width 2, 1 layer, 1 sequence of 1 token: MHA 2·4·2·4 = 64 B.
  checks::CacheShapeMeasured hand;
  hand.options = {.heads = 4, .head_dim = 2, .groups = 2, .layers = 1, .batch = 1, .ctx = 1};
  hand.variants = {{.n_kv = 4, .bytes = 64, .width = 8, .formula_bytes = 64},
                   {.n_kv = 2, .bytes = 32, .width = 4, .formula_bytes = 32},
                   {.n_kv = 1, .bytes = 16, .width = 2, .formula_bytes = 16},
                   {.n_kv = 0, .bytes = 40, .width = 8, .second_width = 2, .formula_bytes = 40}};
  for (const Expectation& e : checks::judge_cache_shape(hand)) CHECK(e.holds());
  hand.variants[2].bytes = 32;  // MQA as large as GQA: MHA / MQA = 2, not H = 4
  CHECK_FALSE(checks::judge_cache_shape(hand).back().holds());
}

}  // namespace check_cache_shape_test
