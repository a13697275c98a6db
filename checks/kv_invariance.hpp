// kv-invariance (004 §1.2, group 1): options, what it measures, and its testable steps. See kv_invariance.cpp.
#pragma once

#include <string>
#include <vector>

#include "model/config.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::kv_invariance {

struct KvInvarianceOptions {
  int tokens = 12;               ///< the shorter prefix; the longer one has tokens + 1
  int layers = 2;
  int kv_heads = 8;              ///< of 8 query heads
  std::string positional = "learned";
  bool causal = true;            ///< false: bidirectional (the check must then fail; unit tests)
};

/// One cache layer: how far the first n positions' K and V moved between the n- and the
/// (n + 1)-token run. On the device also: how far they moved in the cache when token n was appended.
struct KvLayerDiff {
  int layer = 0;
  double dk = 0, dv = 0;   ///< max |ΔK|, |ΔV| of the two prefills
  double max_k = 0;        ///< max |K| (the scale of the rounding bound)
  double append_dk = 0, append_dv = 0;  ///< device only: the cache before vs after the append
};

/// What kv-invariance measured.
struct KvInvarianceMeasured {
  KvInvarianceOptions options;
  RunContext context;      ///< seed, dtype, device and --weights of the run
  ModelConfig config;      ///< the model that ran (from the options or the file)
  std::vector<KvLayerDiff> layers;
  double max_dk = 0, max_dv = 0;  ///< over the layers (NaN-propagating)
  // The device path (context.device == cuda):
  double append_diff = 0;  ///< max over layers of append_dk, append_dv
  double bound = 0;        ///< float32 rounding bound of the prefill comparison
  std::string device_note; ///< which device ran it
};

/// Runs the two prefixes (on the CPU at ctx.dtype, or on the device) and compares their K and V.
/// Throws InputError on a --weights file that cannot run it.
KvInvarianceMeasured measure_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx);
/// CPU: max |ΔK| and max |ΔV| exactly 0. Device: the prefills within float32 rounding, the append exactly 0.
std::vector<Expectation> judge_kv_invariance(const KvInvarianceMeasured& m);

/// The check as data (registered as `kv-invariance`).
const CheckDef<KvInvarianceOptions, KvInvarianceMeasured>& kv_invariance_check();

/// Runs the check. Throws InputError on out-of-range options.
Result run_kv_invariance(const KvInvarianceOptions& o, const RunContext& ctx);

}  // namespace kvlab::checks::kv_invariance

namespace kvlab::checks {
using namespace kv_invariance;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks
