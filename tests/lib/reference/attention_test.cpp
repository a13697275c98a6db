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

TEST_CASE("reference masked attention: query heads share K/V heads by group, the mask picks the keys") {
  // 2 query heads on 1 K/V head (d = 1), 3 keys, a window of 2 (i − 2 < s ≤ i). Head 0 has q = 0:
  // equal scores, the mean of the visible values. Head 1 has q = ln 3 against k = [0, 0, 1].
  Mat<double> q(3, 2), k(3, 1), v(3, 1);
  q << 0, std::log(3.0), 0, std::log(3.0), 0, std::log(3.0);
  k << 0, 0, 1;
  v << 100, 2, 4;
  const auto window = [](int i, int s) { return s <= i && i - s < 2; };
  const Mat<double> out = reference::masked_attention<double>(q, k, v, 2, 1, 1, window);
  CHECK(out(0, 0) == 100.0);  // row 0 sees key 0 only, with either head
  CHECK(out(0, 1) == 100.0);
  CHECK(out(2, 0) == doctest::Approx(3.0).epsilon(1e-15));  // keys 1 and 2: (2 + 4) / 2; key 0 is masked
  CHECK(out(2, 1) == doctest::Approx(3.5).epsilon(1e-15));  // weights 1/4, 3/4: 2/4 + 3·4/4
  // 4 query heads on 2 K/V heads: heads 0, 1 read K/V head 0 and heads 2, 3 read head 1. Equal
  // scores (q = 0), so each output is the mean of its K/V head's visible values.
  Mat<double> q4 = Mat<double>::Zero(2, 4), k2 = Mat<double>::Zero(2, 2), v2(2, 2);
  v2 << 1, 10, 3, 30;
  const Mat<double> grouped =
      reference::masked_attention<double>(q4, k2, v2, 4, 2, 1, [](int i, int s) { return s <= i; });
  CHECK(grouped(1, 0) == 2.0);
  CHECK(grouped(1, 1) == 2.0);
  CHECK(grouped(1, 2) == 20.0);
  CHECK(grouped(1, 3) == 20.0);
  // With every key visible, key 0 (value 100) enters row 2's average.
  const Mat<double> all = reference::masked_attention<double>(q, k, v, 2, 1, 1, [](int, int) { return true; });
  CHECK(all(2, 0) == doctest::Approx(106.0 / 3).epsilon(1e-15));
}

}  // namespace reference_attention_test
