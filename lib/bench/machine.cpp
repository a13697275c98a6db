#include "bench/machine.hpp"

#include "core/work_budget.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/huge_pages.hpp"
#include "model/f32_kernels.hpp"
#include "model/fast_gpt.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kvlab {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double stream_bandwidth(StreamKernel kernel, std::uint64_t bytes_per_array, int repeats) {
  if (bytes_per_array < 64 || repeats < 1) throw std::invalid_argument("stream_bandwidth: bytes >= 64, repeats >= 1");
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(bytes_per_array / sizeof(double));
  // Uninitialised allocation (huge pages, as the fast path's weights: core/huge_pages.hpp), then
  // first touch by the threads that will stream each part.
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(double);
  const auto release = [bytes](double* p) { free_streamed(p, bytes); };
  using Buffer = std::unique_ptr<double[], decltype(release)>;
  Buffer a(static_cast<double*>(allocate_streamed(bytes)), release), b(static_cast<double*>(allocate_streamed(bytes)), release),
      c(static_cast<double*>(allocate_streamed(bytes)), release);
  double *pa = a.get(), *pb = b.get(), *pc = c.get();
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) pa[i] = 1.0, pb[i] = 2.0, pc[i] = 0.5;
  const double s = 3.0;
  double best = 1e300;
  for (int r = 0; r <= repeats; ++r) {
    const double t0 = steady_seconds();
    if (kernel == StreamKernel::copy) {
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t i = 0; i < n; ++i) pb[i] = pa[i];
    } else {
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    }
    const double dt = steady_seconds() - t0;
    if (r > 0) best = std::min(best, dt);  // pass 0 warms the pages and the threads
  }
  const double moved = (kernel == StreamKernel::copy ? 2.0 : 3.0) * static_cast<double>(n) * sizeof(double);
  return moved / best;
}

CopyProbe::CopyProbe(std::uint64_t bytes_per_array) {
  if (bytes_per_array < 64) throw std::invalid_argument("CopyProbe: bytes >= 64");
  n_ = static_cast<std::ptrdiff_t>(bytes_per_array / sizeof(double));
  const std::size_t bytes = static_cast<std::size_t>(n_) * sizeof(double);
  a_ = static_cast<double*>(allocate_streamed(bytes));
  try {
    b_ = static_cast<double*>(allocate_streamed(bytes));
  } catch (...) {
    free_streamed(a_, bytes);
    throw;
  }
  double *pa = a_, *pb = b_;
  const std::ptrdiff_t n = n_;
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) pa[i] = 1.0, pb[i] = 2.0;
  measure();  // warms the pages and the threads
}

CopyProbe::~CopyProbe() {
  const std::size_t bytes = static_cast<std::size_t>(n_) * sizeof(double);
  free_streamed(a_, bytes);
  free_streamed(b_, bytes);
}

double CopyProbe::measure() {
  double *pa = a_, *pb = b_;
  const std::ptrdiff_t n = n_;
  const double t0 = steady_seconds();
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) pb[i] = pa[i];
  const double dt = steady_seconds() - t0;
  return 2.0 * static_cast<double>(n) * sizeof(double) / dt;
}

double gemm_rate(int n, int repeats) {
  if (n < 16 || repeats < 1) throw std::invalid_argument("gemm_rate: n >= 16, repeats >= 1");
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<float> a(nn), b(nn), c(nn);
  for (std::size_t i = 0; i < nn; ++i) a[i] = static_cast<float>(i % 7) * 0.1f, b[i] = static_cast<float>(i % 5) * 0.2f;
  double best = 1e300;
  for (int r = 0; r <= repeats; ++r) {
    const double t0 = steady_seconds();
    linear_f32(a.data(), n, n, b.data(), nullptr, n, c.data(), n);
    const double dt = steady_seconds() - t0;
    if (r > 0) best = std::min(best, dt);
  }
  return 2.0 * static_cast<double>(n) * n * n / best;
}

std::uint64_t flat_from(const std::vector<BandwidthPoint>& curve, double within) {
  if (curve.empty()) throw std::invalid_argument("flat_from: empty curve");
  const double last = curve.back().copy_bytes_per_s;
  std::size_t i = curve.size() - 1;
  while (i > 0 && std::abs(curve[i - 1].copy_bytes_per_s - last) <= within * last) --i;
  return curve[i].total_bytes;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      const auto name = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
      if (name != std::string::npos) return line.substr(name);
    }
  return {};
}

std::uint64_t last_level_cache_bytes() {
  // sysfs: the cache levels the kernel was told of (a VM's own), index0, index1, ... until one is missing.
  std::uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_in >> level) || !(size_in >> size)) break;
    type_in >> type;
    if (type == "Instruction" || level < best_level) continue;
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(size, &used);
    } catch (const std::exception&) {
      continue;
    }
    const std::string unit = size.substr(used);
    const std::uint64_t bytes = unit == "K" ? value << 10 : unit == "M" ? value << 20 : unit.empty() ? value : 0;
    if (bytes > 0) best = bytes, best_level = level;
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (llc > 0) return static_cast<std::uint64_t>(llc);
#endif
  return 0;
}

double load_average_1min() {
  double load[1];
  return getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

namespace {

/// Bytes one stream_bandwidth call moves: the first touch of 3 arrays, then repeats + 1 passes.
double stream_call_bytes(StreamKernel kernel, double bytes_per_array, int repeats) {
  return 3.0 * bytes_per_array + (repeats + 1) * (kernel == StreamKernel::copy ? 2.0 : 3.0) * bytes_per_array;
}

}  // namespace

MachineWork machine_work(const MachineOptions& o) {
  MachineWork w;
  const double b = static_cast<double>(o.stream_bytes_per_array), n = o.gemm_n;
  w.stream_bytes = o.repeats * (stream_call_bytes(StreamKernel::copy, b, 3) + stream_call_bytes(StreamKernel::triad, b, 3));
  w.gemm_flops = o.repeats * 3.0 * 2.0 * n * n * n;  // gemm_rate(n, 2): 3 calls
  w.peak_bytes = std::max(3.0 * b, 3.0 * n * n * sizeof(float));
  if (o.curve)
    for (std::uint64_t total = 256ull << 10; total <= 2 * o.stream_bytes_per_array; total *= 2) {
      const int passes = static_cast<int>(std::clamp<std::uint64_t>((1ull << 31) / total, 3, 200));
      w.stream_bytes += stream_call_bytes(StreamKernel::copy, static_cast<double>(total / 2), passes);
    }
  return w;
}

double machine_work_seconds(const MachineOptions& o) {
  const MachineWork w = machine_work(o);
  return kBudgetMargin * (w.stream_bytes / kRefStreamBytesPerSecond + w.gemm_flops / kRefGemmFlopsPerSecond);
}

MachineMeasurement measure_machine(const MachineOptions& o) {
  if (o.repeats < 1 || o.repeats > 1000) throw std::invalid_argument("measure_machine: repeats in [1, 1000]");
  MachineMeasurement m;
  m.threads = fast_threads();
  m.cpu_model = cpu_model_name();
  m.gemm_backend = fast_gemm_backend();
  m.load_average = load_average_1min();
  m.reported_llc_bytes = last_level_cache_bytes();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) m.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  m.stream_bytes_per_array = o.stream_bytes_per_array;
  m.gemm_n = o.gemm_n;
  int curve_points = 0;
  if (o.curve)
    for (std::uint64_t total = 256ull << 10; total <= 2 * o.stream_bytes_per_array; total *= 2) ++curve_points;
  const int steps = o.repeats + curve_points;
  int done = 0;
  for (int r = 0; r < o.repeats; ++r) {  // interleaved, so a burst of load hits all three alike
    m.copy_runs.push_back(stream_bandwidth(StreamKernel::copy, o.stream_bytes_per_array, 3));
    m.triad_runs.push_back(stream_bandwidth(StreamKernel::triad, o.stream_bytes_per_array, 3));
    m.gemm_runs.push_back(gemm_rate(o.gemm_n, 2));
    if (o.on_step) o.on_step(++done, steps);
  }
  m.copy_bytes_per_s = median(m.copy_runs);
  m.triad_bytes_per_s = median(m.triad_runs);
  m.gemm_flops_per_s = median(m.gemm_runs);
  if (o.curve) {
    for (std::uint64_t total = 256ull << 10; total <= 2 * o.stream_bytes_per_array; total *= 2) {
      const int passes = static_cast<int>(std::clamp<std::uint64_t>((1ull << 31) / total, 3, 200));
      m.curve.push_back({total, stream_bandwidth(StreamKernel::copy, total / 2, passes)});
      if (o.on_step) o.on_step(++done, steps);
    }
    m.flat_from_bytes = flat_from(m.curve, 0.15);
  }
  return m;
}

nlohmann::json hardware_entry(const MachineMeasurement& m) {
  nlohmann::json j;
  j["name"] = "local";
  j["description"] = fmt::format("this machine, measured by `kvlab machine`: {}{} threads",
                                 m.cpu_model.empty() ? "" : m.cpu_model + ", ", m.threads);
  j["memory_type"] = "DRAM";
  j["memory_bytes"] = m.memory_bytes > 0 ? m.memory_bytes : std::uint64_t{1};
  j["bandwidth_bytes_per_s"] = m.copy_bytes_per_s;
  j["bf16_flops_per_s"] = m.gemm_flops_per_s;
  j["fp32_flops_per_s"] = m.gemm_flops_per_s;
  j["source"] = fmt::format("kvlab machine: STREAM copy over 2 x {} MiB, float32 GEMM n = {} ({}); "
                            "medians of {} runs", m.stream_bytes_per_array >> 20, m.gemm_n, m.gemm_backend,
                            m.copy_runs.size());
  nlohmann::json meas;
  meas["threads"] = m.threads;
  meas["copy_bytes_per_s"] = m.copy_runs;
  meas["triad_bytes_per_s"] = m.triad_runs;
  meas["gemm_flops_per_s"] = m.gemm_runs;
  meas["reported_llc_bytes"] = m.reported_llc_bytes;
  if (m.flat_from_bytes > 0) meas["bandwidth_flat_from_bytes"] = m.flat_from_bytes;
  if (m.load_average >= 0) meas["load_average_1min"] = m.load_average;
  j["measured"] = meas;
  return j;
}

}  // namespace kvlab
