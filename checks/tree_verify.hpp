// tree-verify (000 §8.2, §8.3; SpecInfer §4): options, injectable parts, what it measures and its
// testable steps (see tree_verify.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attention/masked.hpp"
#include "core/dtype.hpp"
#include "framework/spec.hpp"
#include "spec/token_tree.hpp"
#include "spec/tree_sampling.hpp"

namespace kvlab::checks::tree_verify {

struct TreeVerifyOptions {
  int heads = 4;                  ///< Medusa heads N (tree depth)
  int top_k = 5;                  ///< candidates per head
  int keep = 64;                  ///< nodes kept by pruning
  int depth = 2;                  ///< depth of the sampled SpecInfer tree
  int width = 3;                  ///< children drawn per node of the sampled tree
  std::int64_t samples = 20'000;  ///< Monte Carlo tree steps
  double temperature = 0.1;       ///< sampling temperature of target, draft and heads
};

/// The pieces the unit tests break. Empty functions mean the library's: spec::tree_attention_mask,
/// spec::tree_positions; `rule` is SpecInfer's exact multi-candidate rule by default.
struct TreeVerifyParts {
  std::function<AttentionMask(const spec::TokenTree&, int prefix_len)> mask;
  std::function<std::vector<int>(const spec::TokenTree&, int prefix_len)> positions;
  spec::MultiCandidateRule rule;
};

/// One tree through one target: its single masked forward against a causal forward per path.
struct TreeForward {
  std::string target;  ///< "learned positions" or "RoPE"
  std::string key;     ///< "learned" or "rope" (metric names)
  std::string tree;    ///< "full" or "pruned"
  std::int64_t nodes = 0, paths = 0;
  double mass = 0.0;   ///< Σ path probability (Medusa's E[accepted])
  std::int64_t rows = 0, identical = 0;  ///< logit rows compared, and how many were bit-identical
  double max_diff = 0.0;  ///< max |Δ logit| over the rows
  double bound = 0.0;     ///< its rounding bound 2·n·u·max|logit|
};

/// What tree-verify measured: the static tree's counts and forwards (part 1), and SpecInfer's
/// multi-candidate sampling over a drawn tree (part 2).
struct TreeVerifyMeasured {
  TreeVerifyOptions options;
  std::uint64_t seed = 0;
  Dtype dtype = Dtype::f64;
  std::vector<int> prompt;
  std::int64_t full_paths = 0, full_nodes = 0, pruned_paths = 0, pruned_nodes = 0;
  std::vector<TreeForward> forwards;  ///< per target: the full tree, then the pruned one
  double sum_deviation = 0.0;         ///< largest |Σ − 1| of the node distributions p̃, q̃
  double tv_law = 0.0;                ///< TV(closed-form law of a tree step, target law)
  double tv_naive_law = 0.0;          ///< the same without the residual between siblings
  std::int64_t support = 0;           ///< sequences the target law gives positive probability
  double tv_empirical = 0.0;          ///< TV(empirical law of the sampled steps, target law)
  std::int64_t emitted = 0, accepted = 0;  ///< over the sampled steps
};

/// Builds the trees and runs both parts with `parts`.
TreeVerifyMeasured measure_tree_verify(const TreeVerifyOptions& o, const RunContext& ctx,
                                       const TreeVerifyParts& parts = {});
/// The verdict rows: the static tree's k^N paths; per target, the tree forwards against the per-path
/// forwards within rounding; the closed-form law within rounding and the sampled law within the
/// Bretagnolle–Huber–Carol bound of the target's.
std::vector<Expectation> judge_tree_verify(const TreeVerifyMeasured& m);

/// The check as data (registered as `tree-verify`).
const CheckDef<TreeVerifyOptions, TreeVerifyMeasured>& tree_verify_check();

/// Runs the check. Throws InputError naming the option for invalid options, a --keep larger than
/// the tree, a run too small for its Monte Carlo comparison to fail, or one over the work budget.
Result run_tree_verify(const TreeVerifyOptions& opts, const RunContext& ctx,
                       const TreeVerifyParts& parts = {});

}  // namespace kvlab::checks::tree_verify

namespace kvlab::checks {
using namespace tree_verify;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
