// The work budget of the safetensors reader (lib/io/safetensors.hpp): how much a weights file may
// hold. Its own header so that code that only needs the figure (model init, the tests) does not
// pull in the reader, and the reader's users do not recompile when the figure moves.
#pragma once

#include <cstdint>

namespace kvlab {

/// Largest number of elements, all tensors together, kvlab reads from one file: 2^26 (67,108,864;
/// 512 MiB once decoded to float64). Every element is a weight the model's forward reads once per
/// position, and the decoded copy plus the model's own must fit in a few GiB; kvlab's trained pair
/// has under a million. docs/reliability.md ("The readers under attack") has the measurement.
inline constexpr std::uint64_t kMaxSafetensorsElements = std::uint64_t{1} << 26;

}  // namespace kvlab
