// Unit tests of the paged KV cache (lib/cache/paged.hpp, prefix.hpp); the checks built on it
// (paged-cache, paged-vs-contiguous, prefix-cache, parallel-sampling) have theirs in tests/checks/,
// each passing with the correct pool and failing with a broken one (PagedFaults). Also two regressions:
// a batch mixing a prefix-cache hit and a miss, and a running request whose computed
// prefix the cache already holds.
#include <doctest/doctest.h>

#include <algorithm>

#include "cache/paged.hpp"
#include "cache/prefix.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "test_util.hpp"

namespace cache_paged_test {

using namespace kvlab;

namespace {

Mat<double> rows(Rng& rng, int n, int width) {
  Mat<double> m(n, width);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The mini-GPT the prefix tests serve, and a helper that runs one request through a pool.
ModelConfig small_config() {
  ModelConfig c;
  c.n_kv_head = 2;
  c.block_size = 64;
  return c;
}

// Logits of tokens [start, size) of `ids` for sequence `seq` of `pool` (prefill from start).
Mat<double> prefill(const MiniGPT<double>& model, PagedKVPool<double>& pool, int seq, const std::vector<int>& ids, int start) {
  auto view = pool.view(seq);
  return model.forward(std::span<const int>(ids).subspan(static_cast<std::size_t>(start)), start, *view);
}

Mat<double> reference_logits(const MiniGPT<double>& model, const std::vector<int>& ids) {
  PreallocCache<double> cache(model.config().n_layer, model.config().kv_width(), static_cast<int>(ids.size()));
  return model.forward(ids, 0, cache);
}

std::vector<int> tokens(std::uint64_t seed, int n) {
  Rng rng(seed);
  std::vector<int> t(static_cast<std::size_t>(n));
  for (int& x : t) x = static_cast<int>(rng.uniform() * 96);
  return t;
}

}  // namespace

TEST_CASE("BlockManager: allocate, fork, copy-on-write, free; the audit stays clean") {
  PagedKVPool<double> pool(8, 4, 2, 3);
  BlockManager& m = pool.manager();
  Rng rng(1);
  const int a = m.add_sequence();
  for (int l = 0; l < 2; ++l) pool.append(a, l, rows(rng, 6, 3), rows(rng, 6, 3));  // 6 positions: 2 blocks
  CHECK(m.block_table(a) == std::vector<int>{0, 1});
  const int b = m.fork(a);
  CHECK(m.ref_count(0) == 2);
  CHECK(m.ref_count(1) == 2);
  Mat<double> before;
  pool.gather(a, 0, false, before);
  // B writes position 6, inside shared block 1: a copy, and A keeps its data.
  for (int l = 0; l < 2; ++l) pool.append(b, l, rows(rng, 1, 3), rows(rng, 1, 3));
  CHECK(m.stats().cow_copies == 1);
  CHECK(m.ref_count(1) == 1);
  CHECK(m.block_table(b)[1] != 1);
  Mat<double> after, b_keys;
  pool.gather(a, 0, false, after);
  CHECK((after - before).cwiseAbs().maxCoeff() == 0.0);
  pool.gather(b, 0, false, b_keys);
  CHECK((b_keys.topRows(6) - before).cwiseAbs().maxCoeff() == 0.0);  // the copy carried A's rows
  CHECK(m.audit().ok());
  m.free(a);
  m.free(b);
  const PoolAudit end = m.audit();
  CHECK(end.ok());
  CHECK(end.blocks_free == 8);
}

TEST_CASE("BlockManager: an exhausted pool throws PoolExhausted and changes nothing") {
  PagedKVPool<double> pool(2, 4, 1, 2);
  BlockManager& m = pool.manager();
  Rng rng(2);
  const int a = m.add_sequence();
  pool.append(a, 0, rows(rng, 7, 2), rows(rng, 7, 2));
  const auto table = m.block_table(a);
  CHECK_THROWS_AS(pool.append(a, 0, rows(rng, 2, 2), rows(rng, 2, 2)), PoolExhausted);  // needs a 3rd block
  CHECK(m.num_tokens(a) == 7);
  CHECK(m.block_table(a) == table);
  pool.append(a, 0, rows(rng, 1, 2), rows(rng, 1, 2));  // the last free slot is still usable
  CHECK(m.audit().ok());
  // A fork sharing a full pool cannot copy on write: refused too, both tables intact.
  const int b = m.fork(a, 6);
  CHECK_THROWS_AS(m.append_tokens(b, 1), PoolExhausted);
  CHECK(m.ref_count(table[1]) == 2);
  CHECK(m.audit().ok());
}

TEST_CASE("BlockManager: the audit catches a ref count that is not decremented") {
  PagedFaults faults;
  faults.free_keeps_ref = true;
  BlockManager m(4, 2, 1, {}, faults);
  const int a = m.add_sequence();
  m.append_tokens(a, 3);
  const int b = m.fork(a);
  m.free(b);
  const PoolAudit audit = m.audit();
  CHECK_FALSE(audit.ok());
  CHECK(audit.problems.front().find("ref count") != std::string::npos);
}

TEST_CASE("BlockManager: copy-on-write in place is caught by the audit") {
  PagedFaults faults;
  faults.cow_in_place = true;
  BlockManager m(4, 2, 1, {}, faults);
  const int a = m.add_sequence();
  m.append_tokens(a, 3);
  const int b = m.fork(a);
  m.append_tokens(b, 1);  // writes into shared block 1
  CHECK(m.stats().cow_copies == 0);
  CHECK_FALSE(m.audit().ok());
}

TEST_CASE("prefix hash: chained with the parent, stable, and the token-list reference") {
  const std::vector<int> x = {1, 2, 3, 4};
  CHECK(prefix_block_hash(kPrefixRootHash, x) == prefix_block_hash(kPrefixRootHash, x));
  CHECK(prefix_block_hash(1, x) != prefix_block_hash(2, x));
  CHECK(prefix_block_hash(1, x, false) == prefix_block_hash(2, x, false));
  // Earlier sequences count only up to their full blocks; the last prompt token is always computed.
  CHECK(reference_prefix_reuse(std::vector<int>{1, 2, 3, 4, 5}, {{1, 2, 3, 4, 5, 6}}, 2) == 4);
  CHECK(reference_prefix_reuse(std::vector<int>{1, 2, 3}, {{1, 2, 3, 4}}, 2) == 2);
  CHECK(reference_prefix_reuse(std::vector<int>{1, 9}, {{1, 2, 3, 4}}, 4) == 1);
  CHECK(reference_prefix_reuse(std::vector<int>{7, 2}, {{1, 2, 3, 4}}, 2) == 0);
}

TEST_CASE("prefix cache: LRU eviction of unreferenced cached blocks, only when the free list is empty") {
  BlockManager m(4, 2, 1);
  const std::vector<int> p = {1, 2, 3, 4};
  const int a = m.add_sequence();
  m.append_tokens(a, 4);
  m.cache_full_blocks(a, p);
  m.free(a);  // blocks 0, 1 now unreferenced but cached: evictable
  CHECK(m.blocks_available() == 4);
  CHECK(m.audit().ok());
  const int b = m.add_sequence();
  m.append_tokens(b, 4);  // takes the two plain free blocks first
  CHECK(m.stats().evictions == 0);
  CHECK(m.match_prefix(std::vector<int>{1, 2, 3, 4, 5}).tokens == 4);
  m.append_tokens(b, 1);  // the free list is empty: evicts block 0, freed longest ago
  CHECK(m.stats().evictions == 1);
  CHECK(m.block_table(b).back() == 0);
  CHECK(m.match_prefix(std::vector<int>{1, 2, 3, 4, 5}).tokens == 0);  // its chain starts at block 0
  CHECK(m.audit().ok());
  m.free(b);
  const PoolAudit end = m.audit();
  CHECK(end.ok());
  CHECK(end.blocks_free + end.blocks_evictable == 4);
}

TEST_CASE("prefix cache: a batch mixing a prefix-cache hit and a miss; the miss gets fresh blocks, outputs as caching off") {
  const MiniGPT<double> model(small_config(), 7);
  const std::vector<int> sys = tokens(11, 20);
  std::vector<int> first = sys, hit = sys, miss = tokens(12, 28);
  for (int t : tokens(13, 8)) first.push_back(t);
  for (int t : tokens(14, 8)) hit.push_back(t);
  miss[0] = (sys[0] + 1) % 96;
  if (hit[20] == first[20]) hit[20] = (hit[20] + 1) % 96;  // the hit diverges right after the system prompt

  PagedKVPool<double> pool(16, 8, model.config().n_layer, model.config().kv_width());
  BlockManager& m = pool.manager();
  const int f = m.attach(m.match_prefix(first));
  prefill(model, pool, f, first, 0);
  m.cache_full_blocks(f, first);
  CHECK(contains(m.block_table(f), 0));  // block 0 belongs to the first request

  // One batch: both look up before either prefills.
  const PrefixMatch mh = m.match_prefix(hit), mm = m.match_prefix(miss);
  CHECK(mh.tokens == 20);  // 2 full blocks + 4 tokens of the third (it diverges mid-block)
  CHECK(mm.tokens == 0);
  const int h = m.attach(mh), s = m.attach(mm);
  const Mat<double> out_h = prefill(model, pool, h, hit, mh.tokens);
  const Mat<double> out_m = prefill(model, pool, s, miss, 0);
  m.cache_full_blocks(h, hit);
  m.cache_full_blocks(s, miss);

  const auto& tm = m.block_table(s);
  CHECK(tm.size() == 4);
  CHECK_FALSE(contains(tm, 0));
  for (int b : tm) {
    CHECK(m.ref_count(b) == 1);
    CHECK_FALSE(contains(m.block_table(f), b));
    CHECK_FALSE(contains(m.block_table(h), b));
  }
  CHECK(m.stats().cow_copies == 1);  // the hit wrote into the block shared mid-way
  CHECK(m.audit().ok());
  const Mat<double> ref_h = reference_logits(model, hit), ref_m = reference_logits(model, miss);
  CHECK((out_h - ref_h.bottomRows(out_h.rows())).cwiseAbs().maxCoeff() == 0.0);
  CHECK((out_m - ref_m).cwiseAbs().maxCoeff() == 0.0);
  for (int q : {f, h, s}) m.free(q);
  CHECK(m.audit().ok());
}

TEST_CASE("prefix cache: a running request that computed a prefix the cache holds is pointed at the cached blocks") {
  const MiniGPT<double> model(small_config(), 8);
  std::vector<int> ids = tokens(21, 20);
  for (bool skip_ref : {false, true}) {
    PagedFaults faults;
    faults.dedupe_skips_ref = skip_ref;
    PagedKVPool<double> pool(12, 8, model.config().n_layer, model.config().kv_width(), {}, faults);
    BlockManager& m = pool.manager();
    // Both scheduled in one batch: both miss, both compute the same prompt.
    const int a = m.attach(m.match_prefix(ids)), b = m.attach(m.match_prefix(ids));
    prefill(model, pool, a, ids, 0);
    prefill(model, pool, b, ids, 0);
    m.cache_full_blocks(a, ids);
    const std::vector<int> dup = m.block_table(b);
    m.cache_full_blocks(b, ids);  // b's 2 full blocks duplicate a's
    const auto& ta = m.block_table(a);
    const auto& tb = m.block_table(b);
    CHECK(tb[0] == ta[0]);
    CHECK(tb[1] == ta[1]);
    CHECK(tb[2] == dup[2]);  // the partial block stays its own
    CHECK(m.stats().dedupes == 2);
    const std::vector<int> free_list = m.free_list();
    CHECK(contains(free_list, dup[0]));
    CHECK(contains(free_list, dup[1]));
    if (!skip_ref) {
      CHECK(m.ref_count(ta[0]) == 2);
      CHECK(m.audit().ok());
      // b keeps decoding on the shared blocks, with the logits of an unshared run.
      std::vector<int> longer = ids;
      longer.push_back(5);
      auto view = pool.view(b);
      const Mat<double> next = model.forward(std::span<const int>(longer).subspan(20), 20, *view);
      CHECK((next - reference_logits(model, longer).bottomRows(1)).cwiseAbs().maxCoeff() == 0.0);
    } else {
      CHECK_FALSE(m.audit().ok());  // a table entry without its reference
    }
  }
}

}  // namespace cache_paged_test
