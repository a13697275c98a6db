// CLI11 validators shared by the checks: finite numbers, with the option named in the error.
// CLI::Range alone lets NaN through (every comparison with NaN is false), so real-valued options
// use FiniteRange.
#pragma once

#include <cmath>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace kvlab::checks {

/// Accepts a finite real number in [lo, hi]; rejects nan, inf and out-of-range values.
inline CLI::Validator FiniteRange(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(input, &used);
        } catch (const std::exception&) {
          return "'" + input + "' is not a number";
        }
        if (used != input.size()) return "'" + input + "' is not a number";
        if (!std::isfinite(v) || v < lo || v > hi)
          return fmt::format("must be a finite number in [{}, {}] (got {})", lo, hi, input);
        return {};
      },
      fmt::format("FINITE in [{}, {}]", lo, hi));
}

}  // namespace kvlab::checks
