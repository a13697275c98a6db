// tree-verify: options, injectable parts and the pure run function (see tree_verify.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attention/masked.hpp"
#include "spec/token_tree.hpp"
#include "spec/tree_sampling.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError naming the option for invalid options, a --keep larger than
/// the tree, a run too small for its Monte Carlo comparison to fail, or one over the work budget.
Result run_tree_verify(const TreeVerifyOptions& opts, const RunContext& ctx,
                       const TreeVerifyParts& parts = {});

}  // namespace kvlab::checks
