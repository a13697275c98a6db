// max-batch (000 §2.3): options and the testable entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cost/capacity.hpp"
#include "io/catalogue.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

/// The flags of `kvlab max-batch`; unset fields take 000 §2.3's setup.
struct MaxBatchOptions {
  std::optional<std::string> model;        ///< --model, default llama-3-70b
  std::optional<std::string> gpu;          ///< --gpu, default a100-80gb
  std::optional<std::int64_t> gpus;        ///< --gpus, default 8
  std::optional<std::int64_t> ctx;         ///< --ctx, default 4096
  std::optional<std::string> kv_dtype;     ///< --kv-dtype, default fp16
  std::optional<double> params;            ///< --params, default the model's num_parameters
  std::optional<double> weight_bytes;      ///< --weight-bytes per parameter, default 2
  std::optional<double> kv_budget_gb;      ///< --kv-budget-gb, default 400 (document) or all left
};

/// The library parts run_max_batch uses; tests replace them with deliberately wrong ones.
struct MaxBatchParts {
  std::function<ModelSpec(const std::string&)> load_model = [](const std::string& n) { return kvlab::load_model(n); };
  std::function<GpuSpec(const std::string&)> load_gpu = [](const std::string& n) { return kvlab::load_gpu(n); };
  std::function<BatchCapacity(const ModelSpec&, const GpuSpec&, std::uint64_t, double, double, std::uint64_t,
                              CacheDtype, std::optional<double>)>
      capacity = [](const ModelSpec& m, const GpuSpec& g, std::uint64_t gpus, double n, double bpp, std::uint64_t ctx,
                    CacheDtype d, std::optional<double> budget) {
        return kvlab::batch_capacity(m, g, gpus, n, bpp, ctx, d, budget);
      };
};

/// Runs max-batch. Throws InputError (naming the option) for invalid options.
Result run_max_batch(const MaxBatchOptions& o, const RunContext& ctx, const MaxBatchParts& parts = {});

}  // namespace kvlab::checks
