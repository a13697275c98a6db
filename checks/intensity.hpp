// intensity (003 part 1, Q3; 000 §3.1): options, what it measures, and its testable steps.
// See intensity.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "io/catalogue.hpp"
#include "model/generate.hpp"

namespace kvlab::checks::intensity {

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

/// One decode step of B sequences: the MLP's and attention's FLOPs and bytes (16-bit).
struct DecodeIntensityRow {
  std::uint64_t batch = 0;
  double mlp_flops = 0, mlp_bytes = 0;
  double attention_flops = 0, attention_bytes = 0;
};

/// Prefill of one sequence of S tokens: the linear layers' FLOPs and bytes (16-bit).
struct PrefillIntensityRow {
  std::uint64_t prompt = 0;
  double flops = 0, bytes = 0;
};

/// What intensity measured: counted FLOPs and bytes, and the GPU whose ridge decides the bound.
struct IntensityMeasured {
  IntensityOptions options;
  int kv_heads = 0;             ///< resolved: options.kv_heads or heads
  GpuSpec gpu;                  ///< as loaded from the catalogue
  double ridge = 0;             ///< its ridge point, FLOP/B
  /// 000 §3.1 at B = 4, L = 1024, every (query, key) pair: B × the counted QKV, attention, output
  /// projection and FFN FLOPs of one sequence.
  std::uint64_t qkv = 0, attention = 0, out_proj = 0, mlp = 0;
  std::uint64_t attention_causal = 0;  ///< the same attention under the causal mask
  std::uint64_t decode_attention = 0;  ///< B = 4 sequences, 1 query over ctx keys each
  std::vector<DecodeIntensityRow> decode;    ///< batches 1, 8, 64, 512
  double gqa_flops = 0, gqa_bytes = 0;       ///< with MHA: one decode query under h/8 K/V heads
  std::vector<PrefillIntensityRow> prefill;  ///< prompts 1, 16, 128, 1024, 4096
};

/// Counts FLOPs and bytes (`parts` or the library's). Throws InputError naming --gpu when the
/// GPU is not in the catalogue.
IntensityMeasured measure_intensity(const IntensityOptions& o, const IntensityParts& parts = {});
/// The verdict rows: 000 §3.1's terms (exact), the decode MLP and attention intensities and the
/// prefill intensities against the document's formulas (γ_18 relative), E17 flagged on attention,
/// and the two compute/memory-bound claims against the ridge.
std::vector<Expectation> judge_intensity(const IntensityMeasured& m);

/// The check as data (registered as `intensity`).
const CheckDef<IntensityOptions, IntensityMeasured>& intensity_check();

/// Runs the check with `parts`. Throws InputError on out-of-range options.
Result run_intensity(const IntensityOptions& o, const RunContext& ctx, const IntensityParts& parts = {});

}  // namespace kvlab::checks::intensity

namespace kvlab::checks {
using namespace intensity;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
