#include "parity_command.hpp"

#include <iostream>
#include <limits>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "device/cuda_entry.hpp"
#include "device/device.hpp"
#include "device/parity.hpp"
#include "report/writers.hpp"
#include "framework/options.hpp"

namespace kvlab::app {

CLI::App* add_parity_command(CLI::App& app, ParityFlags& f) {
  auto* sub = app.add_subcommand("parity", "CUDA kernels against their float64 CPU references (skips without a GPU)");
  sub->footer(
      "Each kernel on fresh seeded random inputs over several shapes (odd sizes, one block, many blocks, "
      "GQA ratios 1, 4, 8, MQA; f32 and bf16 cache), its output buffer poisoned with NaN before the "
      "launch. Verdict: no NaN/Inf, then max |got - ref| / scale <= bound, the bound derived from the "
      "dtype (float32 gamma_n, bf16 storage 2^-8; docs/gpu.md). Exit 0 all passed or skipped, 1 a row failed.");
  sub->add_option("--seed", f.seed, "Seed of the random inputs (same seed, same inputs)")
      ->transform(kvlab::checks::IntRange(0, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--runner", f.runner,
                  "cuda (default: the GPU kernels) or cpu-f32 (a float32 CPU stand-in: tests the comparison)")
      ->check(CLI::IsMember({"cuda", "cpu-f32"}));
  sub->add_option("--format", f.format, "text (default), md, csv or json")
      ->check(CLI::IsMember({"text", "md", "csv", "json"}));
  return sub;
}

int run_parity_command(const ParityFlags& f, std::ostream& out) {
  std::string skipped, device = "cpu-f32 stand-in (not a GPU result)";
  std::unique_ptr<gpu::KernelRunner> runner;
  if (f.runner == "cpu-f32") {
    runner = std::make_unique<gpu::CpuF32Runner>();
  } else if (!cuda_compiled()) {
    skipped = "built without CUDA";
  } else {
    std::string why;
    const auto devices = cuda_devices(&why);
    if (devices.empty())
      skipped = "no CUDA device (" + why + ")";
    else
      device = devices.front(), runner = gpu::make_cuda_runner();
  }
  if (!skipped.empty()) {
    if (f.format == "json")
      out << nlohmann::json{{"command", "parity"}, {"skipped", skipped}, {"rows", nlohmann::json::array()}}.dump(2)
          << '\n';
    else
      out << "skipped: " << skipped << '\n';
    return 0;
  }
  std::vector<gpu::ParityRow> rows;
  try {
    rows = gpu::run_parity(*runner, static_cast<std::uint64_t>(f.seed));
  } catch (const kernels::CudaError& e) {
    std::cerr << "kvlab: parity: CUDA error: " << e.what() << '\n';
    return 2;
  }
  int failed = 0;
  Table t{fmt::format("kernel parity on {}, seed {}", device, f.seed),
          {"kernel", "shape", "cache", "max err", "bound", "err/bound", "NaN/Inf", "verdict"}, {}};
  nlohmann::json jrows = nlohmann::json::array();
  for (const auto& r : rows) {
    const auto& c = r.result;
    failed += !c.passed;
    const double ratio = c.bound > 0 ? c.error / c.bound : (c.error == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    t.rows.push_back({r.kernel, r.shape, r.dtype, c.error, c.bound, ratio,
                      static_cast<std::int64_t>(c.non_finite + c.poison_lost), std::string(c.passed ? "PASS" : "FAIL")});
    jrows.push_back({{"kernel", r.kernel}, {"shape", r.shape}, {"cache", r.dtype}, {"elements", c.n},
                     {"error", c.error}, {"bound", c.bound}, {"bound_derivation", r.bound_why},
                     {"non_finite", c.non_finite}, {"poison_lost", c.poison_lost}, {"worst_index", c.worst},
                     {"passed", c.passed}});
  }
  const int passed = static_cast<int>(rows.size()) - failed;
  if (f.format == "json") {
    out << nlohmann::json{{"command", "parity"}, {"device", device}, {"seed", f.seed}, {"rows", jrows},
                          {"passed", passed}, {"failed", failed}}
               .dump(2)
        << '\n';
  } else {
    write_table(out, t, parse_format(f.format));
    if (f.format != "csv")
      out << fmt::format("{} passed, {} failed. err = max |got - ref| / scale (scale: the sum of |terms| of each "
                         "output); bounds: docs/gpu.md\n", passed, failed);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace kvlab::app
