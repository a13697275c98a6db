#include "machine_command.hpp"

#include <filesystem>
#include <algorithm>
#include <iostream>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/machine.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/work_budget.hpp"
#include "io/catalogue.hpp"
#include "io/safe_write.hpp"
#include "report/writers.hpp"
#include "framework/options.hpp"

namespace kvlab::app {

CLI::App* add_machine_command(CLI::App& app, MachineFlags& f) {
  auto* sub = app.add_subcommand("machine",
                                 "Measure this machine's memory bandwidth and float32 GEMM rate (a hardware entry)");
  sub->footer(
      "STREAM-style copy and triad (McCalpin 1995) over arrays far larger than the caches, on every "
      "thread (OMP_NUM_THREADS to change), and an n x n float32 GEMM through the library kvlab's fast "
      "path uses. Each figure is the median of --repeats runs, each run the best of its passes; the "
      "spread is printed. --curve also sweeps the working set to show where the caches stop "
      "helping (a VM may report the host's L3). --save writes the entry for `kvlab roofline --gpu "
      "local` and `kvlab cpu-roofline` (path: $KVLAB_LOCAL_HARDWARE, else ~/.config/kvlab/local.json).");
  sub->add_option("--size-mib", f.size_mib, "MiB per STREAM array, 16 to 16384 (default 512)")
      ->transform(kvlab::checks::IntRange(16, 16384));
  sub->add_option("--repeats", f.repeats, "Independent runs of each measurement, 1 to 100 (default 5)")
      ->transform(kvlab::checks::IntRange(1, 100));
  sub->add_option("--gemm-n", f.gemm_n, "GEMM size n (n x n x n), 64 to 8192 (default 2048)")
      ->transform(kvlab::checks::IntRange(64, 8192));
  sub->add_flag("--curve", f.curve, "Also the copy bandwidth over working sets from 256 KiB up");
  sub->add_flag("--save", f.save, "Write the entry where `--gpu local` finds it");
  sub->add_option("--format", f.format, "text (default) or json (the entry only)")
      ->check(CLI::IsMember({"text", "json"}));
  return sub;
}

int run_machine(const MachineFlags& f, std::ostream& out) {
  MachineOptions o;
  o.stream_bytes_per_array = static_cast<std::uint64_t>(f.size_mib) << 20;
  o.repeats = f.repeats;
  o.gemm_n = f.gemm_n;
  o.curve = f.curve;
  // The work budget (core/work_budget.hpp), before any work: the largest sizes and 100 repeats
  // would stream terabytes and take an hour.
  const std::string flags = fmt::format("--size-mib {} x --repeats {} x --gemm-n {}{}", f.size_mib, f.repeats, f.gemm_n,
                                        f.curve ? " x --curve" : "");
  const MachineWork work = machine_work(o);
  require_memory_budget(work.peak_bytes, flags,
                        fmt::format("at most --size-mib {} (three arrays)",
                                    static_cast<std::int64_t>(kMemoryBudgetBytes / 3 / (1 << 20))));
  const double seconds = machine_work_seconds(o);
  if (!within_work_budget(seconds)) {
    MachineOptions one = o;
    one.repeats = 1;
    std::string hint = "smaller --size-mib or --gemm-n: one repeat alone is over it";
    if (within_work_budget(machine_work_seconds(one))) {
      const auto most = largest_fitting(1, f.repeats, [&](std::int64_t r) {
        MachineOptions t = o;
        t.repeats = static_cast<int>(r);
        return within_work_budget(machine_work_seconds(t));
      });
      hint = fmt::format("at most --repeats {} at these sizes", most);
    }
    require_work_budget(seconds, flags, hint);
  }
  // --save's target is checked before the measurement (which takes a while) and written at the
  // end through a temporary renamed into place: the old entry stays until the new one is complete.
  std::string save_path;
  if (f.save) {
    save_path = local_hardware_path();
    std::error_code ec;
    const auto parent = std::filesystem::path(save_path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    try {
      check_output_target(save_path, "");
    } catch (const InputError& e) {
      throw InputError(fmt::format("--save: {} (set KVLAB_LOCAL_HARDWARE to another path)", e.what()));
    }
  }
  // On a terminal: about how long, up front, then the measurements' progress and the time left.
  Progress progress = Progress::on_stderr("machine", 1.0);
  progress.announce(fmt::format("about {} on the reference machine ({} repeats of STREAM copy and triad over 3 x {} "
                                "MiB and GEMM n = {}{})",
                                duration_text(seconds), f.repeats, f.size_mib, f.gemm_n,
                                f.curve ? ", then the bandwidth curve" : ""));
  o.on_step = [&progress](int done, int steps) {
    progress.update(static_cast<double>(done) / steps, fmt::format("step {}/{}", done, steps));
  };
  const MachineMeasurement m = measure_machine(o);
  progress.finish();
  const nlohmann::json entry = hardware_entry(m);
  if (f.format == "json") {
    out << json_text(entry) << '\n';
  } else {
    auto spread = [](const std::vector<double>& v, double scale) {
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      return fmt::format("{:.4g} .. {:.4g}", *lo / scale, *hi / scale);
    };
    out << fmt::format("machine: {} ({} threads); load average {:.2f} at the start\n",
                       m.cpu_model.empty() ? "unknown CPU" : m.cpu_model, m.threads, m.load_average);
    out << fmt::format("  STREAM copy   {:8.3f} GB/s   (median of {}; runs {} GB/s; 2 x {} MiB arrays)\n",
                       m.copy_bytes_per_s / 1e9, m.copy_runs.size(), spread(m.copy_runs, 1e9), f.size_mib);
    out << fmt::format("  STREAM triad  {:8.3f} GB/s   (runs {} GB/s)\n", m.triad_bytes_per_s / 1e9,
                       spread(m.triad_runs, 1e9));
    out << fmt::format("  f32 GEMM      {:8.2f} GFLOP/s (n = {}, {}; runs {} GFLOP/s)\n", m.gemm_flops_per_s / 1e9,
                       m.gemm_n, m.gemm_backend, spread(m.gemm_runs, 1e9));
    out << fmt::format("  ridge point   {:8.2f} FLOP/B (GEMM rate / copy bandwidth)\n",
                       m.gemm_flops_per_s / m.copy_bytes_per_s);
    if (m.reported_llc_bytes > 0)
      out << fmt::format("  reported last-level cache: {:.4g} MiB (as the kernel reports it)\n", m.reported_llc_bytes / 1048576.0);
    if (!m.curve.empty()) {
      out << "  copy bandwidth over the working set (both arrays):\n";
      for (const auto& p : m.curve)
        out << fmt::format("    {:10.4g} MiB  {:8.3f} GB/s\n", p.total_bytes / 1048576.0, p.copy_bytes_per_s / 1e9);
      out << fmt::format("  flat (within 15% of the largest) from {:.4g} MiB: the caches stop helping below that\n",
                         m.flat_from_bytes / 1048576.0);
    }
    out << "hardware entry (data/hardware schema):\n" << json_text(entry) << '\n';
  }
  if (f.save) {
    const std::string path = save_path;
    try {
      safe_write_file(path, json_text(entry) + "\n", "");
    } catch (const InputError& e) {
      throw InputError(fmt::format("--save: {} (set KVLAB_LOCAL_HARDWARE to another path)", e.what()));
    }
    (f.format == "json" ? std::cerr : out) << "saved to " << shown_path(path) << " (kvlab roofline --gpu local)\n";
  }
  return 0;
}

}  // namespace kvlab::app
