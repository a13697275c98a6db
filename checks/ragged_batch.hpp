// ragged-batch (003 Q10, answer 10): options and the testable entry point.
#pragma once

#include <functional>
#include <vector>

#include "model/gpt.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct RaggedBatchOptions {
  int requests = 5;  ///< requests in the batch
  int max_len = 12;  ///< each request's length is drawn from [1, max_len]
};

/// The injectable pieces: the MLP sublayer applied to the flattened rows, and the attention the
/// batched block uses. Unit tests pass an MLP that normalizes across the batch and an attention
/// that treats the flattened rows as one sequence.
struct RaggedBatchParts {
  /// rows [n, d] -> [n, d]; empty: kvlab::mlp_sublayer
  std::function<Mat<double>(const BlockWeights<double>&, const Mat<double>&)> mlp;
  /// flattened rows and request lengths -> [Σ n, d]; empty: kvlab::ragged_attention_sublayer
  std::function<Mat<double>(const BlockWeights<double>&, const ModelConfig&, const Mat<double>&, const std::vector<int>&)>
      batched_attention;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_ragged_batch(const RaggedBatchOptions& o, const RunContext& ctx, const RaggedBatchParts& parts = {});

}  // namespace kvlab::checks
