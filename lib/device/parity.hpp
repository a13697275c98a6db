// `kvlab parity`: every CUDA kernel against its float64 CPU reference, on fresh seeded
// random inputs over several shapes (odd sizes, one block, many blocks, GQA ratios 1, 4, 8, MQA),
// in float32 and bf16 cache storage. The device's output buffer is poisoned with NaN before each
// launch (kernels/gpu_kernels.hpp), so an element a kernel forgets to write shows as NaN.
//
// The kernels are reached through KernelRunner: CudaRunner (device/cuda_entry.hpp) on a GPU, and
// CpuF32Runner here, a plain float32 CPU implementation of the same kernels. The CPU one is what
// the unit tests feed through the comparison: its honest outputs must pass, and each of its
// deliberate faults (KernelFaults) must fail, which shows the bounds and NaN checks have teeth
// without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/kernels.hpp"
#include "kernels/gpu_kernels.hpp"

namespace kvlab::gpu {

/// Something that runs the kernels: the GPU, or a CPU stand-in. Each call takes host buffers and
/// returns the output as float32 (layouts: kernels/gpu_kernels.hpp).
class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  virtual std::string name() const = 0;
  virtual kernels::KvAppendOutput kv_append(const kernels::KvAppendInput& in) = 0;
  virtual std::vector<float> rope(const kernels::RopeInput& in) = 0;
  virtual std::vector<float> decode_attention(const kernels::DecodeAttentionInput& in) = 0;
  virtual std::vector<float> layer_norm(const kernels::RowsInput& in) = 0;
  virtual std::vector<float> gelu(const kernels::RowsInput& in) = 0;
  virtual std::vector<float> softmax(const kernels::RowsInput& in) = 0;
};

/// Deliberate bugs of the CPU stand-in, each of a kind a GPU kernel could have. All off by default.
struct KernelFaults {
  bool paged_ignores_table = false;  ///< attention reads physical blocks 0, 1, 2, ... (no gather)
  bool attention_drops_last = false; ///< attention stops one position short (off by one)
  bool bf16_truncates = false;       ///< bf16 storage truncates instead of rounding to nearest
  bool append_wrong_slot = false;    ///< KV append writes position pos + 1
  bool skips_last_element = false;   ///< element-wise/row kernels leave their last output unwritten (NaN)
  bool rope_float_angle = false;     ///< RoPE angle computed in float32 (~1e-4 rad off at position 4000)
  bool layer_norm_no_eps = false;    ///< LayerNorm without the 1e-5 inside the square root
};

/// float32 CPU versions of the kernels (f32 sums, f32 exp; decode attention split into spans of
/// 64 positions merged flash-decoding style, as the GPU kernel does), with optional faults. Outputs start as NaN, like the device's poisoned buffers.
class CpuF32Runner final : public KernelRunner {
 public:
  explicit CpuF32Runner(KernelFaults faults = {}) : faults_(faults) {}
  std::string name() const override { return "cpu-f32"; }
  kernels::KvAppendOutput kv_append(const kernels::KvAppendInput& in) override;
  std::vector<float> rope(const kernels::RopeInput& in) override;
  std::vector<float> decode_attention(const kernels::DecodeAttentionInput& in) override;
  std::vector<float> layer_norm(const kernels::RowsInput& in) override;
  std::vector<float> gelu(const kernels::RowsInput& in) override;
  std::vector<float> softmax(const kernels::RowsInput& in) override;

 private:
  KernelFaults faults_;
};

/// One line of the parity table.
struct ParityRow {
  std::string kernel;     ///< kv_append, rope, decode_attention, layer_norm, gelu, softmax
  std::string shape;      ///< e.g. "B=2 H=32 KV=4 hd=128 len=1000,2049 paged bs=16"
  std::string dtype;      ///< cache storage (f32 or bf16); f32 for the other kernels
  Comparison result;
  std::string bound_why;  ///< the bound's formula with its numbers
};

/// Every kernel on every shape of the built-in list, inputs drawn from Rng(seed) (normal values;
/// paged block tables a seeded random permutation of the pool). `only` (optional): run just that
/// kernel's cases (the unit tests' faults; the inputs then differ from the full run's). Throws
/// what the runner throws (kernels::CudaError on a device failure).
std::vector<ParityRow> run_parity(KernelRunner& runner, std::uint64_t seed, const std::string& only = "");

}  // namespace kvlab::gpu
