#include "core/work_budget.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

std::string rounded(double x) { return x < 10 ? fmt::format("{:.1f}", x) : fmt::format("{:.0f}", x); }

}  // namespace

void require_work_budget(double seconds, const std::string& flags, const std::string& hint) {
  if (std::isfinite(seconds) && seconds <= kWorkBudgetSeconds) return;
  const std::string amount = std::isfinite(seconds) && seconds < 1e9 ? "about " + rounded(seconds) + " s" : "far more";
  throw InputError(fmt::format("{}: {} of work, over the {:.0f} s budget; {}", flags, amount, kWorkBudgetSeconds, hint));
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
