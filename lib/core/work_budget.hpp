// The work budget: every accepted combination of a command's options ends in under a minute on the
// reference machine (2 shared x86-64 cores, docs/reliability.md "Work budgets"); a combination
// whose estimated work is over it is refused before any work, with one line that names the flags,
// the estimate and the budget, and what fits (exit 2, like any bad input).
//
// An estimate is work units (FLOPs, bytes, samples x model size, ...) divided by a rate of the
// reference machine: CPU-time rates (work / (user + sys seconds), every thread counted) measured
// there while five other developers' builds kept it at load 12 to 15, which are lower than a quiet
// machine's. The budget is CPU time: a run within it ends in under 60 s of wall-clock on a quiet
// 2-core machine whatever its threads do. A check states its estimate next to its options; the
// unit tests pin the estimates of the defaults and of the largest values, and `tests/sweep.sh
// --max` runs every option at its largest accepted value and measures the CPU time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace kvlab {

/// Seconds of CPU (user + sys) that one run may take on the reference machine, by default.
inline constexpr double kWorkBudgetSeconds = 60.0;
/// The budget in force: kWorkBudgetSeconds, or the environment variable KVLAB_WORK_BUDGET (seconds,
/// 1 to 86400) for a user who wants a long run on purpose (e.g. `KVLAB_WORK_BUDGET=900 kvlab
/// gqa-meanpool --long`, the uptraining of 004 §B.4). Read once. Throws InputError naming
/// KVLAB_WORK_BUDGET when it is set to anything else.
double work_budget_seconds();
/// Estimates multiply the work by this before dividing by a rate. 1: the rates themselves were
/// measured under load (see above); an estimate that is an upper bound by construction (spec-real's
/// generation) adds its own factor where it is made.
inline constexpr double kBudgetMargin = 1.0;
/// Bytes a run may allocate for its own data (weights, caches, arrays): 4 GiB, a sixth of the
/// reference machine's memory, which six developers share.
inline constexpr double kMemoryBudgetBytes = 4.0 * 1024 * 1024 * 1024;

/// Rates of the reference machine, measured there (docs/reliability.md, "Work budgets"); an
/// estimate divides work by them and multiplies by kBudgetMargin.
/// STREAM-style bytes per CPU second (first touch included; 3.9e9 measured with `kvlab machine
/// --size-mib 512 --repeats 1`).
inline constexpr double kRefStreamBytesPerSecond = 3e9;
/// float32 GEMM FLOPs per CPU second through the fast path's library (45e9 measured with `kvlab
/// machine --gemm-n 2048`).
inline constexpr double kRefGemmFlopsPerSecond = 30e9;
/// MiniGPT forward FLOPs (model/work.hpp's count) per CPU second on the reference path (Eigen,
/// float32): 8.4e9 measured on a window of the trained target (`kvlab perplexity`), 8.6e9 on
/// spec-real's teacher-forced windows; short forwards (a few tokens) run at half that, and their
/// estimates count them twice.
inline constexpr double kRefModelFlopsPerSecond = 8e9;
/// Seeded N(0, 1) float32 draws per CPU second, with the copy into the fast layout (a benchmark's
/// MiniGPT<float> and cache; 25e6 measured with cpu-roofline's default model).
inline constexpr double kRefRandomFloatsPerSecond = 15e6;

/// Throws InputError when `seconds` (an estimate already including kBudgetMargin) is over
/// work_budget_seconds(): "FLAGS: about N s of work, over the 60 s budget; HINT (KVLAB_WORK_BUDGET=...
/// raises it)". `flags` names the
/// options as the user typed them with their values ("--windows 4096 x --weights F"); `hint` says
/// what fits ("at most --windows 1200 with this model"). Non-finite `seconds` counts as over.
void require_work_budget(double seconds, const std::string& flags, const std::string& hint);

/// Throws InputError when `bytes` is over kMemoryBudgetBytes: "FLAGS: about N GiB of memory, over
/// the 4 GiB budget; HINT".
void require_memory_budget(double bytes, const std::string& flags, const std::string& hint);

/// The largest n in [lo, hi] with fits(n), for an increasing cost (fits(n) implies fits(n - 1));
/// lo - 1 when not even lo fits. Bisection: O(log(hi - lo)) calls. For the "at most" hints.
std::int64_t largest_fitting(std::int64_t lo, std::int64_t hi, const std::function<bool(std::int64_t)>& fits);

/// Whether `seconds` (an estimate) is within work_budget_seconds().
inline bool within_work_budget(double seconds) { return seconds <= work_budget_seconds(); }

}  // namespace kvlab
