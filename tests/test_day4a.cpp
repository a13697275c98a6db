// Unit tests of the Day-4 layout and cache checks: each passes with the library's parts and
// fails with a deliberately broken one (a wrong mask, a wrong grouping, a forgotten offset...).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "attention/causal_mask.hpp"
#include "attention/gqa.hpp"
#include "attention/kv_layout.hpp"
#include "framework/check.hpp"
#include "core/error.hpp"
#include "core/op_count.hpp"
#include "cost/generation_flops.hpp"
#include "model/ops.hpp"

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

TEST_CASE("the Day-4 checks have a derivation ending with its source, lines under 100 columns") {
  const std::set<std::string> mine{"cache-flops", "bidirectional", "query-not-cached", "abs-pos-window", "gqa-equals-mha",
                                   "gqa-meanpool", "position-offset", "causal-mask", "gqa-layout"};
  std::set<std::string> seen;
  for (const auto& check : checks::make_all_checks()) {
    if (!mine.count(check->name())) continue;
    seen.insert(check->name());
    const std::string d = check->derivation();
    CAPTURE(check->name());
    CHECK(d.find("Source: ") != std::string::npos);
    std::istringstream lines(d);
    for (std::string line; std::getline(lines, line);) {
      std::size_t columns = 0;  // UTF-8 code points
      for (unsigned char ch : line) columns += (ch & 0xC0) != 0x80 ? 1 : 0;
      CHECK(columns < 100);
    }
  }
  CHECK(seen == mine);
}
