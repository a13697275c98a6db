#include <algorithm>
#include <set>
#include <utility>

#include "support/bench.hpp"
#include "support/check.hpp"

namespace kvlab::checks {
namespace {

std::vector<std::pair<int, CheckFactory>>& registry() {
  static std::vector<std::pair<int, CheckFactory>> r;  // constructed on first use
  return r;
}

std::set<std::string>& benches() {
  static std::set<std::string> b;
  return b;
}

}  // namespace

bool register_bench(const std::string& name) {
  benches().insert(name);
  return true;
}

bool is_bench(const Check& check) { return benches().count(check.name()) > 0; }

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
  return out;
}

}  // namespace kvlab::checks
