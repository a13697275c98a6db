// CLI11 validators shared by the checks and the CLI. CLI::Range is not enough on its own: it lets
// NaN through (every comparison with NaN is false), CLI11 2.1 saturates integers that overflow
// (99999999999999999999 becomes 2^63 - 1), reads "0x10" as 16 and "" as 0. So integer options use
// IntRange (base-10 digits only, overflow rejected) and real-valued options FiniteRange.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace kvlab::checks {

/// Accepts a finite decimal number in [lo, hi] ("7e9", "0.5", "-1.25"); rejects nan, inf, hex
/// ("0x10"), surrounding spaces, trailing text and out-of-range values.
inline CLI::Validator FiniteRange(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double v = 0;
        const char* first = input.data();
        const char* last = first + input.size();
        if (first != last && *first == '+') ++first;  // from_chars takes no leading '+'
        const auto [end, ec] = std::from_chars(first, last, v, std::chars_format::general);
        if (first == last || end != last || ec != std::errc())
          return fmt::format("'{}' is not a decimal number; must be a finite number in [{}, {}]", input, lo, hi);
        if (!std::isfinite(v) || v < lo || v > hi)
          return fmt::format("must be a finite number in [{}, {}] (got {})", lo, hi, input);
        return {};
      },
      fmt::format("FINITE in [{}, {}]", lo, hi));
}

/// Accepts a base-10 integer in [lo, hi]; rejects anything else, naming the allowed range.
inline CLI::Validator IntRange(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        std::int64_t v = 0;
        const char* first = input.data();
        const char* last = first + input.size();
        if (first != last && *first == '+') ++first;  // from_chars takes no leading '+'
        const auto [end, ec] = std::from_chars(first, last, v);
        if (first == last || end != last ||
            (ec != std::errc() && ec != std::errc::result_out_of_range))
          return fmt::format("'{}' is not an integer; must be an integer in [{}, {}]", input, lo,
                             hi);
        if (ec == std::errc::result_out_of_range || v < lo || v > hi)
          return fmt::format("must be an integer in [{}, {}] (got {})", lo, hi, input);
        return {};
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

}  // namespace kvlab::checks
