// prefix-cache (checks/prefix_cache.cpp): passes with kvlab's pool and prefix index, fails with an
// unchained block hash or copy-on-write in place; its judge on hand-made servings.
#include <doctest/doctest.h>

#include <cmath>

#include "checks/prefix_cache.hpp"
#include "../test_util.hpp"

namespace check_prefix_cache_test {

using namespace kvlab;

TEST_CASE("prefix-cache passes, and fails with an unchained block hash or COW in place") {
  using namespace kvlab::checks;
  const Result ok = run_prefix_cache({}, {});
  CHECK(ok.passed());
  CHECK(ok.metric_value("prefill_tokens_reused") == 7 * 40 + 16);
  CHECK(run_prefix_cache({.system_tokens = 32, .block_size = 16}, {}).passed());  // reuse ends on a boundary
  CHECK(run_prefix_cache({.block_size = 1}, {.dtype = Dtype::f32}).passed());
  // One-token suffixes: identical prompts; the repeat computes its last token into a copy of the
  // cached block, which is then deduplicated. The block count must still come out exact.
  const Result twins = run_prefix_cache({.requests = 16, .system_tokens = 15, .user_tokens = 1, .decode = 0, .block_size = 8},
                                        {.seed = 1});
  CHECK(twins.passed());
  CHECK(twins.metric_value("blocks_deduplicated") >= 1);
  PrefixCacheParts broken;
  broken.faults.unchained_hash = true;
  CHECK_FALSE(run_prefix_cache({}, {}, broken).passed());
  broken = {};
  broken.faults.cow_in_place = true;
  CHECK_FALSE(run_prefix_cache({}, {}, broken).passed());
  CHECK(test::input_error([] { run_prefix_cache({.requests = 0}, {}); }).find("--requests") != std::string::npos);
}

TEST_CASE("prefix-cache: judge on hand-made servings: reuse, copies, blocks and the miss are exact") {
  checks::PrefixCacheMeasured m;  // 3 requests: two hits of 16 tokens (one mid-block), a miss
  m.config.n_layer = 2, m.config.d_model = 64, m.config.n_head = 8, m.config.n_kv_head = 2, m.config.head_dim = 8;
  m.names = {"a", "b", "miss"};
  m.miss = 2;
  m.prompt = 48;
  m.num_blocks = 9;
  m.want_saved = 20, m.want_hits = 1, m.want_cow = 1, m.want_blocks_on = 7, m.want_blocks_off = 9;
  m.on.stats.prefix_hit_tokens = 20;
  m.on.reused = {0, 20, 0};
  m.on.shared_blocks = {2, 2, 0};
  m.on.stats.cow_copies = 1;
  m.on.blocks_in_use = 7;
  m.off.blocks_in_use = 9;
  m.on.blocks_free_at_end = 9;
  auto rows = checks::judge_prefix_cache(m);
  REQUIRE(rows.size() == 9);
  for (const Expectation& e : rows) CHECK(e.holds());
  m.on.stats.prefix_hit_tokens = 21;  // one token reused too many
  CHECK_FALSE(checks::judge_prefix_cache(m)[0].holds());
  m.on.stats.prefix_hit_tokens = 20;
  m.on.shared_blocks[2] = 1;  // the miss attached a block: an unchained hash
  CHECK_FALSE(checks::judge_prefix_cache(m)[5].holds());
  m.on.shared_blocks[2] = 0;
  m.max_abs_diff = std::nan("");
  CHECK_FALSE(checks::judge_prefix_cache(m)[6].holds());
}

}  // namespace check_prefix_cache_test
