// Benchmarks: checks that time this machine (seconds to minutes) rather than reproduce a number,
// e.g. cpu-roofline (issue 9). `kvlab all` runs them only with --bench; ctest's verdict and the
// determinism test leave them out; tests/sweep.sh runs them with --quick.
//
// A check declares itself a benchmark beside its registration:
//   KVLAB_REGISTER_CHECK(505, CpuRoofline);
//   static const bool kIsBench = kvlab::checks::register_bench("cpu-roofline");
// (a registry flag rather than a virtual in Check, so that marking one check rebuilds one file).
#pragma once

#include <string>

#include "support/check.hpp"

namespace kvlab::checks {

/// Marks the check named `name` as a benchmark. Returns true (for a static initialiser).
bool register_bench(const std::string& name);

/// Whether `check` is a benchmark (registered with register_bench).
bool is_bench(const Check& check);

}  // namespace kvlab::checks
