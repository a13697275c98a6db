// Seeded random numbers whose sequence is the same on every platform and standard library.
//
// std::uniform_real_distribution and std::normal_distribution are implementation-defined, so a
// seed would not replay across compilers; kvlab draws from std::mt19937_64 (fully specified by the
// standard) and converts the bits itself.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace kvlab {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  /// Uniform in [0, 1): the top 53 bits of one 64-bit draw, scaled by 2^-53.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Standard normal N(0, 1) by the Box-Muller transform (one draw of two uniforms per call).
  double normal();

  /// An index i drawn with probability weights[i] / sum(weights), by inverting the CDF.
  /// Weights must be non-negative with a positive sum (not checked here: callers pass
  /// probability vectors). Returns the last index with positive weight if rounding runs past.
  std::size_t categorical(std::span<const double> weights);

 private:
  std::mt19937_64 engine_;
};

}  // namespace kvlab
