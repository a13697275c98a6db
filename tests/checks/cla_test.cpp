// cla (checks/cla.cpp): the check passing with a shared cache at both dtypes, failing on a
// wrong-layer read or a per-layer cache, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <memory>

#include "cache/kv_cache.hpp"
#include "checks/cla.hpp"
#include "core/error.hpp"

namespace check_cla_test {

using namespace kvlab;

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

TEST_CASE("cla: judge fails a cache that stores one position too many, a doubled K/V weight, and a drifting decode") {
  checks::ClaOptions o;
  o.prefill = 3;
  o.decode = 2;
  const checks::ClaMeasured good = checks::measure_cla(o, checks::RunContext{});
  const auto rows = checks::judge_cla(good);
  REQUIRE(rows.size() == 5);
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[1].headline);
  checks::ClaMeasured off = good;
  off.stored += 1;
  CHECK_FALSE(checks::judge_cla(off)[0].holds());
  off = good;
  off.bytes = off.base_bytes;  // a "shared" cache as large as the per-layer one
  CHECK_FALSE(checks::judge_cla(off)[1].holds());
  off = good;
  off.params = off.base_params;
  CHECK_FALSE(checks::judge_cla(off)[2].holds());
  CHECK_FALSE(checks::judge_cla(off)[3].holds());
  off = good;
  off.max_abs_diff = 1e-6;  // far above float64 rounding of these logits
  CHECK_FALSE(checks::judge_cla(off)[4].holds());
}

}  // namespace check_cla_test
