// query-not-cached (checks/query_not_cached.cpp): passes at float64 and float32, fails when a
// query mixes in the earlier queries; its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "attention/gqa.hpp"
#include "checks/query_not_cached.hpp"
#include "core/error.hpp"

namespace check_query_not_cached_test {

using namespace kvlab;

TEST_CASE("query-not-cached passes, and fails when a query mixes in the earlier queries") {
  checks::RunContext ctx;
  checks::QueryNotCachedOptions o;
  CHECK(checks::run_query_not_cached(o, ctx).passed());
  ctx.dtype = Dtype::f32;
  o.kv_heads = 8;
  CHECK(checks::run_query_not_cached(o, ctx).passed());
  checks::QueryNotCachedParts wrong;
  wrong.attention = [](const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int h, int g, int d, int p0) {
    Mat<double> mixed = q;  // each query replaced by the running mean of the queries up to it
    for (Eigen::Index i = 1; i < q.rows(); ++i) mixed.row(i) = (mixed.row(i - 1) * double(i) + q.row(i)) / double(i + 1);
    return grouped_query_attention<double>(mixed, ConstMatView<double>(k.data(), k.rows(), k.cols()),
                                           ConstMatView<double>(v.data(), v.rows(), v.cols()), h, g, d, p0, true);
  };
  const Result r = checks::run_query_not_cached(o, ctx, wrong);
  CHECK_FALSE(r.passed());
  CHECK(r.metric_value("max_abs_diff_earlier_queries") > 0.0);
  o.tokens = 1;
  CHECK_THROWS_AS(checks::run_query_not_cached(o, ctx), InputError);
}

TEST_CASE("query-not-cached: judge fails when one key or value does not matter, or an earlier query does") {
  checks::QueryNotCachedMeasured m{.options = {}, .context = {}};
  m.keys_matter = m.values_matter = m.options.tokens;
  m.threshold = 1e-14;
  m.own_query_diff = 0.5;
  for (const Expectation& e : checks::judge_query_not_cached(m)) CHECK(e.holds());
  auto broken = m;
  broken.keys_matter -= 1;  // one cached key the last output ignores
  CHECK_FALSE(checks::judge_query_not_cached(broken)[2].holds());
  broken = m;
  broken.earlier_queries_diff = 1e-300;  // an earlier query leaked into the last row
  CHECK_FALSE(checks::judge_query_not_cached(broken)[1].holds());
  broken = m;
  broken.own_query_diff = 0;  // the last output ignores its own query
  CHECK_FALSE(checks::judge_query_not_cached(broken)[4].holds());
}

}  // namespace check_query_not_cached_test
