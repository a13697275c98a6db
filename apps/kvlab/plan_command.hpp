// `kvlab plan`: does a model fit on a device at a context and batch, what is the largest batch,
// and what do the decode and prefill rooflines allow there (lib/cost/plan.hpp). A command, not a
// check: it computes and answers, with no claim to hold.
//
//   kvlab plan --model llama-3-8b --gpu h100-sxm --ctx 8k --batch 16
//   kvlab plan --config cfg.json --params 7.6e9 --gpu my-gpu.json --ctx 4k,32k,128k --batch 1,8,64 --plot term
//   kvlab plan --model llama-3-70b --model mixtral-8x7b --gpu h100-sxm --tp 2 --ctx 32k --batch 8
//   kvlab plan --model llama-3-8b --bandwidth 936GB/s --peak-flops 71TFLOPS --memory 24GB --ctx 4k --batch 1
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

/// The flags of `kvlab plan`, as typed (token counts and units are parsed when it runs, so that a
/// bad one is one line naming its flag).
struct PlanFlags {
  std::vector<std::string> models;    ///< --model NAME, repeatable (side by side)
  std::vector<std::string> configs;   ///< --config FILE, repeatable
  std::optional<std::string> gpu;     ///< --gpu NAME | FILE.json
  std::optional<std::string> bandwidth, peak_flops, memory;  ///< units: io/units.hpp
  std::int64_t tp = 1;                ///< --tp
  std::vector<std::string> ctx;       ///< --ctx 4k,32k,... (required)
  std::vector<std::string> batch;     ///< --batch 1,8,... (default 1)
  std::string kv_dtype = "bf16";
  std::string weights_dtype = "bf16";
  double memory_utilization = 0.9;
  std::optional<double> params;         ///< --params N (one model only)
  std::optional<double> active_params;  ///< --active-params (one model only)
  std::string format = "text";
  std::string plot;                   ///< "" | "term" | FILE.svg
  bool verbose = false;
};

/// Adds the `plan` subcommand with its options bound to `flags`.
CLI::App* add_plan_command(CLI::App& app, PlanFlags& flags);

/// Plans every model × ctx × batch and writes the answer to `out` in flags.format; returns 0.
/// Throws InputError naming the flag for bad input (exit 2).
int run_plan(const PlanFlags& flags, std::ostream& out);

}  // namespace kvlab::app
