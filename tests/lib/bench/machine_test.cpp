// The machine measurement's helpers (lib/bench/machine): where a bandwidth curve turns flat, the
// median, and the measurements themselves on tiny sizes.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "bench/machine.hpp"

namespace bench_machine_test {

using namespace kvlab;

TEST_CASE("machine: flat_from finds where the bandwidth curve stops falling; median") {
  const std::vector<BandwidthPoint> curve{{1 << 20, 160e9}, {4 << 20, 100e9}, {32 << 20, 55e9},
                                          {64 << 20, 24e9}, {128 << 20, 8.8e9}, {256 << 20, 7.4e9},
                                          {512 << 20, 7.6e9}, {1024 << 20, 7.5e9}};
  CHECK(flat_from(curve, 0.15) == (256u << 20));  // 8.8 is 17% above the last 7.5
  CHECK(flat_from(curve, 0.20) == (128u << 20));
  CHECK(flat_from(curve, 0.01) == (1024u << 20));  // only the last point
  CHECK_THROWS(flat_from({}, 0.1));
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 2, 3}) == 2.5);
  // The measurements themselves run (tiny sizes) and give positive rates.
  CHECK(stream_bandwidth(StreamKernel::triad, 1 << 16, 1) > 0);
  CHECK(gemm_rate(32, 1) > 0);
  CHECK_THROWS_AS(stream_bandwidth(StreamKernel::copy, 8, 1), std::invalid_argument);
}

TEST_CASE("machine: the last-level cache size, as the kernel reports it, when it does") {
  const std::uint64_t llc = last_level_cache_bytes();
  std::ifstream sysfs("/sys/devices/system/cpu/cpu0/cache/index0/size");
  if (!sysfs) {
    MESSAGE("no cache sizes in sysfs here: only the sysconf fallback runs");
    return;
  }
  CHECK(llc >= (64u << 10));  // at least a 64 KiB cache, at most 16 GiB: a size, not a misread unit
  CHECK(llc <= (16ull << 30));
}

}  // namespace bench_machine_test
