// This machine's roofline, measured (004 §1.5, 000 §3.1): memory bandwidth by STREAM-style
// copy and triad kernels (McCalpin, "Memory Bandwidth and Machine Balance", IEEE TCCA 1995) over
// buffers many times the last-level cache, on every core; the float32 matrix-product rate by a
// large GEMM through the library the fast path uses (model/f32_kernels.hpp); and the bandwidth
// curve over buffer sizes, whose knee is where the caches stop helping (the "effective LLC": a
// VM's lscpu may report the host's L3, not the share this machine gets).
//
// Units: bytes, seconds, bytes/s, FLOP/s. STREAM's byte convention: copy moves 2 x 8 bytes per
// element (read a, write b), triad 3 x 8 (read b and c, write a); write-allocate traffic is not
// counted, as STREAM does not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/stats.hpp"  // median, which the machine's figures are

namespace kvlab {

/// A clock in seconds (monotonic); injectable so the logic can be tested on synthetic timings.
using Clock = std::function<double()>;
/// std::chrono::steady_clock in seconds.
double steady_seconds();

enum class StreamKernel { copy, triad };

/// Bytes/s of `kernel` over arrays of `bytes_per_array` bytes each (float64 elements), on every
/// OpenMP thread (static split, first-touch by the same threads), best of `repeats` timed passes
/// after one untimed pass. Throws std::invalid_argument for bytes_per_array < 64 or repeats < 1.
double stream_bandwidth(StreamKernel kernel, std::uint64_t bytes_per_array, int repeats);

/// A STREAM copy over two arrays allocated (huge pages, first touch by the OpenMP threads) and
/// warmed once, then timed pass by pass: the roof measured between other timings (copy, decode,
/// copy, decode, ...), so that each timing is paired with a roof of the same moment on a shared
/// machine. Throws std::invalid_argument for bytes_per_array < 64.
class CopyProbe {
 public:
  explicit CopyProbe(std::uint64_t bytes_per_array);
  ~CopyProbe();
  CopyProbe(const CopyProbe&) = delete;
  CopyProbe& operator=(const CopyProbe&) = delete;
  /// Bytes/s of one timed copy pass (2 x 8 bytes per element, STREAM's convention).
  double measure();

 private:
  double *a_ = nullptr, *b_ = nullptr;
  std::ptrdiff_t n_ = 0;
};

/// Float32 FLOP/s of an n x n x n product (2 n^3 FLOPs) through linear_f32 (OpenBLAS sgemm when
/// built with it, else Eigen split across threads), best of `repeats`. Throws
/// std::invalid_argument for n < 16 or repeats < 1.
double gemm_rate(int n, int repeats);

/// One point of the bandwidth curve: copy bandwidth with both arrays together `total_bytes`.
struct BandwidthPoint {
  std::uint64_t total_bytes = 0;
  double copy_bytes_per_s = 0.0;
};

/// The smallest working set from which every larger point of `curve` (sorted by size) is within
/// `within` (relative) of the largest one's bandwidth: where the curve has flattened to memory.
/// The cache that matters is below it. Throws std::invalid_argument for an empty curve.
std::uint64_t flat_from(const std::vector<BandwidthPoint>& curve, double within);

/// What `kvlab machine` measures.
struct MachineMeasurement {
  int threads = 1;
  std::uint64_t stream_bytes_per_array = 0;  ///< array size of the copy/triad figures
  std::vector<double> copy_runs, triad_runs;  ///< bytes/s, one per repeat (best of each)
  double copy_bytes_per_s = 0.0;              ///< median of copy_runs
  double triad_bytes_per_s = 0.0;             ///< median of triad_runs
  int gemm_n = 0;
  std::vector<double> gemm_runs;              ///< FLOP/s
  double gemm_flops_per_s = 0.0;              ///< median of gemm_runs
  std::vector<BandwidthPoint> curve;          ///< empty unless asked for
  std::uint64_t flat_from_bytes = 0;          ///< flat_from(curve, 0.15) (0 without a curve)
  std::string cpu_model;                      ///< /proc/cpuinfo "model name" (may be empty)
  std::uint64_t reported_llc_bytes = 0;       ///< last_level_cache_bytes(), 0 when unknown
  std::uint64_t memory_bytes = 0;             ///< physical memory (sysconf), 0 when unknown
  std::string gemm_backend;                   ///< fast_gemm_backend()
  double load_average = -1.0;                 ///< 1-minute load average at the start (-1 unknown)
};

struct MachineOptions {
  std::uint64_t stream_bytes_per_array = 512ull << 20;  ///< default 512 MiB per array
  int repeats = 5;      ///< independent measurements (each the best of 3 passes)
  int gemm_n = 2048;
  bool curve = false;   ///< also sweep the copy bandwidth from 256 KiB to stream size
  /// Called after each repeat and each curve point with (steps done, steps in all): a progress
  /// line's hook (core/progress.hpp); empty = not called.
  std::function<void(int, int)> on_step;
};

/// This CPU's name, /proc/cpuinfo's first "model name" line; empty where there is none.
std::string cpu_model_name();

/// The 1-minute load average (getloadavg), or -1 when the system does not say.
double load_average_1min();

/// The size of the last-level cache in bytes, 0 when unknown: the highest data or unified level
/// in sysfs (/sys/devices/system/cpu/cpu0/cache, what the kernel was told: a VM's own figure),
/// else sysconf's L3 (or L2), which glibc reads from CPUID and which in a VM can be the host's
/// (measured: 256 MiB from sysconf where sysfs and lscpu say 32 MiB).
std::uint64_t last_level_cache_bytes();

/// Runs the measurements. Throws std::invalid_argument for sizes out of range (see above).
MachineMeasurement measure_machine(const MachineOptions& o);

/// What measure_machine(o) does, counted: bytes written and read by the STREAM kernels (first touch
/// of the three arrays included, every pass, the curve's points), float32 GEMM FLOPs (2n³ per
/// call), and the largest amount of memory held at once (three STREAM arrays or three n x n
/// matrices). For the work budget (core/work_budget.hpp).
struct MachineWork {
  double stream_bytes = 0.0;
  double gemm_flops = 0.0;
  double peak_bytes = 0.0;
};
MachineWork machine_work(const MachineOptions& o);

/// Seconds measure_machine(o) takes on the reference machine, margin included
/// (core/work_budget.hpp: kRefStreamBytesPerSecond, kRefGemmFlopsPerSecond, kBudgetMargin).
double machine_work_seconds(const MachineOptions& o);

/// The hardware entry (data/hardware/ schema: name, description, memory_type, memory_bytes,
/// bandwidth_bytes_per_s, bf16_flops_per_s, fp32_flops_per_s, source) named "local": the
/// bandwidth is the measured copy figure, both FLOP rates the measured float32 GEMM rate (a CPU
/// has no faster bf16 path through kvlab), plus a "measured" object with the raw figures.
nlohmann::json hardware_entry(const MachineMeasurement& m);

}  // namespace kvlab
