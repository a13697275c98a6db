// kv-size: options, injectable parts, what it measures and its testable steps (kv_size.cpp); its
// tests inject a formula without the factor 2, a loader that misreads the K/V heads, a wrong
// cheatsheet cell.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cheatsheet/cheatsheet.hpp"
#include "cost/kv_cache.hpp"
#include "cost/layers.hpp"
#include "framework/spec.hpp"
#include "io/catalogue.hpp"

namespace kvlab::checks::kv_size {

/// The flags of `kvlab kv-size`. With neither model nor config the check reproduces the course's
/// table and estimates, and the other fields must be empty.
struct KvSizeOptions {
  std::optional<std::string> model;        ///< --model NAME (catalogue)
  std::optional<std::string> config;       ///< --config PATH (a Hugging Face config.json)
  std::optional<std::int64_t> batch;       ///< --batch, default 1
  std::optional<std::int64_t> ctx;         ///< --ctx, default 4096
  std::optional<std::string> kv_dtype;     ///< --kv-dtype, default bf16
  std::optional<std::int64_t> kv_heads;    ///< --kv-heads, default the model's own
};

/// The library parts kv-size uses; tests replace them with deliberately wrong ones.
struct KvSizeParts {
  std::function<ModelSpec(const std::string&)> load_model = [](const std::string& n) {
    return kvlab::load_model(n);
  };
  std::function<ModelSpec(const std::string&)> read_config = [](const std::string& p) {
    return kvlab::read_model_config(p);
  };
  std::function<KvCacheSize(const ModelSpec&, const KvQuery&)> cache_size =
      [](const ModelSpec& m, const KvQuery& q) { return kvlab::kv_cache_size(m, q); };
  /// The cheatsheet table the default run judges cell by cell (support/cheatsheet_cells.hpp);
  /// empty: `kvlab cheatsheet`'s own.
  std::function<CheatTable(const std::string&)> cheat_table;
};

/// The cache over context: GiB at contexts 128, 256, ... up to the largest, one line per model
/// variant (NaN past 64 bits).
struct KvSizeSweep {
  std::uint64_t batch = 1;
  CacheDtype dtype = CacheDtype::bf16;
  std::vector<std::uint64_t> contexts;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> gib;  ///< [line][context]
};

/// The course's figures (no --model, no --config): the library's sizes of the catalogue's models.
struct KvSizeCourse {
  ModelSpec l2_7, l2_13, l2_70, l3_8, l3_70, dsv2;
  std::vector<KvCacheSize> per_token;  ///< 004 §1.4 group 4: l2_7, l2_13, l2_70, l3_8; 1 token, bf16
  std::vector<KvCacheSize> per_seq;    ///< the same at 4096 tokens
  std::vector<KvCacheSize> variants;   ///< llama-2-70b, 32 × 8192, bf16: its GQA-8, as MHA, as MQA
  KvCacheSize l3_70_4k;                ///< llama-3-70b, 1 × 4096, fp16 (000 §0, §2.3)
  KvCacheSize dsv2_4k;                 ///< deepseek-v2, 1 × 4096, fp16 (000 §2.2)
  KvCacheSize q5, q5_fp32, q5_batch2;  ///< llama-2-7b, 2048 tokens: fp16; fp32; batch 2 fp16 (003 Q5)
  KvCacheSize mha_70;                  ///< llama-2-70b per token as MHA, bf16 (000 §4.2)
  GpuSpec a100;
  std::map<std::string, CheatTable> cheat;  ///< the cheatsheet tables judged cell by cell
};

/// One row of "the same cache in each dtype": the per-token size, and the total unless it passes
/// 2^64 bits.
struct KvSizeDtypeRow {
  CacheDtype dtype;
  KvCacheSize one;
  std::optional<KvCacheSize> total;
};

/// The calculator (--model or --config): one model's cache for the query.
struct KvSizeCalc {
  ModelSpec model;
  KvQuery query;
  KvCacheSize size;
  KvHeld held;
  std::vector<KvSizeDtypeRow> dtypes;
  KvCacheSize own16;                 ///< its own K/V heads, 1 token, bf16
  std::uint64_t counted_bits = 0;    ///< the cache tensors counted one by one × dtype bits
};

/// What kv-size measured: the course's figures or the calculator's, and the sweep.
struct KvSizeMeasured {
  KvSizeOptions options;
  std::optional<KvSizeCourse> course;
  std::optional<KvSizeCalc> calc;
  KvSizeSweep sweep;
};

/// Loads the models and sizes their caches. Throws InputError naming the option for an unknown
/// model, an unreadable config, a --kv-heads that does not divide, a cache past 2^64 bits.
KvSizeMeasured measure_kv_size(const KvSizeOptions& o, const KvSizeParts& parts = {});
/// The verdict rows: the library's bytes against the catalogue's independent reference (the
/// document's figures stated, errata flagged) and the cheatsheet's cells; or, for the calculator,
/// the reference and the closed form against a tensor count.
std::vector<Expectation> judge_kv_size(const KvSizeMeasured& m);

/// The check as data (registered as `kv-size`).
const CheckDef<KvSizeOptions, KvSizeMeasured>& kv_size_check();

/// Runs kv-size. Throws InputError (naming the option) for invalid options.
Result run_kv_size(const KvSizeOptions& opts, const RunContext& ctx, const KvSizeParts& parts = {});

}  // namespace kvlab::checks::kv_size

namespace kvlab::checks {
using namespace kv_size;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
