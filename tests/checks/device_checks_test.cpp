// The `--device cuda` paths of the model checks, run on the CPU implementation of the
// device operations (device/host_ops.hpp) since CI has no GPU. Honest operations: every claim
// holds. A faulty operation (a kernel bug a GPU could have): the check fails, so the device
// path of each check is shown to bite before it ever meets a GPU.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "model/device_gpt.hpp"
#include "device/host_ops.hpp"
#include "model/weights_io.hpp"
#include "checks/greedy_generate.hpp"
#include "checks/incremental_vs_full.hpp"
#include "checks/kv_invariance.hpp"
#include "checks/paged_vs_contiguous.hpp"
#include "checks/spec_greedy.hpp"
#include "framework/check.hpp"

namespace check_device_checks_test {

using namespace kvlab;
using namespace kvlab::checks;

namespace {

RunContext on_host_device(gpu::HostFaults faults = {}) {
  RunContext ctx;
  ctx.device = Device::cuda;
  ctx.dtype = Dtype::f32;
  ctx.device_ops = [faults] { return gpu::make_host_ops(faults); };
  return ctx;
}

bool mentions(const Result& r, const std::string& text) {
  for (const auto& n : r.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("device checks: kv-invariance on the device ops passes honest, fails when an append rewrites the past") {
  const Result ok = run_kv_invariance({}, on_host_device());
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_append") == 0.0);
  CHECK(mentions(ok, "device: host-f32"));
  CHECK_FALSE(run_kv_invariance({}, on_host_device({.append_overwrites_past = true})).passed());
  CHECK_FALSE(run_kv_invariance({}, on_host_device({.append_wrong_slot = true})).passed());
}

TEST_CASE("device checks: incremental-vs-full on the device ops passes honest, fails when attention misses the newest position") {
  const Result ok = run_incremental_vs_full({}, on_host_device());
  CHECK(ok.passed());
  CHECK_NOTHROW(ok.metric_value("max_abs_diff_rope"));
  CHECK_THROWS_AS(ok.metric_value("max_abs_diff_mla_naive"), std::out_of_range);  // no device path for MLA: said in a note
  CHECK_FALSE(run_incremental_vs_full({}, on_host_device({.attention_drops_last = true})).passed());
}

TEST_CASE("device checks: paged-vs-contiguous on the device ops passes honest, fails when attention ignores the block table") {
  const Result ok = run_paged_vs_contiguous({}, on_host_device());
  CHECK(ok.passed());
  CHECK(ok.metric_value("max_abs_diff_bs16") == 0.0);  // same operations, same order: the same bits
  const Result bad = run_paged_vs_contiguous({}, on_host_device({.attention_no_gather = true}));
  CHECK_FALSE(bad.passed());
}

TEST_CASE("device checks: greedy-generate on the device ops: cached = naive honest, not with an append off by one slot") {
  const Result ok = run_greedy_generate({}, on_host_device());
  CHECK(ok.passed());
  CHECK(ok.metric_value("differing_tokens") == 0.0);
  CHECK(mentions(ok, "device: host-f32"));
  CHECK_FALSE(run_greedy_generate({}, on_host_device({.append_wrong_slot = true})).passed());
}

TEST_CASE("device checks: spec-greedy on the device ops: = target greedy honest; fails when a device cache is not rolled back") {
  // The reference (the target's own greedy decoding) runs on the same device, so a fault of the
  // forward itself hits both sides alike: that is incremental-vs-full's to catch (above). What
  // spec-greedy adds on the device is the rollback of the device caches (DeviceGpt::truncate).
  SpecGreedyOptions o;
  o.prompts = 2;
  const Result ok = run_spec_greedy(o, on_host_device());
  CHECK(ok.passed());
  CHECK(mentions(ok, "device: host-f32"));
  CHECK_FALSE(run_spec_greedy(o, on_host_device(), {.skip_target_truncate = true}).passed());
  CHECK_FALSE(run_spec_greedy(o, on_host_device(), {.skip_draft_truncate = true}).passed());
  SpecGreedyOptions edge;  // prompt 5 + 56 + K 4 − 1 = 64 = block_size: the largest run the CPU path takes
  edge.prompts = 1;
  edge.new_tokens = 56;
  CHECK(run_spec_greedy(edge, on_host_device()).passed());
}

TEST_CASE("device checks: cuda_gap keeps --device auto on the CPU where the device path leaves something out") {
  const auto find = [](const std::string& name) {
    for (auto& c : make_all_checks())
      if (c->name() == name) return std::move(c);
    FAIL("no check " << name);
    return std::unique_ptr<Check>();
  };
  const RunContext plain;
  CHECK(find("kv-invariance")->cuda_gap(plain).empty());
  CHECK(find("greedy-generate")->cuda_gap(plain).empty());
  CHECK(find("spec-greedy")->cuda_gap(plain).empty());
  CHECK(find("incremental-vs-full")->cuda_gap(plain).find("MLA") != std::string::npos);
  CHECK(find("paged-vs-contiguous")->cuda_gap(plain).find("audit") != std::string::npos);
  for (auto& c : make_all_checks())  // a gap only where there is a device path
    if (!c->has_cuda()) CHECK(c->cuda_gap(plain).empty());

  // A --weights model the device cannot run: a sliding window; a head_dim above the kernel's 256.
  ModelConfig window;
  window.sliding_window = 8;
  ModelConfig wide;
  wide.n_head = 1, wide.n_kv_head = 1, wide.head_dim = 512;
  for (const ModelConfig& c : {window, wide}) {
    const std::string path = "device_gap_probe.safetensors";
    save_gpt(MiniGPT<float>(c, 1), path);
    RunContext ctx;
    ctx.weights = path;
    CHECK_FALSE(find("kv-invariance")->cuda_gap(ctx).empty());
    CHECK_FALSE(gpu::device_gap(c).empty());
    std::remove(path.c_str());
  }
}

}  // namespace check_device_checks_test
