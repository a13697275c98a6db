// incremental-vs-full (004 §1.3, §3.5, group 2): options, what it measures, and its testable
// steps. See incremental_vs_full.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/kv_cache.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::incremental_vs_full {

struct IncrementalOptions {
  int prefill = 8;   ///< prompt tokens processed at once
  int decode = 12;   ///< tokens then decoded one at a time
  std::optional<int> chunk;  ///< chunk size of the chunked-prefill variant; unset: min(3, prefill)
  std::string cache = "prealloc";  ///< prealloc or concat
};

/// Makes the cache the incremental path uses: (n_layer, width, max_len) -> cache. The unit tests
/// pass a deliberately broken cache here to show the check fails.
template <class T>
using CacheMaker = std::function<std::unique_ptr<KVCache<T>>(int n_layer, int width, int max_len)>;

/// Injectable parts of the host path; empty: the cache named by IncrementalOptions::cache.
struct IncrementalParts {
  CacheMaker<double> cache_f64;
  CacheMaker<float> cache_f32;
};

/// The models compared, in table order: five seeded MiniGPTs (or the --weights model prefilled at
/// once and in chunks), then the MLA mini-GPT on its naive and absorbed paths (host only).
enum class IncrementalVariant { mha, gqa, mqa, chunked, rope, weights, weights_chunked, mla_naive, mla_absorbed };

/// One model's comparison: its cached logits against one full forward.
struct IncrementalRow {
  IncrementalVariant variant = IncrementalVariant::mha;
  int heads = 0;         ///< KV heads of the model (the MLA rows: its query heads)
  double diff = 0;       ///< max |Δlogits|, cached vs full
  double max_logit = 0;  ///< max |logit| of the full forward (the bound's scale is max(1, this))
  double terms = 0;      ///< n of the rounding bound 2·n·u·scale (reduction_length, mla_reduction_length)
  std::optional<double> reordered;  ///< the full forward vs itself summed in another order, where defined
};

/// What incremental-vs-full measured.
struct IncrementalMeasured {
  IncrementalOptions options;  ///< with --chunk resolved
  RunContext context;          ///< seed, dtype, device and --weights of the run
  std::vector<IncrementalRow> rows;
  std::string device_note;     ///< the device path: which device ran it
};

/// Resolves --chunk (min(3, --prefill) when unset) and runs every row on the host at ctx.dtype,
/// or on the device in float32. Throws InputError on a --weights file that cannot run it.
IncrementalMeasured measure_incremental_vs_full(const IncrementalOptions& o, const RunContext& ctx,
                                                const IncrementalParts& parts = {});
/// One row per model: max |Δlogits| = 0 within the rounding bound 2·n·u·max(1, max|logit|).
std::vector<Expectation> judge_incremental_vs_full(const IncrementalMeasured& m);

/// The check as data (registered as `incremental-vs-full`).
const CheckDef<IncrementalOptions, IncrementalMeasured>& incremental_vs_full_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_incremental_vs_full(const IncrementalOptions& o, const RunContext& ctx,
                               const IncrementalParts& parts = {});

}  // namespace kvlab::checks::incremental_vs_full

namespace kvlab::checks {
using namespace incremental_vs_full;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
