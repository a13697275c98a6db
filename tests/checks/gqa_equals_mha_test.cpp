// gqa-equals-mha (checks/gqa_equals_mha.cpp): passes with the library's kernel, fails with a
// wrong head-to-K/V-head map; its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "attention/gqa.hpp"
#include "checks/gqa_equals_mha.hpp"
#include "core/error.hpp"

namespace check_gqa_equals_mha_test {

using namespace kvlab;

TEST_CASE("gqa-equals-mha passes (f64, f32), and fails when query head j reads K/V head j + 1") {
  checks::RunContext ctx;
  checks::GqaEqualsMhaOptions o;
  CHECK(checks::run_gqa_equals_mha(o, ctx).passed());
  ctx.dtype = Dtype::f32;
  CHECK(checks::run_gqa_equals_mha(o, ctx).passed());
  ctx.dtype = Dtype::f64;
  checks::GqaEqualsMhaParts wrong;
  wrong.gqa_f64 = [](const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int h, int, int d, int p0) {
    // a wrong grouping: K/V heads rotated by one, so query head j reads K/V head j + 1 (mod h)
    Mat<double> kr(k.rows(), k.cols()), vr(v.rows(), v.cols());
    for (int j = 0; j < h; ++j) {
      kr.middleCols(j * d, d) = k.middleCols(((j + 1) % h) * d, d);
      vr.middleCols(j * d, d) = v.middleCols(((j + 1) % h) * d, d);
    }
    return grouped_query_attention<double>(q, ConstMatView<double>(kr.data(), kr.rows(), kr.cols()),
                                           ConstMatView<double>(vr.data(), vr.rows(), vr.cols()), h, h, d, p0, true);
  };
  const Result r = checks::run_gqa_equals_mha(o, ctx, wrong);
  CHECK_FALSE(r.passed());
  CHECK(r.metric_value("max_abs_diff") > 0.1);
}

TEST_CASE("gqa-equals-mha: judge wants the same bits, and no NaN passes") {
  checks::GqaEqualsMhaMeasured m{.options = {}, .context = {}, .cases = {{"prefill", 12, 0, 3}, {"decode", 1, 0, 3}}};
  for (const Expectation& e : checks::judge_gqa_equals_mha(m)) CHECK(e.holds());
  m.cases[1].diff = 1e-17;
  CHECK_FALSE(checks::judge_gqa_equals_mha(m)[1].holds());
  m.cases[1].diff = std::nan("");
  CHECK_FALSE(checks::judge_gqa_equals_mha(m)[1].holds());
}

}  // namespace check_gqa_equals_mha_test
