// int8-outliers (checks/int8_outliers.cpp): the check passing, failing when the decomposition
// forgets the outlier columns, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <algorithm>

#include "checks/int8_outliers.hpp"
#include "core/error.hpp"
#include "quant/int8_matmul.hpp"
#include "../test_util.hpp"

namespace check_int8_outliers_test {

using namespace kvlab;

TEST_CASE("int8-outliers passes, and fails when the decomposition forgets the outlier columns") {
  checks::RunContext ctx;
  checks::Int8OutliersOptions o;
  const Result good = checks::run_int8_outliers(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("rms_error_llm_int8") < good.metric_value("rms_error_int8_outliers") / 5);

  checks::Int8OutliersParts forgets;  // finds the outlier columns, then leaves their product out
  forgets.decomposition = [](const Mat<double>& x, const Mat<double>& w, double t) {
    Int8Decomposition d = llm_int8_matmul(x, w, t);
    Mat<double> x_reg = x;
    for (int k : d.outlier_columns) x_reg.col(k).setZero();
    d.c = int8_vectorwise_matmul(x_reg, w);
    return d;
  };
  CHECK_FALSE(checks::run_int8_outliers(o, ctx, forgets).passed());

  o.outlier_magnitude = 10;  // below 2 × threshold: planted dims would not all reach it
  CHECK(test::input_error([&] { checks::run_int8_outliers(o, ctx); }).find("--outlier-magnitude") != std::string::npos);
  o = {};
  o.tokens = 512;
  o.features = 512;
  o.outputs = 512;
  CHECK(test::input_error([&] { checks::run_int8_outliers(o, ctx); }).find("--tokens") != std::string::npos);
}

TEST_CASE("int8-outliers: judge fails a product past its bound, a dim found that was not planted, and one row lost") {
  checks::Int8OutliersOptions o;
  o.tokens = 16;
  o.features = 32;
  o.outputs = 8;
  const checks::Int8OutliersMeasured good = checks::measure_int8_outliers(o, checks::RunContext{});
  const auto rows = checks::judge_int8_outliers(good);
  REQUIRE(rows.size() == 7);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::Int8OutliersMeasured off = good;
  off.decomposition.worst = 1.01;  // one entry 1% past the bound its quantization step implies
  CHECK_FALSE(checks::judge_int8_outliers(off)[2].holds());
  off = good;
  int ordinary = 0;
  while (std::binary_search(good.planted.begin(), good.planted.end(), ordinary)) ++ordinary;
  off.found.push_back(ordinary);  // an ordinary dimension flagged as well
  CHECK_FALSE(checks::judge_int8_outliers(off)[3].holds());
  off = good;
  off.rows_restored -= 1;
  CHECK_FALSE(checks::judge_int8_outliers(off)[5].holds());
  off = good;
  off.rows_beat_weights -= 1;  // E19's row: keeping the weights would have won one row
  CHECK_FALSE(checks::judge_int8_outliers(off)[6].holds());
}

}  // namespace check_int8_outliers_test
