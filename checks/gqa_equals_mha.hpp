// gqa-equals-mha (004 §2.3, group 6): options and the testable entry point. See gqa_equals_mha.cpp.
#pragma once

#include <functional>

#include "core/tensor.hpp"
#include "support/check.hpp"

namespace kvlab::checks {

struct GqaEqualsMhaOptions {
  int heads = 8;     ///< h = G
  int tokens = 12;   ///< S, positions (prefill T = S, then one decode query over S keys)
  int head_dim = 8;
};

/// Grouped-query attention as the library's grouped_query_attention (q [T, h·d], k, v [S, G·d]).
template <class T>
using GqaFn = std::function<Mat<T>(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, int n_head,
                                   int n_kv_head, int head_dim, int q_pos0)>;

/// Injectable parts; empty: kvlab::grouped_query_attention. Unit tests pass one with a wrong
/// head-to-K/V-head map to show the check fails.
struct GqaEqualsMhaParts {
  GqaFn<double> gqa_f64;
  GqaFn<float> gqa_f32;
};

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaEqualsMhaParts& parts = {});

}  // namespace kvlab::checks
