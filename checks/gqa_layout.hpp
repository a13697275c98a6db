// gqa-layout (004 §3.4; 000 §4.2; 003 Q6): options, what it measures, and its testable steps. See gqa_layout.cpp.
#pragma once

#include <functional>

#include "core/tensor.hpp"
#include <string>
#include <vector>

#include "framework/spec.hpp"

namespace kvlab::checks::gqa_layout {

struct GqaLayoutOptions {
  int heads = 4;     ///< h, query heads
  int kv_heads = 2;  ///< G, K/V heads: 1 < G < h, G divides h (where the two layouts differ)
  int tokens = 5;    ///< positions of the random-data comparison
  int head_dim = 4;
};

/// Broadcasts x [S, G * head_dim] to [S, h * head_dim] (as repeat_interleave_kv).
using KvExpander = std::function<Mat<double>(const Mat<double>& x, int n_kv_head, int head_dim, int n_rep)>;

/// Injectable parts; empty: the library's repeat_interleave_kv and expand_reshape_kv. Unit tests
/// pass the tiled repeat_kv as "repeat_interleave" to show the check fails.
struct GqaLayoutParts {
  KvExpander interleave;
  KvExpander expand_reshape;
};

/// One way of writing GQA, as measured.
struct LayoutWriting {
  std::string name;         ///< "repeat_interleave + MHA kernel"
  std::string source;       ///< "004 §3.4 writing 1"
  bool tiled = false;       ///< expected to read j mod G (repeat) rather than ⌊j/(h/G)⌋
  bool native = false;      ///< the native grouped kernel itself (no random-data row against itself)
  std::vector<int> read;    ///< the K/V head each query head read
  double diff = 0;          ///< random data: max |output − native grouped kernel|
  int heads_differing = 0;  ///< random data: query heads differing beyond rounding
};

/// What gqa-layout measured.
struct GqaLayoutMeasured {
  GqaLayoutOptions options;
  RunContext context;
  std::vector<int> grouped_map, tiled_map;  ///< ⌊j/(h/G)⌋ and j mod G, written out independently
  std::vector<LayoutWriting> writings;      ///< interleave, expand + reshape, native, tiled
  double threshold = 0;                     ///< 2(d + 2S)u·max|v|: what rounding can move an output by
};

/// Reads the maps off each writing and compares their outputs on random data.
GqaLayoutMeasured measure_gqa_layout(const GqaLayoutOptions& o, const RunContext& ctx, const GqaLayoutParts& parts = {});
/// Every writing reads its expected map (counts); the grouped writings equal the native kernel
/// (same bits); the tiled one differs on exactly the heads whose maps differ.
std::vector<Expectation> judge_gqa_layout(const GqaLayoutMeasured& m);

/// The check as data (registered as `gqa-layout`).
const CheckDef<GqaLayoutOptions, GqaLayoutMeasured>& gqa_layout_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_gqa_layout(const GqaLayoutOptions& o, const RunContext& ctx, const GqaLayoutParts& parts = {});

/// The K/V head each query head reads when K/V head g holds the constant g + 1 everywhere: the
/// attention output of head j is a softmax-weighted mean of g + 1, read back as round(out) − 1.
/// `expand` empty: the native grouped kernel (grouped_query_attention with n_kv_head heads).
std::vector<int> heads_read(int n_head, int n_kv_head, const KvExpander& expand, std::uint64_t seed);

}  // namespace kvlab::checks::gqa_layout

namespace kvlab::checks {
using namespace gqa_layout;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
