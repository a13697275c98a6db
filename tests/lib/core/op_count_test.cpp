// Unit tests of the multiply-add counter (core/op_count.hpp) and the generation FLOP counts built
// on it (cost/generation_flops.hpp); every check's derivation is tested in tests/test_explain.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "core/op_count.hpp"
#include "cost/generation_flops.hpp"
#include "model/ops.hpp"

namespace core_op_count_test {

using namespace kvlab;

TEST_CASE("CountMacs counts what linear() and grouped_query_attention() do, and nests") {
  const Mat<double> x = Mat<double>::Ones(3, 4), W = Mat<double>::Ones(4, 5);
  const Vec<double> b = Vec<double>::Zero(5);
  CHECK(active_mac_count() == nullptr);
  CountMacs outer;
  linear(x, W, b);
  {
    CountMacs inner;
    linear(x, W, b);
    const Mat<double> q = Mat<double>::Zero(2, 8), k = Mat<double>::Zero(5, 4);
    grouped_query_attention<double>(q, ConstMatView<double>(k.data(), 5, 4), ConstMatView<double>(k.data(), 5, 4), 2, 1,
                                    4, 3, true);  // queries see 4 and 5 keys
    CHECK(inner.count().linear == 60);
    CHECK(inner.count().attention == 2u * (4 + 5) * 4 * 2);
  }
  CHECK(outer.count().linear == 60);
  CHECK(naive_generation_flops(1, 10) == cached_generation_flops(1, 10));
  CHECK(naive_generation_flops(2, 1) == 12 * 6 + 2 * 24 / 3);
  CHECK_THROWS_AS(naive_generation_flops(1ull << 40, 1ull << 20), InputError);
}

}  // namespace core_op_count_test
