#include "io/hardware.hpp"

#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/units.hpp"

namespace kvlab {

DeviceSpec resolve_device_flags(const HardwareFlags& f, const std::string& default_gpu,
                            const std::function<GpuSpec(const std::string&)>& load) {
  // Parse every unit first, so that a bad unit is named even when --gpu is bad too.
  std::optional<double> bandwidth, peak;
  std::optional<std::uint64_t> memory;
  if (f.bandwidth) bandwidth = parse_bandwidth("--bandwidth", *f.bandwidth);
  if (f.peak_flops) peak = parse_flops("--peak-flops", *f.peak_flops);
  if (f.memory) memory = parse_memory("--memory", *f.memory);

  DeviceSpec d;
  const bool defines = bandwidth || peak || memory;
  if (f.gpu || !defines) {
    const std::string name = f.gpu.value_or(default_gpu);
    if (name.empty()) throw InputError("--gpu: give a GPU (a catalogue name or FILE.json) or --bandwidth and --peak-flops");
    try {
      d.spec = load(name);
    } catch (const InputError& e) {
      throw InputError(std::string("--gpu: ") + e.what());
    }
    d.provenance = f.gpu && (f.gpu->find('/') != std::string::npos || f.gpu->ends_with(".json"))
                       ? fmt::format("file {}", printable(*f.gpu, 120))
                       : fmt::format("{} (catalogue)", d.spec.name);
  } else {
    if (!bandwidth || !peak) {
      std::string given;
      for (const auto& [flag, is_given] : {std::pair{"--bandwidth", bandwidth.has_value()},
                                           std::pair{"--peak-flops", peak.has_value()},
                                           std::pair{"--memory", memory.has_value()}})
        if (is_given) given += (given.empty() ? "" : ", ") + std::string(flag);
      throw InputError(fmt::format("{}: without --gpu, --bandwidth and --peak-flops together define the "
                                   "device (given: {}); or give --gpu NAME|FILE.json to override",
                                   !bandwidth ? "--bandwidth" : "--peak-flops", given));
    }
    d.spec.name = "custom";
    d.spec.description = "a device given by --bandwidth and --peak-flops";
    d.spec.source = "command-line flags";
    d.spec.bandwidth_bytes_per_s = *bandwidth;
    d.spec.bf16_flops_per_s = *peak;
    d.spec.fp32_flops_per_s = *peak;  // unknown; nothing in the roofline or plan uses it
    d.memory_known = memory.has_value();
    d.provenance = "flags";
  }
  if (bandwidth) d.spec.bandwidth_bytes_per_s = *bandwidth;
  if (peak) d.spec.bf16_flops_per_s = *peak;
  if (memory) d.spec.memory_bytes = *memory;
  if (f.gpu) {
    if (bandwidth) d.overridden.push_back("--bandwidth");
    if (peak) d.overridden.push_back("--peak-flops");
    if (memory) d.overridden.push_back("--memory");
  }
  std::string flags_text;
  if (bandwidth) flags_text += fmt::format(" --bandwidth {:.4g} TB/s", *bandwidth / 1e12);
  if (peak) flags_text += fmt::format(" --peak-flops {:.4g} TFLOP/s", *peak / 1e12);
  if (memory) flags_text += fmt::format(" --memory {:.4g} GB", static_cast<double>(*memory) / 1e9);
  if (!flags_text.empty()) d.provenance += (f.gpu ? ", overridden by" : ":") + flags_text;
  return d;
}

}  // namespace kvlab
