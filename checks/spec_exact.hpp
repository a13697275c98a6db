// spec-exact: options and the pure run function (see spec_exact.cpp); `faults` break the loop on
// purpose for the unit tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/gpt.hpp"

#include "spec/loop.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct SpecExactOptions {
  std::int64_t samples = 5'000;  ///< generated sequences per sampler
  int new_tokens = 2;             ///< tokens per sequence (V^new_tokens outcomes)
  int k = 2;                      ///< draft tokens per step
  double temperature = 0.1;       ///< the target's (and the soft draft's) temperature
};

/// Runs the check on the seeded random pair (V = 8), or on ctx.weights (target) and
/// ctx.draft_weights (draft) given together (same vocabulary). Throws InputError for options out
/// of range, a run whose TV bound covers [0, 1], V^N over 2^20 outcomes, or a bad pair.
Result run_spec_exact(const SpecExactOptions& opts, const RunContext& ctx,
                      const spec::SpecFaults& faults = {});

/// The exactness test's core on any pair (spec-exact; spec-real runs it on the trained pair):
/// enumerates the target's exact law of o.new_tokens tokens after `prompt` (V^N outcomes, at most
/// 2^20; over 4096, outcomes expected fewer than 5 times in o.samples draws are pooled into one
/// cell fixed before sampling), draws o.samples sequences from the speculative loop with a soft
/// draft (K = 1 and o.k) and a greedy draft (K = o.k), plus direct sampling when `with_direct`, and
/// adds to `r` per sampler: TV over the cells below the Bretagnolle–Huber–Carol bound and Pearson's
/// chi-square below its critical value, `false_alarm` split evenly (Bonferroni) over the rows.
/// `on_sample`, when set, is called after each drawn sequence with the count drawn so far over
/// every sampler (3 or 4 × o.samples in all): a progress line's hook.
/// Throws InputError when V^N is over the limit or the TV bound is >= 1 (too few samples).
/// Source: 000 §7.6, §A.2 [e]; Leviathan et al. 2023, Appendix A.1.
template <class T>
void spec_exactness_rows(Result& r, const MiniGPT<T>& target, const MiniGPT<T>& draft, const std::vector<int>& prompt,
                         const SpecExactOptions& o, std::uint64_t seed, double false_alarm, bool with_direct,
                         const std::string& source, const spec::SpecFaults& faults = {},
                         const std::function<void(std::int64_t)>& on_sample = {});

/// The prompt spec-exact uses on a byte-level (vocab 256) pair: the bytes of "The".
std::vector<int> spec_exact_text_prompt();

}  // namespace kvlab::checks
