// An integer-option validator that says what is wrong: CLI::Range reports "Value abc not in range
// 0 to 256" for text that is not a number at all, and lets "4.5" reach the integer conversion.
// IntRange parses the whole string as a base-10 integer first. (A companion to FiniteRange in
// support/options.hpp; the two could live together.)
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <string>

namespace kvlab::checks {

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
