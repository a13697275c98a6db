// ragged-batch (003 Q10, answer 10): options, what it measures, and its testable steps.
// See ragged_batch.cpp.
#pragma once

#include <functional>
#include <vector>

#include "model/gpt.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::ragged_batch {

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

/// One request of the batch: its length and how far its outputs in the batch are from its own.
struct RaggedRequest {
  int tokens = 0;
  double mlp_diff = 0;     ///< MLP over the flattened rows vs the request alone, max |Δ|
  double block_diff = 0;   ///< block served ragged vs the request alone, max |Δ|
  double mixed_diff = 0;   ///< attention over the flattened rows as one sequence vs alone, max |Δ|
};

/// What ragged-batch measured.
struct RaggedBatchMeasured {
  RaggedBatchOptions options;
  RunContext context;                  ///< seed and --weights of the run
  ModelConfig config;                  ///< the model whose first block ran
  std::vector<RaggedRequest> requests;
  int total_tokens = 0;
};

/// Draws the requests, runs the block's parts (`parts` or the library's) over the flattened rows
/// and over each request alone. Throws InputError when a --weights file does not fit or overflows.
RaggedBatchMeasured measure_ragged_batch(const RaggedBatchOptions& o, const RunContext& ctx,
                                         const RaggedBatchParts& parts = {});
/// The verdict rows: MLP flattened and block ragged equal each request alone (exactly 0), and
/// attention as one sequence changes every request but the first (a count).
std::vector<Expectation> judge_ragged_batch(const RaggedBatchMeasured& m);

/// The check as data (registered as `ragged-batch`).
const CheckDef<RaggedBatchOptions, RaggedBatchMeasured>& ragged_batch_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_ragged_batch(const RaggedBatchOptions& o, const RunContext& ctx, const RaggedBatchParts& parts = {});

}  // namespace kvlab::checks::ragged_batch

namespace kvlab::checks {
using namespace ragged_batch;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
