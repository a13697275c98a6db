// Unit tests of sliding windows and CLA: the rolling cache and window attention, and the check cla
// shown to fail on deliberately broken parts.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "cache/rolling_cache.hpp"
#include "attention/gqa.hpp"
#include "checks/cla.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"

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

namespace {

// A CLA cache that reads the wrong layer: keys(l) and values(l) return layer (l + 1) mod n.
class WrongLayerCache final : public KVCache<double> {
 public:
  WrongLayerCache(int n_layer, int width, int max_len)
      : KVCache<double>(n_layer, width), inner_(n_layer, width, max_len) {}
  void append(int l, const Mat<double>& k, const Mat<double>& v) override {
    inner_.append(l, k, v);
    stats_ = inner_.stats();
  }
  ConstMatView<double> keys(int l) const override { return inner_.keys(source(l)); }
  ConstMatView<double> values(int l) const override { return inner_.values(source(l)); }
  int length(int l) const override { return inner_.length(l); }
  void truncate(int len) override { inner_.truncate(len); }

 private:
  // The neighbouring layer, whenever it already holds as many positions (else the right one, so
  // that shapes still agree): cache layer 1 is read from layer 0's K/V.
  int source(int l) const {
    const int m = (l + 1) % n_layer_;
    return inner_.length(m) == inner_.length(l) ? m : l;
  }
  PreallocCache<double> inner_;
};

// A CLA cache that stores per model layer anyway: every append is written twice (one copy for
// each layer of the pair), though reads are right.
class PerLayerAnywayCache final : public KVCache<double> {
 public:
  PerLayerAnywayCache(int n_layer, int width, int max_len)
      : KVCache<double>(n_layer, width), inner_(2 * n_layer, width, max_len) {}
  void append(int l, const Mat<double>& k, const Mat<double>& v) override {
    inner_.append(2 * l, k, v);
    inner_.append(2 * l + 1, k, v);
    stats_ = inner_.stats();
  }
  ConstMatView<double> keys(int l) const override { return inner_.keys(2 * l); }
  ConstMatView<double> values(int l) const override { return inner_.values(2 * l); }
  int length(int l) const override { return inner_.length(2 * l); }
  void truncate(int len) override { inner_.truncate(len); }

 private:
  PreallocCache<double> inner_;
};

}  // namespace

TEST_CASE("cla passes with a shared cache and fails on a wrong-layer read or a per-layer cache") {
  checks::RunContext ctx;
  checks::ClaOptions o;
  const Result good = checks::run_cla(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("cache_bytes_cla") * 2 == good.metric_value("cache_bytes_baseline"));
  CHECK(good.metric_value("kv_params_cla") * 2 == good.metric_value("kv_params_baseline"));
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_cla(o, ctx).passed());
  ctx.dtype = Dtype::f64;

  checks::ClaParts wrong;
  wrong.cache_f64 = [](int n, int w, int len) { return std::make_unique<WrongLayerCache>(n, w, len); };
  const Result bad = checks::run_cla(o, ctx, wrong);
  CHECK_FALSE(bad.passed());
  CHECK(bad.metric_value("max_abs_diff") > bad.metric_value("rounding_bound"));

  checks::ClaParts per_layer;
  per_layer.cache_f64 = [](int n, int w, int len) { return std::make_unique<PerLayerAnywayCache>(n, w, len); };
  const Result dup = checks::run_cla(o, ctx, per_layer);
  CHECK_FALSE(dup.passed());
  CHECK(dup.metric_value("max_abs_diff") <= dup.metric_value("rounding_bound"));  // logits right, memory not
  CHECK(dup.metric_value("cache_positions_cla") == 2 * 2 * 20);

  o.share = 5;
  CHECK_THROWS_WITH_AS(checks::run_cla(o, ctx), doctest::Contains("--share"), InputError);
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
