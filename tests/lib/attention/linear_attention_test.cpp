// Claims docs/claims.md once only showed or planned, now judged: the linear-attention layer the
// check of that name rests on (003 part 3). Roofline's rows for 000 §1.1, §3.1, 003 Q6 and kv-size's
// cell-by-cell judgment of the cheatsheet's tables: tests/checks/roofline_test.cpp, kv_size_test.cpp.
#include <doctest/doctest.h>

#include <memory>

#include <fmt/format.h>

#include "attention/linear_attention.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

namespace attention_linear_attention_test {

using namespace kvlab;

TEST_CASE("linear attention: recurrent = parallel; state and work per step are constant") {
  Rng rng(7);
  const int T = 20, d = 5;
  Mat<double> q(T, d), k(T, d), v(T, d);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < d; ++j) q(t, j) = rng.normal(), k(t, j) = rng.normal(), v(t, j) = rng.normal();
  for (const double gamma : {1.0, 0.5}) {
    LinearAttention layer(d, d, gamma);
    const Mat<double> par = linear_attention_parallel(q, k, v, gamma);
    for (int t = 0; t < T; ++t) {
      const Vec<double> y = layer.step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose());
      CHECK((y - par.row(t).transpose()).cwiseAbs().maxCoeff() < 1e-13);
      CHECK(layer.state_bytes() == (d * d + d) * sizeof(double));
      CHECK(layer.last_step_macs() == static_cast<std::uint64_t>(2 * d * d + 2 * d));
    }
  }
  // t = 0 sees only itself: y_0 = v_0 whatever q and γ are.
  LinearAttention first(d, d, 0.5);
  CHECK((first.step(q.row(0).transpose(), k.row(0).transpose(), v.row(0).transpose()) - v.row(0).transpose())
            .cwiseAbs()
            .maxCoeff() < 1e-15);
  CHECK(test::input_error([] { LinearAttention(4, 4, 0.0); }).find("decay") != std::string::npos);
  CHECK(test::input_error([] { LinearAttention(0, 4); }).find("key_dim") != std::string::npos);
  CHECK_THROWS_AS(LinearAttention(4, 4).step(Vec<double>::Zero(3), Vec<double>::Zero(4), Vec<double>::Zero(4)),
                  std::invalid_argument);
}

}  // namespace attention_linear_attention_test
