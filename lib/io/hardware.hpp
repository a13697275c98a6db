// A device as the student describes it: a catalogue name or a hardware file (`--gpu`), and the
// flags `--bandwidth`, `--peak-flops`, `--memory` (units: io/units.hpp) that override its figures
// or, without `--gpu`, define the device on their own. Used by `kvlab roofline` and `kvlab plan`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/catalogue.hpp"

namespace kvlab {

/// The hardware flags as typed (units not yet parsed).
struct HardwareFlags {
  std::optional<std::string> gpu;         ///< --gpu NAME | FILE.json
  std::optional<std::string> bandwidth;   ///< --bandwidth, e.g. "3.35TB/s"
  std::optional<std::string> peak_flops;  ///< --peak-flops, e.g. "989.5TFLOPS"
  std::optional<std::string> memory;      ///< --memory, e.g. "80GiB"

  /// True when any of the four was given.
  bool any() const { return gpu || bandwidth || peak_flops || memory; }
};

/// A resolved device and where its figures came from.
struct DeviceSpec {
  GpuSpec spec;               ///< the figures used; spec.bf16_flops_per_s is the peak the roofline uses
  bool memory_known = true;   ///< false for a device from flags alone without --memory (then
                              ///< spec.memory_bytes is 0 and nothing may be sized against it)
  std::vector<std::string> overridden;  ///< e.g. {"--bandwidth"}: flags that replaced a figure
  /// One line for reports: "h100-sxm (catalogue)", "file my.json", "--bandwidth 1TB/s
  /// --peak-flops 100TFLOPS", with the overrides named.
  std::string provenance;
};

/// Resolves the device: `flags.gpu` through `load` (a catalogue name, "local" or a file: load_gpu),
/// else `default_gpu` when it is non-empty and no flag defines the device; then each unit flag
/// replaces its figure (--peak-flops: the dense bf16 rate; --memory: memory_bytes). Without --gpu,
/// --bandwidth and --peak-flops define a device named "custom" (fp32 rate unknown: set to the
/// peak). Throws InputError naming the flag: a unit that does not parse or is out of range
/// (io/units.hpp), --bandwidth without --peak-flops or the reverse when no --gpu gives the other,
/// and --gpu's own errors prefixed "--gpu: ".
DeviceSpec resolve_device_flags(const HardwareFlags& flags, const std::string& default_gpu,
                            const std::function<GpuSpec(const std::string&)>& load = load_gpu);

}  // namespace kvlab
