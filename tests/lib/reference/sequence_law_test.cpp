// lib/reference/sequence_law.hpp: the enumerated law of n tokens and the pooled cells, by hand.
#include <doctest/doctest.h>

#include <vector>

#include "reference/sequence_law.hpp"

namespace reference_sequence_law_test {

using namespace kvlab;

TEST_CASE("reference sequence law: product of the conditionals, first token most significant") {
  // V = 2, prompt {7}. p(· | 7) = (1/4, 3/4); p(· | 7 0) = (1/2, 1/2); p(· | 7 1) = (1, 0).
  std::vector<std::vector<int>> asked;
  const auto law = reference::sequence_law(2, 2, {7}, [&](const std::vector<int>& seq) {
    asked.push_back(seq);
    if (seq.size() == 1) return std::vector<double>{0.25, 0.75};
    return seq[1] == 0 ? std::vector<double>{0.5, 0.5} : std::vector<double>{1.0, 0.0};
  });
  CHECK(law == std::vector<double>{0.125, 0.125, 0.75, 0.0});  // 00 01 10 11
  // Depth first, in token order, once per prefix.
  CHECK(asked == std::vector<std::vector<int>>{{7}, {7, 0}, {7, 1}});
}

TEST_CASE("reference sequence law: a zero-probability prefix is never expanded") {
  int calls = 0;
  const auto law = reference::sequence_law(3, 2, {}, [&](const std::vector<int>& seq) {
    ++calls;
    if (seq.empty()) return std::vector<double>{0.0, 1.0, 0.0};
    return std::vector<double>{0.5, 0.25, 0.25};
  });
  CHECK(calls == 2);  // the root and {1}
  CHECK(law == std::vector<double>{0, 0, 0, 0.5, 0.25, 0.25, 0, 0, 0});
}

TEST_CASE("reference cells: outcomes expected >= 5 times keep a cell, the rest pool last") {
  // 40 draws: expected counts 2, 20, 2, 16.
  const reference::Cells c = reference::pool_rare_outcomes({0.05, 0.5, 0.05, 0.4}, 40);
  CHECK(c.cell_of == std::vector<std::int64_t>{2, 0, 2, 1});
  CHECK(c.law == std::vector<double>{0.5, 0.4, 0.1});
  // Nothing to pool: the pooled cell is still there, empty.
  const reference::Cells all = reference::pool_rare_outcomes({0.5, 0.5}, 10);
  CHECK(all.cell_of == std::vector<std::int64_t>{0, 1});
  CHECK(all.law == std::vector<double>{0.5, 0.5, 0.0});
  const reference::Cells same = reference::one_cell_per_outcome({0.25, 0.75});
  CHECK(same.cell_of == std::vector<std::int64_t>{0, 1});
  CHECK(same.law == std::vector<double>{0.25, 0.75});
}

}  // namespace reference_sequence_law_test
