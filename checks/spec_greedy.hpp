// spec-greedy (000 §7.6, §7.5): options, what it measures, and its testable steps. See
// spec_greedy.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "spec/loop.hpp"

namespace kvlab::checks::spec_greedy {

struct SpecGreedyOptions {
  int prompts = 4;       ///< seeded prompts
  int new_tokens = 24;   ///< tokens generated per prompt
  int k = 4;             ///< draft tokens per step
};

/// One prompt's speculative run with one draft, against the target's greedy decoding.
struct GreedyRun {
  bool invariant_broken = false;  ///< the loop's cache invariant failed (no statistics then)
  std::int64_t differing = 0;     ///< tokens differing from the greedy reference (+1 for a length mismatch)
  int first_difference = -1;      ///< index of the first differing token; −1 if none
  spec::SpecStats stats;
};

/// One draft's runs over every prompt, and their totals.
struct GreedyDraft {
  std::string name;       ///< "small (1 layer, d 32)", "target + noisy LM head", "target itself"
  std::string key;        ///< "small", "near", "self" (metric names)
  std::vector<GreedyRun> runs;
  std::int64_t differing = 0, invariant_breaks = 0;  ///< summed; a broken run counts --new-tokens
  std::string first_break;                          ///< the first invariant error's message
  spec::SpecStats total;                            ///< over the runs that finished
};

/// What spec-greedy measured: the three drafts' runs.
struct SpecGreedyMeasured {
  SpecGreedyOptions options;
  RunContext context;
  ModelConfig target, small;  ///< the two models' configs (for the notes)
  std::vector<GreedyDraft> drafts;
  std::string device_note;    ///< --device cuda: the device and its library
};

/// Runs the loop with every draft on every prompt (`faults` go to the loop; unit tests break it).
/// Throws InputError for out-of-range options or sizes beyond the models' block_size.
SpecGreedyMeasured measure_spec_greedy(const SpecGreedyOptions& o, const RunContext& ctx,
                                       const spec::SpecFaults& faults = {});
/// The verdict rows, per draft: differing tokens and broken invariants, each exactly 0.
std::vector<Expectation> judge_spec_greedy(const SpecGreedyMeasured& m);

/// The check as data (registered as `spec-greedy`).
const CheckDef<SpecGreedyOptions, SpecGreedyMeasured>& spec_greedy_check();

/// Runs the check. Throws InputError for invalid options (naming --prompts, --new-tokens, --k).
/// `faults` are passed to the speculative loop (the unit tests break it on purpose).
Result run_spec_greedy(const SpecGreedyOptions& opts, const RunContext& ctx,
                       const spec::SpecFaults& faults = {});

}  // namespace kvlab::checks::spec_greedy

namespace kvlab::checks {
using namespace spec_greedy;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
