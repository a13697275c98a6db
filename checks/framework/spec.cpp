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
  int count = 0;
  double factor = 0;  // the most any refused row's ± must shrink: ± / largest deviation
  for (const Expectation& e : r.expectations) {
    if (!e.attainable || e.can_fail() || !std::isfinite(e.measured)) continue;  // NaN measured: the row fails
    if (refused == nullptr) refused = &e;
    ++count;
    factor = std::max(factor, e.tolerance / e.largest_possible_deviation());
  }
  if (refused == nullptr) return;
  const Expectation& e = *refused;
  // How many more samples that takes is not said: how fast a bound shrinks depends on the check
  // (1/n where few samples make it, 1/√n later) and on how each option scales the count.
  std::string shrink;
  if (std::isfinite(factor))
    shrink = count > 1 ? fmt::format(" ({} rows could not fail; the widest ± must shrink more than {:.3g}-fold)", count,
                                     factor)
                       : fmt::format(" (the ± must shrink more than {:.3g}-fold)", factor);
  throw InputError(fmt::format("{}: too few samples for \"{}\": {:.3g} ± {:.3g} takes in all of [{}, {}], every value "
                               "the quantity can have, so the row could not fail; raise {}{}",
                               sample_options.empty() ? r.check : sample_options, e.quantity, e.expected, e.tolerance,
                               e.attainable->first, e.attainable->second,
                               sample_options.empty() ? std::string_view("the sample size") : sample_options, shrink));
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
