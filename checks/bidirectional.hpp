// bidirectional (004 §1.2, "why BERT has no KV cache"): options, what it measures, and its testable steps.
#pragma once

#include <vector>

#include "model/config.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::bidirectional {

struct BidirectionalOptions {
  int tokens = 12;  ///< the shorter prefix; the longer one has tokens + 1
  int layers = 3;   ///< >= 2: layer 1's K/V depend on the embeddings only
};

/// Injectable parts. `bidirectional_is_causal`: the "bidirectional" model keeps its causal mask
/// (a wrong mask), which the unit tests use to show the check fails.
struct BidirectionalParts {
  bool bidirectional_is_causal = false;
};

/// One layer: how far the first n positions' K and V moved between the n- and (n + 1)-token runs.
struct MaskLayerDiff {
  double dk = 0, dv = 0, max_kv = 0;
};

/// What bidirectional measured: the same weights under the causal and the bidirectional mask.
struct BidirectionalMeasured {
  BidirectionalOptions options;
  RunContext context;
  ModelConfig config;  ///< the model that ran (its mask aside)
  std::vector<MaskLayerDiff> causal, bidirectional;  ///< per layer
};

/// Runs both masks on prefixes of n and n + 1 tokens. Throws InputError on a --weights file that
/// cannot run it.
BidirectionalMeasured measure_bidirectional(const BidirectionalOptions& o, const RunContext& ctx,
                                            const BidirectionalParts& parts = {});
/// Causal: exactly 0. Bidirectional: layer 1 exactly 0, every later layer's K and V beyond rounding.
std::vector<Expectation> judge_bidirectional(const BidirectionalMeasured& m);
/// The rounding threshold of layer l (0-based) of the bidirectional run: 2·n·u·max(1, max|K/V|).
double bidirectional_threshold(const BidirectionalMeasured& m, int layer);

/// The check as data (registered as `bidirectional`).
const CheckDef<BidirectionalOptions, BidirectionalMeasured>& bidirectional_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_bidirectional(const BidirectionalOptions& o, const RunContext& ctx, const BidirectionalParts& parts = {});

}  // namespace kvlab::checks::bidirectional

namespace kvlab::checks {
using namespace bidirectional;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
