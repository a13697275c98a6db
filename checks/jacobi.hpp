// jacobi (000 §8.4): options, what it measures, and its testable steps. See jacobi.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/spec.hpp"
#include "model/config.hpp"
#include "spec/jacobi.hpp"

namespace kvlab::checks::jacobi {

struct JacobiOptions {
  int prompts = 4;  ///< seeded prompts
  int block = 16;   ///< largest block size n; the check runs n = 1, 2, 4, ... below it, and n itself
};

/// The pieces the unit tests break: the Jacobi update (empty = spec::jacobi_update).
struct JacobiParts {
  spec::JacobiUpdate update;
};

/// The runs of one block size n from one kind of initial block, summed over the prompts.
struct JacobiGroup {
  int n = 0;
  bool zeros = false;         ///< initial block all token 0 (else uniform random tokens)
  double iterations = 0;      ///< Σ iterations until the block equals the greedy output
  int max_iterations = 0;
  double forwards = 0;        ///< Σ forwards, the fixed-point test included
  double right_at_start = 0;  ///< Σ initial tokens already equal to the greedy ones
};

/// What jacobi measured: every group, and the counts the verdict reads.
struct JacobiMeasured {
  JacobiOptions options;
  RunContext context;
  ModelConfig config;                     ///< the model Jacobi ran on
  std::vector<JacobiGroup> groups;
  std::int64_t runs = 0;
  std::int64_t differing = 0;             ///< fixed-point tokens differing from greedy
  std::int64_t over_n = 0;                ///< runs needing more than n iterations
  std::int64_t not_converged = 0;         ///< runs without a fixed point after n + 1 forwards
  std::int64_t prefix_breaks = 0;         ///< iterates t whose first min(t, n) tokens are not final
  std::string first_problem;              ///< the first prefix violation, in words
};

/// Runs Jacobi and greedy decoding on every prompt, block size and initial block. Throws
/// InputError naming --prompts or --block when out of range, or for a --weights model that is not
/// causal or too short.
JacobiMeasured measure_jacobi(const JacobiOptions& o, const RunContext& ctx, const JacobiParts& parts = {});
/// The verdict rows: four counts, each exactly 0.
std::vector<Expectation> judge_jacobi(const JacobiMeasured& m);

/// The check as data (registered as `jacobi`).
const CheckDef<JacobiOptions, JacobiMeasured>& jacobi_check();

/// Runs the check. Throws InputError naming --prompts or --block when out of range.
Result run_jacobi(const JacobiOptions& opts, const RunContext& ctx, const JacobiParts& parts = {});

}  // namespace kvlab::checks::jacobi

namespace kvlab::checks {
using namespace jacobi;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
