// incremental-vs-full (checks/incremental_vs_full.cpp): passes with both caches, in float32, on
// RoPE and MLA; fails with a cache that loses a position or rotates decode keys at the wrong
// position; shows a nonzero reordered-sum difference beside its exact 0; and its judge on
// measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/gqa.hpp"
#include "cache/kv_cache.hpp"
#include "checks/incremental_vs_full.hpp"
#include "core/error.hpp"

namespace check_incremental_vs_full_test {

using namespace kvlab;

namespace {

// A cache that, once it holds more than `keep` positions, overwrites position 0 with position 1:
// the oldest token's K/V is lost, a plausible bug (a window applied where none belongs) that the
// model checks must catch.
class ForgetfulCache final : public KVCache<double> {
 public:
  ForgetfulCache(int n_layer, int width, int keep)
      : KVCache<double>(n_layer, width), k_(n_layer, Mat<double>(0, width)), v_(n_layer, Mat<double>(0, width)),
        keep_(keep) {}
  void append(int layer, const Mat<double>& k, const Mat<double>& v) override {
    for (auto* pair : {&k_, &v_}) {
      Mat<double>& m = (*pair)[layer];
      const Mat<double>& add = pair == &k_ ? k : v;
      m.conservativeResize(m.rows() + add.rows(), Eigen::NoChange);
      m.bottomRows(add.rows()) = add;
      if (m.rows() > keep_) m.row(0) = m.row(1);
    }
  }
  ConstMatView<double> keys(int l) const override { return {k_[l].data(), k_[l].rows(), k_[l].cols()}; }
  ConstMatView<double> values(int l) const override { return {v_[l].data(), v_[l].rows(), v_[l].cols()}; }
  int length(int l) const override { return static_cast<int>(k_[l].rows()); }
  void truncate(int) override {}

 private:
  std::vector<Mat<double>> k_, v_;
  int keep_;
};

// Keys decoded one at a time are rotated once more by one position: RoPE at p + 1 on decode, at p
// on prefill (a decode path that counts positions from the cache length plus one).
class RopeOffByOneOnDecode final : public KVCache<double> {
 public:
  RopeOffByOneOnDecode(int n_layer, int width, int max_len)
      : KVCache<double>(n_layer, width), inner_(n_layer, width, max_len) {}
  void append(int l, const Mat<double>& k, const Mat<double>& v) override {
    Mat<double> k2 = k;
    if (k.rows() == 1) apply_rope(k2, width_ / 8, 8, 1, 10000.0);  // R(p)·R(1) = R(p + 1)
    inner_.append(l, k2, v);
  }
  ConstMatView<double> keys(int l) const override { return inner_.keys(l); }
  ConstMatView<double> values(int l) const override { return inner_.values(l); }
  int length(int l) const override { return inner_.length(l); }
  void truncate(int len) override { inner_.truncate(len); }

 private:
  PreallocCache<double> inner_;
};

}  // namespace

TEST_CASE("incremental-vs-full passes with both caches and fails with a cache that loses a position") {
  checks::RunContext ctx;
  checks::IncrementalOptions o;
  CHECK(checks::run_incremental_vs_full(o, ctx).passed());
  o.cache = "concat";
  CHECK(checks::run_incremental_vs_full(o, ctx).passed());
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_incremental_vs_full(o, ctx).passed());

  ctx.dtype = Dtype::f64;
  checks::IncrementalParts broken;
  broken.cache_f64 = [](int n_layer, int width, int max_len) {
    (void)max_len;
    return std::make_unique<ForgetfulCache>(n_layer, width, 10);
  };
  CHECK_FALSE(checks::run_incremental_vs_full(o, ctx, broken).passed());

  o.chunk = 0;
  CHECK_THROWS_AS(checks::run_incremental_vs_full(o, ctx), InputError);
  o.chunk.reset();
  o.prefill = 2;  // the default chunk follows a short prompt: min(3, 2) = 2
  CHECK(checks::run_incremental_vs_full(o, ctx).passed());
}

TEST_CASE("incremental-vs-full shows a nonzero rounding difference from another summation order beside its exact 0") {
  // kvlab's 0 is not a buffer compared with itself: the same full forward summed in another order
  // (Eigen's blocked products) differs by float64 rounding, well inside the row's bound.
  const Result r = checks::run_incremental_vs_full({}, checks::RunContext{});
  for (const char* v : {"mha", "gqa", "mqa", "chunked"}) {
    CAPTURE(v);
    CHECK(r.metric_value(std::string("max_abs_diff_") + v) == 0.0);
    const double other = r.metric_value(std::string("max_abs_diff_reordered_") + v);
    CHECK(other > 0.0);
    CHECK(other < 1e-12);
  }
  bool said = false;
  for (const auto& e : r.expectations)
    if (e.quantity.find("max |Δlogits| mha") == 0) said = e.why.find("another order differs by") != std::string::npos;
  CHECK(said);
  bool why_zero = false;
  for (const auto& n : r.notes) why_zero = why_zero || n.find("Why exactly 0") != std::string::npos;
  CHECK(why_zero);
}

TEST_CASE("incremental-vs-full covers RoPE and MLA, and fails with RoPE at the wrong position on decode") {
  checks::RunContext ctx;
  checks::IncrementalOptions o;
  const Result good = checks::run_incremental_vs_full(o, ctx);
  CHECK(good.passed());
  for (const char* key : {"max_abs_diff_mha", "max_abs_diff_gqa", "max_abs_diff_mqa", "max_abs_diff_chunked",
                          "max_abs_diff_rope", "max_abs_diff_mla_naive", "max_abs_diff_mla_absorbed"})
    CHECK(good.metric_value(key) <= 1e-12);  // every key of the contract, plus the new rows
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_incremental_vs_full(o, ctx).passed());
  ctx.dtype = Dtype::f64;

  checks::IncrementalParts off;
  off.cache_f64 = [](int n, int w, int len) { return std::make_unique<RopeOffByOneOnDecode>(n, w, len); };
  const Result bad = checks::run_incremental_vs_full(o, ctx, off);
  CHECK_FALSE(bad.passed());
  CHECK(bad.metric_value("max_abs_diff_rope") > 1e-6);
  CHECK(bad.metric_value("max_abs_diff_mla_absorbed") == 0);  // its own latent cache, untouched
}

TEST_CASE("incremental-vs-full: judge fails a row whose difference exceeds its rounding bound, and on NaN") {
  const checks::IncrementalMeasured good = checks::measure_incremental_vs_full({}, checks::RunContext{});
  const auto rows = checks::judge_incremental_vs_full(good);
  REQUIRE(rows.size() == 7);  // mha, gqa, mqa, chunked, rope, mla_naive, mla_absorbed
  for (const Expectation& e : rows) CHECK(e.holds());
  CHECK(rows[3].quantity == "max |Δlogits| chunked (prefill in chunks of 3)");

  checks::IncrementalMeasured off = good;  // a 1e-6 difference: a cache bug, not float64 rounding
  off.rows[1].diff = 1e-6;
  CHECK_FALSE(checks::judge_incremental_vs_full(off)[1].holds());
  CHECK(checks::judge_incremental_vs_full(off)[0].holds());
  off = good;
  off.rows[6].diff = std::nan("");
  CHECK_FALSE(checks::judge_incremental_vs_full(off)[6].holds());

  // Hand-made: n = 1000 terms, |logit| <= 0.5 (scale 1), float64: bound 2·1000·2^-53.
  checks::IncrementalMeasured hand;
  hand.options.chunk = 3;
  hand.rows.push_back({.variant = checks::IncrementalVariant::gqa, .heads = 2, .diff = 2.2e-13, .max_logit = 0.5,
                       .terms = 1000});
  CHECK(checks::judge_incremental_vs_full(hand)[0].tolerance == 2.0 * 1000 * std::ldexp(1.0, -53));
  CHECK(checks::judge_incremental_vs_full(hand)[0].holds());
  hand.rows[0].diff = 2.3e-13;
  CHECK_FALSE(checks::judge_incremental_vs_full(hand)[0].holds());
}

}  // namespace check_incremental_vs_full_test
