// roofline: the options and the pure run function of checks/roofline.cpp, declared for the unit
// tests (tests/test_cost.cpp), which call run_roofline with broken parts to show it can fail.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "report/result.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

/// The flags of `kvlab roofline`. With neither model nor config the check reproduces the course's
/// decode table (004 §1.5 group 5); with only a device (--gpu and/or --bandwidth, --peak-flops,
/// --memory) the course's 7B at batch 1 and 8 on that device (004 §B.2 (c)); other fields need a
/// model.
struct RooflineOptions {
  std::optional<std::string> model;         ///< --model NAME (catalogue)
  std::optional<std::string> config;        ///< --config PATH (a Hugging Face config.json)
  std::optional<std::string> gpu;           ///< --gpu NAME or FILE.json, default a100-80gb
  std::optional<std::string> bandwidth;     ///< --bandwidth, e.g. "3.35TB/s" (io/units.hpp)
  std::optional<std::string> peak_flops;    ///< --peak-flops, e.g. "989.5TFLOPS"
  std::optional<std::string> memory;        ///< --memory, e.g. "80GiB"
  std::optional<std::int64_t> tp;           ///< --tp: tensor-parallel devices, default 1
  std::optional<std::int64_t> batch;        ///< --batch, default 1
  std::optional<std::int64_t> ctx;          ///< --ctx, default 4096
  std::optional<double> params;             ///< --params: all parameters N (every expert of an
                                            ///< MoE), default the model's num_parameters
  std::optional<double> active_params;      ///< --active-params: MoE parameters one token uses,
                                            ///< default num_parameters_active
  std::optional<std::int64_t> experts;      ///< --experts: MoE routed experts E per layer,
                                            ///< default num_local_experts (or its aliases)
  std::optional<std::int64_t> experts_per_token;  ///< --experts-per-token: k, default num_experts_per_tok
  std::optional<double> weight_bytes;       ///< --weight-bytes (bytes per parameter), default 2
  std::optional<std::string> kv_dtype;      ///< --kv-dtype, default bf16
};

/// The library parts run_roofline uses; tests replace them with deliberately wrong ones.
struct RooflineParts {
  std::function<ModelSpec(const std::string&)> load_model = [](const std::string& n) {
    return kvlab::load_model(n);
  };
  std::function<ModelSpec(const std::string&)> read_config = [](const std::string& p) {
    return kvlab::read_model_config(p);
  };
  std::function<GpuSpec(const std::string&)> load_gpu = [](const std::string& n) {
    return kvlab::load_gpu(n);
  };
  std::function<DecodeStep(const ModelSpec&, const GpuSpec&, const DecodeQuery&)> decode_step =
      [](const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
        return kvlab::decode_step(m, g, q);
      };
};

/// Runs roofline. Throws InputError (naming the option) for invalid options.
Result run_roofline(const RooflineOptions& opts, const RunContext& ctx, const RooflineParts& parts = {});

}  // namespace kvlab::checks
