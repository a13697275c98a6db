// paged-cache (checks/paged_cache.cpp): 000 §5.3's example passes on kvlab's pool and fails on a
// broken one; its judge on hand-made measurements.
#include <doctest/doctest.h>

#include <cmath>

#include "checks/paged_cache.hpp"
#include "../test_util.hpp"

namespace check_paged_cache_test {

using namespace kvlab;

TEST_CASE("paged-cache passes, and fails with COW in place or a ref count not decremented") {
  using namespace kvlab::checks;
  CHECK(run_paged_cache({}, {}).passed());
  CHECK(run_paged_cache({.block_size = 1, .num_blocks = 40}, {}).passed());
  PagedCacheParts broken;
  broken.faults.cow_in_place = true;
  CHECK_FALSE(run_paged_cache({}, {}, broken).passed());
  broken = {};
  broken.faults.free_keeps_ref = true;
  CHECK_FALSE(run_paged_cache({}, {}, broken).passed());
  CHECK(test::input_error([] { run_paged_cache({.num_blocks = 34}, {}); }).find("--num-blocks") != std::string::npos);
  CHECK(test::input_error([] { run_paged_cache({.block_size = 256, .num_blocks = 4096}, {}); }).find("--num-blocks") !=
        std::string::npos);
}

TEST_CASE("paged-cache: judge on hand-made measurements: a wrong table entry, a missing copy or one stray bit fails") {
  checks::PagedCacheMeasured m;
  m.table_a = {12, 7, 34, 19};
  m.table_b = {12, 7, 5};
  m.shared_tokens = 32;
  m.cow_on_write = 1;
  m.ref7_after_write = 1;
  m.exhausted_refused = true;
  m.blocks_free_at_end = 64;
  auto rows = checks::judge_paged_cache(m);
  REQUIRE(rows.size() == 10);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[2].stated.has_value());  // the document's "共享前 32 个 token" at block size 16
  m.table_b = {12, 7, 6};
  CHECK_FALSE(checks::judge_paged_cache(m)[1].holds());
  m.table_b = {12, 7, 5, 9};  // one entry too many
  CHECK_FALSE(checks::judge_paged_cache(m)[1].holds());
  m.table_b = {12, 7, 5};
  m.cow_on_write = 0;  // COW in place
  CHECK_FALSE(checks::judge_paged_cache(m)[4].holds());
  m.cow_on_write = 1;
  m.mirror_diff = std::nan("");
  CHECK_FALSE(checks::judge_paged_cache(m)[6].holds());
  m.mirror_diff = 0;
  m.blocks_free_at_end = 63;  // a ref count not decremented
  CHECK_FALSE(checks::judge_paged_cache(m)[9].holds());
}

}  // namespace check_paged_cache_test
