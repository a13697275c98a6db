// kv-size: the options and the pure run function of checks/kv_size.cpp, declared for the unit
// tests (tests/test_cost.cpp), which call run_kv_size with broken parts to show it can fail.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cheatsheet/cheatsheet.hpp"
#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"
#include "report/result.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

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

/// The library parts run_kv_size uses; tests replace them with deliberately wrong ones.
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

/// Runs kv-size. Throws InputError (naming the option) for invalid options.
Result run_kv_size(const KvSizeOptions& opts, const RunContext& ctx, const KvSizeParts& parts = {});

}  // namespace kvlab::checks
