// gqa-equals-mha (004 §2.3, group 6): options, what it measures, and its testable steps. See gqa_equals_mha.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::gqa_equals_mha {

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

/// One case (prefill: S queries; decode: 1 query over S keys), as measured.
struct GqaMhaCase {
  std::string name;
  int queries = 0;
  double diff = 0;      ///< max |GQA − MHA|
  double max_mha = 0;   ///< max |MHA| (the scale)
};

/// What gqa-equals-mha measured.
struct GqaEqualsMhaMeasured {
  GqaEqualsMhaOptions options;
  RunContext context;
  std::vector<GqaMhaCase> cases;
};

/// Runs the library's kernel with G = h against reference::multi_head_attention on random q, K, V.
GqaEqualsMhaMeasured measure_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx,
                                            const GqaEqualsMhaParts& parts = {});
/// Every case exactly 0: the same operations in the same order.
std::vector<Expectation> judge_gqa_equals_mha(const GqaEqualsMhaMeasured& m);

/// The check as data (registered as `gqa-equals-mha`).
const CheckDef<GqaEqualsMhaOptions, GqaEqualsMhaMeasured>& gqa_equals_mha_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_equals_mha(const GqaEqualsMhaOptions& o, const RunContext& ctx, const GqaEqualsMhaParts& parts = {});

}  // namespace kvlab::checks::gqa_equals_mha

namespace kvlab::checks {
using namespace gqa_equals_mha;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
