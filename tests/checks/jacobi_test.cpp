// jacobi (checks/jacobi.cpp): passes with spec::jacobi_update, fails with an update that reads a
// stale position; its judge on hand-made counts. The Jacobi iteration itself: tests/lib/spec/variants_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "checks/jacobi.hpp"
#include "../test_util.hpp"

namespace check_jacobi_test {

using namespace kvlab;
using kvlab::checks::RunContext;

TEST_CASE("jacobi: passes; an update reading a stale position (off by one) fails") {
  const RunContext ctx;
  CHECK(kvlab::checks::run_jacobi({}, ctx).passed());
  RunContext f32 = ctx;
  f32.dtype = kvlab::Dtype::f32;
  CHECK(kvlab::checks::run_jacobi({}, f32).passed());
  // y_i from the logits one position too early (row P − 2 + i): the token before's prediction.
  kvlab::checks::JacobiParts stale{[](const Mat<double>& lg, int p, int n) {
    std::vector<int> y(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const Eigen::Index row = std::max(0, p - 2 + i);
      Eigen::Index best = 0;
      for (Eigen::Index c = 1; c < lg.cols(); ++c)
        if (lg(row, c) > lg(row, best)) best = c;
      y[static_cast<std::size_t>(i)] = static_cast<int>(best);
    }
    return y;
  }};
  const auto bad = kvlab::checks::run_jacobi({}, ctx, stale);
  CHECK_FALSE(bad.passed());
  bool named = false;
  for (const Expectation& e : bad.expectations) named |= !e.holds() && e.quantity.find("differing from greedy") != std::string::npos;
  CHECK(named);
  kvlab::test::input_error([&] { kvlab::checks::run_jacobi({.prompts = 0}, ctx); });
  kvlab::test::input_error([&] { kvlab::checks::run_jacobi({.block = 60}, ctx); });
}

TEST_CASE("jacobi: judge on hand-made counts: one differing token, one run over n, one broken prefix each fail") {
  checks::JacobiMeasured m;
  m.runs = 40;
  auto rows = checks::judge_jacobi(m);
  REQUIRE(rows.size() == 4);
  for (const Expectation& e : rows) CHECK(e.holds());
  m.differing = 1;
  CHECK_FALSE(checks::judge_jacobi(m)[0].holds());
  m.differing = 0, m.over_n = 1;
  CHECK_FALSE(checks::judge_jacobi(m)[1].holds());
  m.over_n = 0, m.not_converged = 1;
  CHECK_FALSE(checks::judge_jacobi(m)[2].holds());
  m.not_converged = 0, m.prefix_breaks = 1;
  CHECK_FALSE(checks::judge_jacobi(m)[3].holds());
}

}  // namespace check_jacobi_test
