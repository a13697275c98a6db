// query-not-cached (004 §1.2): options and the testable entry point. See query_not_cached.cpp.
#pragma once

#include <functional>

#include "core/tensor.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

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

/// Runs the check. Throws InputError on out-of-range options.
Result run_query_not_cached(const QueryNotCachedOptions& o, const RunContext& ctx, const QueryNotCachedParts& parts = {});

}  // namespace kvlab::checks
