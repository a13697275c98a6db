// lib/reference/attention.hpp: the oracle itself, against values worked out by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "reference/attention.hpp"

namespace reference_attention_test {

using namespace kvlab;

TEST_CASE("reference attention: causal, scaled by 1/sqrt(d), each head on its own K/V") {
  // 2 heads of d = 1, 2 positions. Head 0: q = k = 0, so the scores are equal and the softmax
  // averages the visible values. Head 1: q = ln 3 · sqrt(1), k = [0, 1]: weights 1/4, 3/4.
  Mat<double> q(2, 2), k(2, 2), v(2, 2);
  q << 0, 0, 0, std::log(3.0);
  k << 0, 0, 0, 1;
  v << 2, 10, 4, 20;
  const Mat<double> out = reference::multi_head_attention<double>(q, k, v, 2, 1, 0);
  CHECK(out(0, 0) == 2.0);  // position 0 sees key 0 only
  CHECK(out(0, 1) == 10.0);
  CHECK(out(1, 0) == doctest::Approx(3.0).epsilon(1e-15));   // (2 + 4) / 2
  CHECK(out(1, 1) == doctest::Approx(17.5).epsilon(1e-15));  // 10/4 + 3·20/4
  // A decode query (q_pos0 = 1) over both keys computes the last row of the prefill.
  const Mat<double> last = reference::multi_head_attention<double>(q.bottomRows(1), k, v, 2, 1, 1);
  CHECK(last(0, 0) == out(1, 0));
  CHECK(last(0, 1) == out(1, 1));
}

}  // namespace reference_attention_test
