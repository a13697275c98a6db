// The work budget: every accepted combination of a command's options ends in under a minute on the
// reference machine (2 shared x86-64 cores, docs/reliability.md "Work budgets"); a combination
// whose estimated work is over it is refused before any work, with one line that names the flags,
// the estimate and the budget, and what fits (exit 2, like any bad input).
//
// An estimate is work units (FLOPs, bytes, samples x model size, ...) divided by a rate measured on
// the reference machine and then halved (kBudgetMargin), so that a run the estimate accepts takes
// at most about half the budget there. A check states its model next to its options; a unit test
// pins each model's largest accepted run, and `tests/sweep.sh --max` runs every option at its
// largest accepted value and measures the CPU time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace kvlab {

/// Seconds of CPU (user + sys) that one run may take on the reference machine.
inline constexpr double kWorkBudgetSeconds = 60.0;
/// Estimates assume rates this many times slower than measured on the reference machine.
inline constexpr double kBudgetMargin = 2.0;
/// Bytes a run may allocate for its own data (weights, caches, arrays): 4 GiB, a sixth of the
/// reference machine's memory, which six developers share.
inline constexpr double kMemoryBudgetBytes = 4.0 * 1024 * 1024 * 1024;

/// Rates of the reference machine, measured there (docs/reliability.md, "Work budgets"); an
/// estimate divides work by them and multiplies by kBudgetMargin.
/// STREAM-style bytes per second (first touch included), every thread: `kvlab machine`.
inline constexpr double kRefStreamBytesPerSecond = 4e9;
/// float32 GEMM FLOP/s through the fast path's library, every thread: `kvlab machine`.
inline constexpr double kRefGemmFlopsPerSecond = 30e9;
/// MiniGPT forward FLOP/s (model/work.hpp's count) of the reference path (Eigen, float32 or
/// float64, one thread): the slowest of a training forward, a cached decode step and a sampling loop.
inline constexpr double kRefModelFlopsPerSecond = 2e9;
/// Seeded N(0, 1) float draws per second (a MiniGPT's initial weights, a benchmark's cache), one
/// thread.
inline constexpr double kRefRandomFloatsPerSecond = 50e6;

/// Throws InputError when `seconds` (an estimate already including kBudgetMargin) is over
/// kWorkBudgetSeconds: "FLAGS: about N s of work, over the 60 s budget; HINT". `flags` names the
/// options as the user typed them with their values ("--windows 4096 x --weights F"); `hint` says
/// what fits ("at most --windows 1200 with this model"). Non-finite `seconds` counts as over.
void require_work_budget(double seconds, const std::string& flags, const std::string& hint);

/// Throws InputError when `bytes` is over kMemoryBudgetBytes: "FLAGS: about N GiB of memory, over
/// the 4 GiB budget; HINT".
void require_memory_budget(double bytes, const std::string& flags, const std::string& hint);

/// The largest n in [lo, hi] with fits(n), for an increasing cost (fits(n) implies fits(n - 1));
/// lo - 1 when not even lo fits. Bisection: O(log(hi - lo)) calls. For the "at most" hints.
std::int64_t largest_fitting(std::int64_t lo, std::int64_t hi, const std::function<bool(std::int64_t)>& fits);

/// Whether `seconds` (an estimate) is within kWorkBudgetSeconds.
inline bool within_work_budget(double seconds) { return seconds <= kWorkBudgetSeconds; }

}  // namespace kvlab
