// intensity (003 part 1, Q3; 000 §3.1): options and the testable entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "io/catalogue.hpp"
#include "model/generate.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct IntensityOptions {
  int d_model = 4096;              ///< model width D
  int heads = 32;                  ///< query heads (head_dim = D / heads)
  std::optional<int> kv_heads;     ///< K/V heads; default: heads (MHA, the document's case)
  std::int64_t ctx = 4096;         ///< cached positions of each decoding sequence
  std::string gpu = "a100-80gb";   ///< whose ridge point decides compute- vs memory-bound
};

/// The injectable pieces: the FLOP count and the byte counts. Unit tests pass a count that
/// forgets AV and one whose MLP is 2D wide.
struct IntensityParts {
  std::function<OpCount(const ModelConfig&, std::int64_t, std::int64_t)> count;
  std::function<double(std::uint64_t, std::uint64_t, std::uint64_t, double)> linear_bytes;
  std::function<GpuSpec(const std::string&)> load_gpu;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_intensity(const IntensityOptions& o, const RunContext& ctx, const IntensityParts& parts = {});

}  // namespace kvlab::checks
