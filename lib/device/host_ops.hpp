// The mini-GPT's device operations (kernels/model_ops.hpp) on the CPU, in float32: "memory" is
// host memory and every operation a plain loop. It is what lets the CUDA forward
// (model/device_gpt.hpp) and the `--device cuda` paths of the model checks run in the unit tests
// of a machine without a GPU: the same forward, the same cache addressing (block tables, bf16
// storage), only the arithmetic on another processor. With a fault switched on, one operation is
// wrong in a way a GPU kernel could be, and the tests show the checks catch it.
#pragma once

#include <memory>

#include "kernels/model_ops.hpp"

namespace kvlab::gpu {

/// Deliberate bugs of the CPU operations (all off by default), each a bug a kernel could have.
struct HostFaults {
  bool append_wrong_slot = false;     ///< kv_append writes position pos + 1 (an off-by-one slot; wraps to 0 at the sequence's capacity)
  bool attention_no_gather = false;   ///< attention reads slot b * block_size... as if the table were the identity
  bool attention_drops_last = false;  ///< attention stops one position short (ignores the newest K/V)
  bool append_overwrites_past = false;///< kv_append also writes its row over position pos - 1
};

/// float32 ModelOps on host memory. linear, layer_norm, gelu and rope are the mini-GPT's own
/// (model/ops.hpp, attention/gqa.hpp: MiniGPT<float>'s arithmetic, in its order); attention sums
/// in position order with std::exp in float; bf16 storage rounds to nearest even (round_to_bf16).
/// Never throws except std::bad_alloc.
std::unique_ptr<kernels::ModelOps> make_host_ops(HostFaults faults = {});

}  // namespace kvlab::gpu
