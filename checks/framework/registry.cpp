#include <algorithm>
#include <stdexcept>
#include <utility>

#include "framework/check.hpp"

namespace kvlab::checks {
namespace {

std::vector<std::pair<int, CheckFactory>>& registry() {
  static std::vector<std::pair<int, CheckFactory>> r;  // constructed on first use
  return r;
}

}  // namespace

bool register_check(int order, CheckFactory factory) {
  registry().emplace_back(order, std::move(factory));
  return true;
}

std::vector<std::unique_ptr<Check>> make_all_checks() {
  auto entries = registry();
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::unique_ptr<Check>> out;
  for (const auto& [order, make] : entries) out.push_back(make());
  // Two checks at one order would list in link order, which no one chose: refuse it (a unit
  // test makes every check, so this cannot reach a user).
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (entries[i].first == entries[i - 1].first)
      throw std::logic_error("checks " + out[i - 1]->name() + " and " + out[i]->name() + " are both registered at order " +
                             std::to_string(entries[i].first));
  return out;
}

}  // namespace kvlab::checks
