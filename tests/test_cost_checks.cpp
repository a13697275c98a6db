// The kv-size and roofline checks can fail: with a deliberately wrong formula, loader or GPU
// injected into run_kv_size / run_roofline, the Result is not passed(). Also: the done-when values
// of issue 2, the errata the checks report, and option errors.
#include <doctest/doctest.h>

#include "test_util.hpp"

using kvlab::test::input_error;

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "kv_size_check.hpp"
#include "roofline_check.hpp"

namespace {

using namespace kvlab;
using namespace kvlab::checks;

const std::string kFixtures =
    (std::filesystem::path(__FILE__).parent_path() / "data" / "configs").string();

double metric(const Result& r, const std::string& key) {
  for (const auto& [k, v] : r.metrics)
    if (k == key) return r.metric_value(key);
  FAIL("no metric " << key);
  return 0;
}

bool any_note_has(const Result& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

/// The library's cache size, but "forgetting the factor 2" of K and V (every count halved).
KvSizeParts forgot_factor_two() {
  KvSizeParts p;
  p.cache_size = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    s.elements_per_token /= 2;
    s.bits_per_token /= 2;
    s.bytes_per_token /= 2;
    s.total_bits /= 2;
    s.total_bytes /= 2;
    return s;
  };
  return p;
}


}  // namespace

TEST_CASE("kv-size: the course table passes, with exactly the four errata") {
  const Result r = run_kv_size({}, RunContext{});
  CHECK(r.passed());
  const auto errata = r.errata();
  CHECK(errata.size() == 4);
  const auto has = [&](const std::string& s) {
    return std::any_of(errata.begin(), errata.end(), [&](const std::string& e) { return e.find(s) != std::string::npos; });
  };
  CHECK(has("≈ 1.25 GB"));
  CHECK(has("≈ 0.27 GB"));
  CHECK(has("320"));
  CHECK(has("003 Q5"));
  CHECK(metric(r, "bytes") == 85899345920.0);  // 80 GiB
  CHECK(metric(r, "bytes_per_token") == 327680.0);
  CHECK(metric(r, "max_batch_8xa100_80gb") == 298.0);
}

TEST_CASE("kv-size can fail: a formula without the factor 2") {
  CHECK_FALSE(run_kv_size({}, RunContext{}, forgot_factor_two()).passed());
  KvSizeOptions o;
  o.model = "llama-2-70b";
  CHECK(run_kv_size(o, RunContext{}).passed());
  CHECK_FALSE(run_kv_size(o, RunContext{}, forgot_factor_two()).passed());
}

TEST_CASE("kv-size can fail: a loader that misreads the K/V heads") {
  KvSizeParts p;
  p.load_model = [](const std::string& n) {
    ModelSpec m = load_model(n);
    m.n_kv_head = m.n_head;  // ignores GQA: every model read as MHA
    return m;
  };
  CHECK_FALSE(run_kv_size({}, RunContext{}, p).passed());
}

TEST_CASE("kv-size on a config with no reference: the tensor count still catches a wrong total") {
  KvSizeOptions o;
  o.config = kFixtures + "/hf_llama_2_7b.json";
  o.kv_dtype = "int4";
  const Result ok = run_kv_size(o, RunContext{});
  CHECK(ok.passed());
  CHECK(any_note_has(ok, "no independent reference"));
  CHECK(metric(ok, "bytes") == 4096.0 * 524288 / 4);
  KvSizeParts p;
  p.cache_size = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    s.total_bits = s.tokens * s.elements_per_token * 8;  // int4 costed as a byte per element
    return s;
  };
  CHECK_FALSE(run_kv_size(o, RunContext{}, p).passed());
}

TEST_CASE("kv-size: issue 2's done-when values") {
  KvSizeOptions o;
  o.model = "llama-3-70b";
  o.ctx = 4096;
  o.kv_dtype = "fp16";
  CHECK(metric(run_kv_size(o, RunContext{}), "bytes") == 1342177280.0);
  KvSizeOptions l;
  l.model = "llama-2-70b";
  l.batch = 32;
  l.ctx = 8192;
  l.kv_dtype = "bf16";
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 80.0 * (1ull << 30));
  l.kv_heads = 64;
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 640.0 * (1ull << 30));
  l.kv_heads = 1;
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 10.0 * (1ull << 30));
}

TEST_CASE("kv-size: option errors name the option") {
  KvSizeOptions o;
  o.batch = 4;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--batch: needs --model") != std::string::npos);
  o.model = "nosuch";
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--model: unknown model") != std::string::npos);
  o.model = "llama-2-70b";
  o.batch = 0;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--batch") != std::string::npos);
  o.batch = 1;
  o.kv_heads = 5;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("kv-heads") != std::string::npos);
  KvSizeOptions both;
  both.model = "gpt2";
  both.config = kFixtures + "/hf_gpt2.json";
  CHECK(input_error([&] { run_kv_size(both, RunContext{}); }).find("--model, --config") != std::string::npos);
  KvSizeOptions dir;
  dir.config = kFixtures;
  CHECK(input_error([&] { run_kv_size(dir, RunContext{}); }).find("--config: ") == 0);
}

TEST_CASE("roofline: the course table passes; the wrong GPU or a formula without KV fails it") {
  const Result r = run_roofline({}, RunContext{});
  CHECK(r.passed());
  CHECK(r.errata().empty());
  CHECK(metric(r, "ridge") == doctest::Approx(153.016).epsilon(1e-5));
  CHECK(metric(r, "tokens_per_s_batch8") == doctest::Approx(891.611).epsilon(1e-5));
  CHECK(any_note_has(r, "200.6"));  // 000 §3.1's ≈ 200 is the A100-40GB's ridge

  RooflineParts wrong_gpu;
  wrong_gpu.load_gpu = [](const std::string&) { return load_gpu("a100-40gb"); };
  CHECK_FALSE(run_roofline({}, RunContext{}, wrong_gpu).passed());

  RooflineParts no_kv;  // a decode step that forgets to read the KV cache
  no_kv.decode_step = [](const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
    DecodeStep s = decode_step(m, g, q);
    s.bytes -= static_cast<double>(s.kv_bytes);
    s.kv_bytes = 0;
    s.intensity = s.flops / s.bytes;
    s.time_memory_s = s.bytes / g.bandwidth_bytes_per_s;
    s.time_s = std::max(s.time_memory_s, s.time_compute_s);
    s.tokens_per_s = static_cast<double>(q.kv.batch) / s.time_s;
    return s;
  };
  CHECK_FALSE(run_roofline({}, RunContext{}, no_kv).passed());
}

TEST_CASE("roofline calculator: done-when, and it fails with a wrong step") {
  RooflineOptions o;
  o.model = "llama-2-7b";
  o.params = 7e9;
  o.gpu = "a100-80gb";
  o.batch = 8;
  o.ctx = 1024;
  const Result r = run_roofline(o, RunContext{});
  CHECK(r.passed());
  CHECK(std::abs(metric(r, "tokens_per_s") - 892.0) < 0.5);
  CHECK(metric(r, "kv_bytes") == 8.0 * 1024 * 524288);
  CHECK(metric(r, "weight_bytes") == 14e9);

  RooflineParts min_not_max;  // takes the smaller of the two times
  min_not_max.decode_step = [](const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
    DecodeStep s = decode_step(m, g, q);
    s.time_s = std::min(s.time_memory_s, s.time_compute_s);
    s.tokens_per_s = static_cast<double>(q.kv.batch) / s.time_s;
    return s;
  };
  CHECK_FALSE(run_roofline(o, RunContext{}, min_not_max).passed());

  RooflineParts fp32_peak;  // the fp32 rate where the bf16 one belongs: wrong when compute-bound
  fp32_peak.decode_step = [](const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
    GpuSpec wrong = g;
    wrong.bf16_flops_per_s = g.fp32_flops_per_s;
    return decode_step(m, wrong, q);
  };
  RooflineOptions big = o;
  big.batch = 4096;
  big.ctx = 16;
  CHECK_FALSE(run_roofline(big, RunContext{}, fp32_peak).passed());
}

TEST_CASE("roofline: option errors name the option") {
  RooflineOptions o;
  o.gpu = "h100-sxm";
  CHECK(input_error([&] { run_roofline(o, RunContext{}); }).find("--gpu: needs --model") != std::string::npos);
  o.model = "llama-2-7b";
  o.gpu = "nosuch";
  const std::string gpu = input_error([&] { run_roofline(o, RunContext{}); });
  CHECK(gpu.find("--gpu: unknown GPU 'nosuch'") != std::string::npos);
  CHECK(gpu.find("a100-80gb") != std::string::npos);
  o.gpu.reset();
  o.params = std::nan("");
  CHECK(input_error([&] { run_roofline(o, RunContext{}); }).find("--params") != std::string::npos);
  o.params = -1;
  CHECK(input_error([&] { run_roofline(o, RunContext{}); }).find("--params") != std::string::npos);
  RooflineOptions c;
  c.config = kFixtures + "/hf_llama_2_7b.json";  // a real config has no num_parameters
  CHECK(input_error([&] { run_roofline(c, RunContext{}); }).find("--params: ") == 0);
  c.params = 6.74e9;
  CHECK(run_roofline(c, RunContext{}).passed());
}
