// A check: one course claim, reproduced through libkvlab.
//
// The Check interface the front end runs. A check is declared as data (framework/spec.hpp): a
// CheckDef of its spec, option table and measure / judge / present steps, registered with
// KVLAB_REGISTER_SPEC; the SpecCheck made from it implements this interface, which is how
// `kvlab list`, `kvlab all`, ctest and the sweep see it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "core/dtype.hpp"
#include "report/result.hpp"
#include "framework/options.hpp"

namespace kvlab::kernels {
class ModelOps;
}

namespace kvlab::checks {

/// The options every check accepts, resolved: --seed, --dtype, --device (--format is the app's).
struct RunContext {
  std::uint64_t seed = 1234;
  Dtype dtype = Dtype::f64;
  Device device = Device::cpu;
  /// --weights FILE.safetensors (only on checks with uses_weights()): run on the model in the file
  /// instead of a seeded random one; "" = none. Config from the file (docs/weights.md).
  std::string weights;
  /// --draft-weights FILE.safetensors (only on checks with uses_draft_weights()): the draft of a
  /// target/draft pair, given together with `weights` (the target); "" = none.
  std::string draft_weights;
  /// With device == cuda: makes the device operations the model runs on. Empty (the CLI): the
  /// CUDA ones (device/cuda_entry.hpp). The unit tests set the CPU ones (device/host_ops.hpp),
  /// honest or faulty, to run a check's device path without a GPU.
  std::function<std::unique_ptr<kernels::ModelOps>()> device_ops;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string name() const = 0;     ///< subcommand, e.g. "kv-size"
  virtual std::string source() const = 0;   ///< e.g. "004 §1.4 (group 4); 000 §0, §2.2, §2.3"
  virtual std::string summary() const = 0;  ///< one line for `kvlab list`
  /// The claim in Chinese for `--lang zh` (the course is written in Chinese; the student reads the
  /// headline in its terms: 预填充 prefill, 解码 decode, 接受率 α). A unit test keeps it present.
  virtual std::string claim_zh() const { return {}; }
  /// Longer --help text: what the check shows and how to read its output.
  virtual std::string description() const { return summary(); }
  /// The derivation behind the claim, for `kvlab explain NAME`: a few lines of argument or
  /// arithmetic (e.g. the induction of 004 §1.2), ending with the source section. Plain text,
  /// lines under 100 columns. Every registered check has one (a unit test keeps it so).
  virtual std::string derivation() const { return {}; }
  /// Adds the check's own options to its subcommand.
  virtual void bind(OptionSet& /*sub*/) {}
  /// Whether the check has a CUDA implementation (`--device cuda`; support/device_model.hpp).
  virtual bool has_cuda() const { return false; }
  /// With has_cuda(): what the device path would leave out or refuse for the bound options and
  /// `ctx` (rows it has no device code for, a --weights model the device cannot run); "" when it
  /// runs everything the CPU path would. Non-empty keeps `--device auto` on the CPU; `--device
  /// cuda` runs the device path anyway and says what it left out.
  virtual std::string cuda_gap(const RunContext& /*ctx*/) const { return ""; }
  /// Whether the check's Result carries plots (it sweeps a parameter): the front end then offers
  /// `--plot FILE.svg|term` (report/plot.hpp).
  virtual bool has_plot() const { return false; }
  /// Whether the check is a benchmark: it times this machine for seconds to minutes (cpu-roofline).
  /// `kvlab all` runs it only with --bench; ctest's verdict and the determinism test leave it out;
  /// tests/sweep.sh runs it with --quick.
  virtual bool is_bench() const { return false; }
  /// Whether --dtype changes what the check computes (model checks); elsewhere an explicit
  /// --dtype is refused rather than silently ignored.
  virtual bool uses_dtype() const { return false; }
  /// Whether the check builds a MiniGPT and accepts `--weights FILE.safetensors` for it
  /// (RunContext::weights; checks/support/model_setup.hpp: check_model).
  virtual bool uses_weights() const { return false; }
  /// Whether the check builds a target and a draft: --weights is then the target and
  /// `--draft-weights FILE.safetensors` the draft, given together (model_setup.hpp: check_pair).
  virtual bool uses_draft_weights() const { return false; }
  /// Why the check cannot run on a weights file (e.g. its claim compares variants of one seeded
  /// model that a file cannot hold); non-empty: the front end accepts --weights and refuses it with
  /// this reason, one line, exit 2 (docs/weights.md, "check → what --weights does").
  virtual std::string weights_refusal() const { return {}; }
  /// Runs the check with its bound options. Throws InputError on invalid options.
  virtual Result run(const RunContext& ctx) = 0;
};

using CheckFactory = std::function<std::unique_ptr<Check>()>;

/// Registers a factory; `order` places the check in document order in `list` and `all`.
bool register_check(int order, CheckFactory factory);

/// A fresh instance of every registered check, in order.
std::vector<std::unique_ptr<Check>> make_all_checks();

}  // namespace kvlab::checks

#define KVLAB_CONCAT_INNER(a, b) a##b
#define KVLAB_CONCAT(a, b) KVLAB_CONCAT_INNER(a, b)
