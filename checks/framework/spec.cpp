// The option table's rules (framework/spec.hpp): one wording for the command line and for validate_options.
#include "framework/spec.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "framework/path_option.hpp"

namespace kvlab::checks {
namespace {

// lo and hi are doubles: 2^63 - 1 reads as 2^63, which no int64 holds.
std::int64_t integer(double v) {
  return v >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(v);
}

}  // namespace

void require_allowed(const std::string& flag, const Allowed& allowed, double v) {
  switch (allowed.kind) {
    case Allowed::Kind::any:
    case Allowed::Kind::one_of:
    case Allowed::Kind::path:
      return;
    case Allowed::Kind::integers:
      if (v != std::floor(v) || v < allowed.lo || v > allowed.hi)
        throw InputError(fmt::format("{}: must be an integer in [{}, {}] (got {})", flag, integer(allowed.lo),
                                     integer(allowed.hi), v));
      return;
    case Allowed::Kind::tokens:
      if (v != std::floor(v) || v < 1 || v > allowed.hi)
        throw InputError(fmt::format("{}: must be a token count in [1, {}] (got {})", flag, integer(allowed.hi), v));
      return;
    case Allowed::Kind::reals:
      if (!std::isfinite(v) || v < allowed.lo || v > allowed.hi)
        throw InputError(
            fmt::format("{}: must be a finite number in [{}, {}] (got {})", flag, allowed.lo, allowed.hi, v));
      return;
  }
}

void require_allowed(const std::string& flag, const Allowed& allowed, const std::string& v) {
  if (allowed.kind == Allowed::Kind::path && v.empty())
    throw InputError(flag + ": empty path (an unset shell variable?); give a file name, or leave the option out");
  if (allowed.kind != Allowed::Kind::one_of) return;
  if (std::find(allowed.members.begin(), allowed.members.end(), v) == allowed.members.end())
    throw InputError(fmt::format("{}: must be one of {} (got '{}')", flag, fmt::join(allowed.members, ", "),
                                 printable(v)));
}

void require_power(const Result& r, std::string_view sample_options) {
  const Expectation* refused = nullptr;
  double times = 0;  // the most samples, as a multiple of this run's, that any refused row asks for
  for (const Expectation& e : r.expectations) {
    if (!e.attainable || e.can_fail() || !std::isfinite(e.measured)) continue;  // NaN measured: the row fails
    if (refused == nullptr) refused = &e;
    // A statistical bound shrinks about as 1/√n (Freedman's and Bernstein's add a 1/n term), so at
    // the same spread (± / largest deviation)² times the samples bring the row within its range.
    // Only a guide: the spread is itself measured, and a larger run can find it wider.
    times = std::max(times, std::pow(e.tolerance / e.largest_possible_deviation(), 2));
  }
  if (refused == nullptr) return;
  const Expectation& e = *refused;
  std::string how_many;
  if (std::isfinite(times))
    how_many = fmt::format(" (roughly {}× the samples, if the spread stays as measured: the ± shrinks about as 1/√n)",
                           times < 10 ? fmt::format("{:.1f}", std::ceil(times * 10) / 10)
                                      : fmt::format("{:.0f}", std::ceil(times)));
  throw InputError(fmt::format("{}: too few samples for \"{}\": {:.3g} ± {:.3g} takes in all of [{}, {}], every value "
                               "the quantity can have, so the row could not fail; raise {}{}",
                               sample_options.empty() ? r.check : sample_options, e.quantity, e.expected, e.tolerance,
                               e.attainable->first, e.attainable->second,
                               sample_options.empty() ? std::string_view("the sample size") : sample_options, how_many));
}

std::optional<Validator> validator_for(const Allowed& allowed) {
  switch (allowed.kind) {
    case Allowed::Kind::any:
      return std::nullopt;
    case Allowed::Kind::integers:
      return IntRange(integer(allowed.lo), integer(allowed.hi));
    case Allowed::Kind::reals:
      return FiniteRange(allowed.lo, allowed.hi);
    case Allowed::Kind::tokens:
      return TokenCount(integer(allowed.hi));
    case Allowed::Kind::one_of:
      return IsMember(allowed.members);
    case Allowed::Kind::path:
      return PathGiven();
  }
  return std::nullopt;
}

}  // namespace kvlab::checks
