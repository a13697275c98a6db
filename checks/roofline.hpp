// roofline: options, injectable parts, what it measures and its testable steps (roofline.cpp);
// its tests inject a decode step that forgets the KV cache, a wrong GPU or loader.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <utility>
#include <vector>

#include "cost/roofline.hpp"
#include "cost/tensor_parallel.hpp"
#include "framework/spec.hpp"
#include "io/catalogue.hpp"
#include "io/hardware.hpp"

namespace kvlab::checks::roofline {

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

/// The course's table (no --model, --config or device): 004 §1.5's rows and 000 §1.1, §3.1, 003 Q6.
struct RooflineCourse {
  ModelSpec m7;                        ///< llama-2-7b's shape and cache, N = 7e9
  GpuSpec a100;                        ///< a100-80gb
  DecodeQuery q1, q8, q64;             ///< batch 1 and 8 at ctx 1024, batch 64 at ctx 4096
  DecodeStep s1, s8, s64;
  std::vector<std::pair<DecodeQuery, DecodeStep>> true_rows;  ///< the same at llama-2-7b's true N
  std::vector<std::pair<std::uint64_t, ComputeBoundBatch>> compute_bound;  ///< ctx 1024, 4096, 128
  std::vector<GpuSpec> gpus;           ///< every catalogue GPU, for the ridge table
  ModelSpec m70;                       ///< 000 §1.1: llama-3-70b at N = 70e9 on an h100-sxm
  GpuSpec h100, a100_40;
  DecodeStep s70;
  std::vector<DecodeStep> kv_share;    ///< 003 Q6: 7B at batch 1 and 1000, ctx 1024
};

/// With only a device: the course's 7B at batch 1 and 8 on it (004 §B.2 (c)).
struct RooflineDevice {
  DeviceSpec dev;
  ModelSpec m7;
  DecodeQuery q1, q8;
  DecodeStep s1, s8;
};

/// The parameter figures of the calculator and where each came from (an option or a file field).
struct ParamFigures {
  DecodeQuery query;        ///< n_params, and moe when the step is a mixture of experts
  std::string total_from;   ///< "--params" or "num_parameters"
  std::string active_from;  ///< "--active-params", "num_parameters_active" or "" (dense)
  std::string experts_from;    ///< "--experts" or "config"; "" when E is unknown
  std::string per_token_from;  ///< "--experts-per-token" or "config"; "" when k is unknown
  bool moe_declared = false;  ///< the model routes tokens (E > k) or has fewer active parameters
};

/// With --model or --config: one decode step of one (tensor-parallel) device.
struct RooflineCalc {
  ModelSpec full;                      ///< the model as given
  TensorParallelShare share;           ///< share.per_device is the model one device steps
  std::uint64_t tp = 1;
  DeviceSpec dev;
  ParamFigures figures;                ///< figures.query: the step's query, per device
  DecodeStep step;
  ComputeBoundBatch compute_bound;
  std::optional<DecodeStep> lower;     ///< MoE without E and k at batch > 1: the step at N_read = N_active
  std::optional<std::pair<DecodeQuery, DecodeStep>> own_params;  ///< --params given: at the file's own N
};

/// What roofline measured: one of its three modes.
struct RooflineMeasured {
  RooflineOptions options;
  std::optional<RooflineCourse> course;
  std::optional<RooflineDevice> device;
  std::optional<RooflineCalc> calc;
};

/// Loads the models and GPUs and costs the steps with `parts`. Throws InputError naming the option.
RooflineMeasured measure_roofline(const RooflineOptions& o, const RooflineParts& parts = {});
/// The verdict rows: the document's figures at their written precision, and every step against
/// the check's own arithmetic (config fields, the catalogue's KV reference, the GPU's rates).
std::vector<Expectation> judge_roofline(const RooflineMeasured& m);

/// The check as data (registered as `roofline`).
const CheckDef<RooflineOptions, RooflineMeasured>& roofline_check();

/// Runs roofline. Throws InputError (naming the option) for invalid options.
Result run_roofline(const RooflineOptions& opts, const RunContext& ctx, const RooflineParts& parts = {});

}  // namespace kvlab::checks::roofline

namespace kvlab::checks {
using namespace roofline;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
