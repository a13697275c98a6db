// max-batch (000 §2.3): options, what it measures, and its testable steps. See max_batch.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost/capacity.hpp"
#include "io/catalogue.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::max_batch {

/// The flags of `kvlab max-batch`; the defaults are 000 §2.3's setup (shown by --help, as every
/// check's). The two left unset take a default that depends on the others.
struct MaxBatchOptions {
  std::string model = "llama-3-70b";       ///< --model, a catalogue model
  std::string gpu = "a100-80gb";           ///< --gpu, a catalogue GPU
  std::int64_t gpus = 8;                   ///< --gpus the weights are sharded across
  std::int64_t ctx = 4096;                 ///< --ctx, tokens per sequence
  std::string kv_dtype = "fp16";           ///< --kv-dtype, the cache element type
  std::optional<double> params;            ///< --params, default the model's num_parameters
  double weight_bytes = 2.0;               ///< --weight-bytes per parameter
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

/// What max-batch measured: the deployment it sized, the library's capacity, and the check's own
/// reference bytes per sequence (from the catalogue's kv_bytes_per_token_16bit).
struct MaxBatchMeasured {
  MaxBatchOptions options;
  bool document = false;        ///< 000 §2.3's setup: every option at its default, --kv-budget-gb aside
  ModelSpec model;              ///< as loaded
  GpuSpec gpu;                  ///< as loaded
  std::uint64_t gpus = 0, ctx = 0;
  CacheDtype dtype = CacheDtype::fp16;
  double bytes_per_param = 0, params = 0;
  double budget_bytes = 0;      ///< the KV budget (the document's 400 GB, --kv-budget-gb, or all left)
  BatchCapacity capacity;       ///< the library's answer
  std::uint64_t reference_kv_bytes = 0;  ///< one sequence, from the catalogue's reference, exact
  std::uint64_t mha_kv_bytes = 0;        ///< one sequence with a K/V head per query head (GQA models; else 0)
};

/// Loads the model and GPU, sizes the deployment (`parts` or the library's) and computes the
/// reference bytes. Throws InputError naming the option (--model, --gpu, --kv-budget-gb, ...).
MaxBatchMeasured measure_max_batch(const MaxBatchOptions& o, const MaxBatchParts& parts = {});
/// The verdict rows: weights, KV per sequence, memory left, max batch (the headline), each against
/// the check's own arithmetic; with 000 §2.3's setup, the document's figures (E3, E4).
std::vector<Expectation> judge_max_batch(const MaxBatchMeasured& m);

/// The check as data (registered as `max-batch`).
const CheckDef<MaxBatchOptions, MaxBatchMeasured>& max_batch_check();

/// Runs max-batch. Throws InputError (naming the option) for invalid options.
Result run_max_batch(const MaxBatchOptions& o, const RunContext& ctx, const MaxBatchParts& parts = {});

}  // namespace kvlab::checks::max_batch

namespace kvlab::checks {
using namespace max_batch;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
