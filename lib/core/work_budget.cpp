#include "core/work_budget.hpp"

#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

std::string rounded(double x) { return x < 10 ? fmt::format("{:.1f}", x) : fmt::format("{:.0f}", x); }

}  // namespace

double work_budget_seconds() {
  static const double budget = [] {
    const char* env = std::getenv("KVLAB_WORK_BUDGET");
    if (env == nullptr || *env == '\0') return kWorkBudgetSeconds;
    const std::string text = env;
    std::size_t used = 0;
    double v = 0;
    // Plain decimal seconds, as every option takes them: stod alone would read "0x10" as 16.
    const bool decimal = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
    try {
      if (decimal) v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || !(v >= 1.0 && v <= 86400.0)) {
      std::string shown = text.substr(0, 40);
      for (char& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
      throw InputError(fmt::format("KVLAB_WORK_BUDGET: expected seconds from 1 to 86400, got '{}{}'", shown,
                                   text.size() > 40 ? "..." : ""));
    }
    return v;
  }();
  return budget;
}

void require_work_budget(double seconds, const std::string& flags, const std::string& hint) {
  const double budget = work_budget_seconds();
  if (std::isfinite(seconds) && seconds <= budget) return;
  const std::string amount = std::isfinite(seconds) && seconds < 1e9 ? "about " + rounded(seconds) + " s" : "far more";
  throw InputError(fmt::format("{}: {} of work, over the {:.0f} s budget; {} (KVLAB_WORK_BUDGET=SECONDS raises it)",
                               flags, amount, budget, hint));
}

void require_memory_budget(double bytes, const std::string& flags, const std::string& hint) {
  if (std::isfinite(bytes) && bytes <= kMemoryBudgetBytes) return;
  const double gib = bytes / (1024.0 * 1024 * 1024);
  const std::string amount = std::isfinite(gib) && gib < 1e9 ? "about " + rounded(gib) + " GiB" : "far more";
  throw InputError(fmt::format("{}: {} of memory, over the {:.0f} GiB budget; {}", flags, amount,
                               kMemoryBudgetBytes / (1024.0 * 1024 * 1024), hint));
}

std::int64_t largest_fitting(std::int64_t lo, std::int64_t hi, const std::function<bool(std::int64_t)>& fits) {
  if (hi < lo || !fits(lo)) return lo - 1;
  while (lo < hi) {  // invariant: fits(lo)
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace kvlab
