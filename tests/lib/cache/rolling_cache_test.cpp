// Unit tests of sliding windows and CLA: the rolling cache and window attention; the checks
// sliding-window, cla and incremental-vs-full have theirs in tests/checks/.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "cache/rolling_cache.hpp"
#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"

namespace cache_rolling_cache_test {

using namespace kvlab;

TEST_CASE("RollingCache keeps the last W positions in logical order across wrap-arounds") {
  RollingCache<double> c(1, 2, 3);
  for (int p = 0; p < 8; ++p) {
    Mat<double> k(1, 2), v(1, 2);
    k << p, -p;
    v << 10 * p, 0;
    c.append(0, k, v);
    const int held = std::min(p + 1, 3);
    REQUIRE(c.length(0) == held);
    REQUIRE(c.first_position(0) == p + 1 - held);
    for (int r = 0; r < held; ++r) {  // row r is position first + r
      CHECK(c.keys(0)(r, 0) == c.first_position(0) + r);
      CHECK(c.values(0)(r, 0) == 10 * (c.first_position(0) + r));
    }
  }
  CHECK(c.wraps(0) == 2);  // 8 positions in 3 slots: slot 0 rewritten at positions 3 and 6
  CHECK(c.bytes_allocated() == 1 * 2 * 3 * 2 * sizeof(double));
  Mat<double> four = Mat<double>::Ones(4, 2);  // a chunk longer than the window keeps its last 3
  c.append(0, four, four);
  CHECK(c.length(0) == 3);
  CHECK(c.first_position(0) == 9);
}

TEST_CASE("ModelConfig: sliding_window and cla_share are validated") {
  ModelConfig c;
  c.sliding_window = -1;
  CHECK_THROWS_AS(c.validate(), InputError);
  c.sliding_window = 4;
  c.causal = false;
  CHECK_THROWS_AS(c.validate(), InputError);
  c.causal = true;
  c.cla_share = 0;
  CHECK_THROWS_AS(c.validate(), InputError);
  c.cla_share = c.n_layer + 1;
  CHECK_THROWS_AS(c.validate(), InputError);
  c.cla_share = 2;
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("windowed forward: a rolling cache refuses to stand in for full attention") {
  ModelConfig cfg;  // no window: a cache that has dropped positions is refused
  cfg.positional = Positional::rope;
  const MiniGPT<double> model(cfg, 5);
  RollingCache<double> ring(cfg.n_kv_layer(), cfg.kv_width(), 2);
  const std::vector<int> ids{1, 2, 3};
  CHECK_THROWS_AS(model.forward(ids, 0, ring), std::invalid_argument);
}

TEST_CASE("CLA model: share 1 is the ordinary model, share 2 owns half the K/V weights") {
  ModelConfig c;
  c.n_layer = 4;
  const MiniGPT<double> plain(c, 3);
  c.cla_share = 2;
  const MiniGPT<double> cla(c, 3);
  CHECK(cla.weights().blocks[1].w_k.size() == 0);
  CHECK(cla.weights().blocks[2].w_k.size() == plain.weights().blocks[2].w_k.size());
  CHECK(cla.make_cache(CacheKind::prealloc, 8)->n_layer() == 2);
  auto wrong_shape = plain.make_cache(CacheKind::prealloc, 8);  // 4 cache layers for a 2-layer CLA cache
  const std::vector<int> ids{1, 2};
  CHECK_THROWS_AS(cla.forward(ids, 0, *wrong_shape), std::invalid_argument);
}

}  // namespace cache_rolling_cache_test
