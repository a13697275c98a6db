// query-not-cached (004 §1.2): options, what it measures, and its testable steps. See query_not_cached.cpp.
#pragma once

#include <functional>

#include "core/tensor.hpp"
#include "model/config.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::query_not_cached {

struct QueryNotCachedOptions {
  int tokens = 12;   ///< S: positions; the last one is the query that matters
  int kv_heads = 2;  ///< of 8 query heads
};

/// Causal attention of q [T, h·d] (first query at position q_pos0) over k, v [S, G·d], as the
/// library's grouped_query_attention.
using AttentionFn = std::function<Mat<double>(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v,
                                              int n_head, int n_kv_head, int head_dim, int q_pos0)>;

/// Injectable parts; empty: kvlab::grouped_query_attention. Unit tests pass one that lets a query
/// mix in the earlier queries, to show the check fails.
struct QueryNotCachedParts {
  AttentionFn attention;
};

/// What query-not-cached measured.
struct QueryNotCachedMeasured {
  QueryNotCachedOptions options;
  RunContext context;
  ModelConfig config;          ///< the mini-GPT that ran (from the options or --weights)
  double model_diff = 0;       ///< max |Δ last logits|, K/V cache only vs full recompute
  double logit_scale = 1;      ///< max(1, max |logit|): the scale of the rounding bound
  double earlier_queries_diff = 0;  ///< max |Δ last output| with every earlier query replaced
  double threshold = 0;        ///< what rounding alone could move the last output by
  int keys_matter = 0;         ///< positions whose key, +1, moved the last output beyond threshold
  int values_matter = 0;       ///< the same for values
  double min_key_effect = 0;   ///< the smallest move one key's +1 caused
  double own_query_diff = 0;   ///< max |Δ last output| when the last query itself is +1
};

/// Runs the model comparison and the attention perturbations. Throws InputError on a --weights
/// file that cannot run it.
QueryNotCachedMeasured measure_query_not_cached(const QueryNotCachedOptions& o, const RunContext& ctx,
                                                const QueryNotCachedParts& parts = {});
/// The verdict rows: the model within rounding; earlier queries change nothing (exact); every key,
/// every value and the own query move the last output (counts).
std::vector<Expectation> judge_query_not_cached(const QueryNotCachedMeasured& m);

/// The check as data (registered as `query-not-cached`).
const CheckDef<QueryNotCachedOptions, QueryNotCachedMeasured>& query_not_cached_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_query_not_cached(const QueryNotCachedOptions& o, const RunContext& ctx, const QueryNotCachedParts& parts = {});

}  // namespace kvlab::checks::query_not_cached

namespace kvlab::checks {
using namespace query_not_cached;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
