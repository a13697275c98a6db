// Bytes a layer moves between memory and the compute units, for arithmetic intensity
// (FLOPs / bytes, FLOP/B; 003 part 1, Q3; 000 §3.1). FLOPs come from model/generate.hpp's
// count_forward; these functions count the bytes the same operations read and write, each tensor
// moved once (no cache reuse, no fusion), at `bytes_per_elem` bytes per element (2 for bf16/fp16).
//
//   linear layer, rows × [in → out]:  weights in·out + input rows·in + output rows·out elements
//   decode attention, B sequences of ctx cached positions, one query each:
//       K and V caches  B·ctx·2·n_kv·head_dim  +  query and output  B·2·n_head·head_dim elements
#pragma once

#include <cstdint>

namespace kvlab {

/// Bytes of a linear layer applied to `rows` rows: (in·out + rows·in + rows·out)·bytes_per_elem.
/// Throws InputError when a size is 0, bytes_per_elem is not finite and positive, or the element
/// count overflows 64 bits.
double linear_bytes(std::uint64_t rows, std::uint64_t in, std::uint64_t out, double bytes_per_elem);

/// Bytes of one decode step's attention for `batch` sequences with `ctx` cached positions each
/// (formula at the top). Same errors as linear_bytes; n_kv_head must divide n_head.
double decode_attention_bytes(std::uint64_t batch, std::uint64_t ctx, std::uint64_t n_head, std::uint64_t n_kv_head,
                              std::uint64_t head_dim, double bytes_per_elem);

}  // namespace kvlab
