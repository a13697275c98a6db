// What the model checks share for `--device cuda`: the device's operations and the
// model on them (model/device_gpt.hpp). On the device the model computes in float32 whatever
// --dtype says (the CLI sets ctx.dtype = f32), so a check's tolerance there is the float32 one.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "device/cuda_entry.hpp"
#include "model/device_gpt.hpp"
#include "core/finite.hpp"
#include "model/weights_io.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

/// The operations a check's device path runs on: ctx.device_ops() when set (the unit tests),
/// otherwise the CUDA device's. Throws InputError without a CUDA build, CudaError on a device failure.
inline std::unique_ptr<kernels::ModelOps> device_ops(const RunContext& ctx) {
  return ctx.device_ops ? ctx.device_ops() : gpu::make_model_ops();
}

/// What keeps a --weights run (target, and draft when `with_draft`) off the device: the file's
/// config as gpu::device_gap sees it ("" for no file, or one the device runs). Reads only the
/// files' headers; a bad file is reported by the run itself, so it gives "" here.
inline std::string weights_device_gap(const RunContext& ctx, bool with_draft = false) {
  try {
    for (const std::string* path : {&ctx.weights, with_draft ? &ctx.draft_weights : nullptr}) {
      if (!path || path->empty()) continue;
      if (const std::string gap = gpu::device_gap(read_weights_config(*path)); !gap.empty()) return *path + ": " + gap;
    }
  } catch (const std::exception&) {
  }
  return "";
}

/// The larger of a and b, NaN when either is NaN (core/finite.hpp: nan_max). The device's buffers
/// start as NaN (every byte 0xFF), so a slot nobody wrote shows as NaN in max_abs_diff.
inline double worst(double a, double b) { return nan_max(a, b); }

/// The note line of a check that ran on the device.
inline std::string device_note(const kernels::ModelOps& ops) {
  const bool gpu = ops.name().starts_with("cuda");
  return fmt::format("device: {} ({}), float32 compute, float32 KV cache; tolerances that are not exact are "
                     "float32 ones", ops.name(),
                     gpu ? "kvlab's kernels, cuBLAS SGEMM" : "the CPU stand-in of the device operations, not a GPU");
}

}  // namespace kvlab::checks
