// The exactness test of speculative decoding on any target/draft pair: the output law of a few
// tokens, enumerated, against the loop's samples (TV bound and Pearson's χ²). spec-exact runs it
// on a seeded random pair or a file pair, spec-real on the trained pair.
// Source: 000 §7.6, §A.2 [e]; Leviathan et al. 2023, Appendix A.1.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "report/result.hpp"
#include "spec/loop.hpp"

namespace kvlab::checks {

/// What the test draws: sequences per sampler, tokens per sequence (V^N outcomes), draft tokens
/// per step, and the temperature of the target and of the soft draft.
struct ExactnessOptions {
  std::int64_t samples = 5'000;  ///< generated sequences per sampler
  int new_tokens = 2;             ///< tokens per sequence (V^new_tokens outcomes)
  int k = 2;                      ///< draft tokens per step
  double temperature = 0.1;       ///< the target's (and the soft draft's) temperature
  std::string_view samples_flag = "--samples";  ///< the option that sets `samples`, for refusals and notes
};

/// One sampler's sequences against the exact law (over the cells), and the loop's counts.
struct ExactnessSampler {
  std::string name, key;   ///< e.g. "speculative, soft draft (T = 0.1), K = 2", "spec_soft"
  bool direct = false;     ///< direct sampling from the target (no loop statistics)
  LawFit fit;
  spec::SpecStats stats;   ///< summed over the sequences (the speculative samplers)
};

/// What the test measured: the outcomes V^N, the cells the samples were judged on (every
/// outcome of positive probability, or above 4096 outcomes those expected at least 5 times plus
/// one pooled cell), the family false alarm split over the rows, and each sampler's fit.
struct ExactnessMeasured {
  ExactnessOptions options;
  std::int64_t outcomes = 0, cells = 0;
  bool coarse = false;          ///< cells pooled (more than 4096 outcomes)
  double false_alarm = 1e-4;    ///< the family's, split evenly (Bonferroni) over comparisons()
  bool with_direct = true;      ///< direct sampling is one of the samplers
  std::vector<ExactnessSampler> samplers;
  int comparisons() const { return with_direct ? 8 : 6; }  ///< samplers × (TV, χ²)
  double tv_bound() const;      ///< Bretagnolle–Huber–Carol bound over `cells` at the split false alarm
};

/// Enumerates the target's exact law of o.new_tokens tokens after `prompt` (at most 2^20
/// outcomes) and draws o.samples sequences from the speculative loop with a soft draft (K = 1
/// and o.k) and a greedy draft (K = o.k), plus direct sampling when `with_direct`, each from its
/// own stream of `seed`. `on_sample`, when set, is called after each sequence with the count drawn
/// so far over every sampler: a progress line's hook. Throws InputError when V^N is over the
/// limit or the TV bound is >= 1 (too few samples for the test to fail).
template <class T>
ExactnessMeasured measure_exactness(const MiniGPT<T>& target, const MiniGPT<T>& draft, const std::vector<int>& prompt,
                                    const ExactnessOptions& o, std::uint64_t seed, double false_alarm,
                                    bool with_direct, const spec::SpecFaults& faults = {},
                                    const std::function<void(std::int64_t)>& on_sample = {});

/// The verdict rows per sampler: TV below the bound and χ² below its critical value.
std::vector<Expectation> judge_exactness(const ExactnessMeasured& m, const std::string& source);

/// Adds the samplers' table, their metrics and the note on sanity [e]'s fixed 0.01 to `r`.
void present_exactness(const ExactnessMeasured& m, Result& r);

}  // namespace kvlab::checks
