// Your own hardware and `kvlab plan`: units on the command line (io/units.hpp), a device from
// --gpu NAME|FILE and the unit flags (io/hardware.hpp), tensor-parallel shares
// (cost/tensor_parallel.hpp), plan's answers against hand arithmetic for 3 models × 2 GPUs, one
// with --tp 2 (cost/plan.hpp), and the roofline on a device given alone.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "checks/roofline.hpp"
#include "cost/plan.hpp"
#include "cost/tensor_parallel.hpp"
#include "io/catalogue.hpp"
#include "io/hardware.hpp"
#include "io/units.hpp"
#include "test_util.hpp"

namespace cost_plan_test {

namespace {

using kvlab::test::input_error;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// |a − b| <= 1e-12 · |b|: the library and the hand arithmetic round differently only.
bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * std::abs(b); }

}  // namespace

TEST_CASE("units: bandwidth, FLOP/s and memory with explicit units; bare numbers are base units") {
  CHECK(kvlab::parse_bandwidth("--bandwidth", "3.35TB/s") == 3.35e12);
  CHECK(kvlab::parse_bandwidth("--bandwidth", "900GiB/s") == 900.0 * 1024 * 1024 * 1024);
  CHECK(kvlab::parse_bandwidth("--bandwidth", "2039e9") == 2039e9);
  CHECK(kvlab::parse_bandwidth("--bandwidth", "936GB/s") == 936e9);
  CHECK(kvlab::parse_flops("--peak-flops", "989.5TFLOPS") == 989.5e12);
  CHECK(kvlab::parse_flops("--peak-flops", "312TFLOP/s") == 312e12);
  CHECK(kvlab::parse_flops("--peak-flops", "2.25Pflops") == 2.25e15);
  CHECK(kvlab::parse_flops("--peak-flops", "1.2e15") == 1.2e15);
  CHECK(kvlab::parse_memory("--memory", "80GiB") == 85'899'345'920ull);
  CHECK(kvlab::parse_memory("--memory", "141GB") == 141'000'000'000ull);
  CHECK(kvlab::parse_memory("--memory", "24e9") == 24'000'000'000ull);
  // 0, negative, nan, inf, a unit that does not parse, bits for bytes, milli: one line naming the flag.
  for (const char* bad : {"0", "-1", "nan", "inf", "", "3.35TB", "3.35Tb/s", "3.35 TB/s", "1e22", "3mB/s", "TB/s",
                          "0x10", "0.5"}) {
    CAPTURE(bad);
    CHECK(contains(input_error([&] { kvlab::parse_bandwidth("--bandwidth", bad); }), "--bandwidth"));
  }
  for (const char* bad : {"0", "-5TFLOPS", "nan", "989.5TB/s", "5mFLOPS", "1e30"})
    CHECK(contains(input_error([&] { kvlab::parse_flops("--peak-flops", bad); }), "--peak-flops"));
  for (const char* bad : {"0", "-80GiB", "80gb", "0.5B", "80GiB/s", "1e20", "nan"})
    CHECK(contains(input_error([&] { kvlab::parse_memory("--memory", bad); }), "--memory"));
}

TEST_CASE("units: token counts take k (1,024) and M (1,048,576)") {
  CHECK(kvlab::parse_token_count("--ctx", "4096") == 4096);
  CHECK(kvlab::parse_token_count("--ctx", "4k") == 4096);
  CHECK(kvlab::parse_token_count("--ctx", "128k") == 131072);
  CHECK(kvlab::parse_token_count("--ctx", "128K") == 131072);
  CHECK(kvlab::parse_token_count("--ctx", "1M") == 1048576);
  for (const char* bad : {"0", "-1", "1.5k", "4kk", "", "k", "1m", "99999999999999999999", "4 k"})
    CHECK(contains(input_error([&] { kvlab::parse_token_count("--ctx", bad); }), "--ctx"));
  CHECK(contains(input_error([] { kvlab::parse_token_count("--ctx", "2M", 1u << 20); }), "--ctx"));
}

TEST_CASE("hardware: --gpu NAME or FILE, and the unit flags override or define the device") {
  const kvlab::DeviceSpec h100 = kvlab::resolve_device_flags({"h100-sxm", {}, {}, {}}, "");
  CHECK(h100.spec.bandwidth_bytes_per_s == 3.35e12);
  CHECK(h100.overridden.empty());
  const kvlab::DeviceSpec over = kvlab::resolve_device_flags({"h100-sxm", "2TB/s", {}, "94GB"}, "");
  CHECK(over.spec.bandwidth_bytes_per_s == 2e12);
  CHECK(over.spec.bf16_flops_per_s == 989.5e12);
  CHECK(over.spec.memory_bytes == 94'000'000'000ull);
  CHECK(over.overridden.size() == 2);
  const kvlab::DeviceSpec mine = kvlab::resolve_device_flags({{}, "936GB/s", "71TFLOPS", {}}, "");
  CHECK(mine.spec.name == "custom");
  CHECK(mine.spec.bandwidth_bytes_per_s == 936e9);
  CHECK_FALSE(mine.memory_known);
  CHECK(contains(input_error([] { kvlab::resolve_device_flags({{}, "936GB/s", {}, {}}, ""); }), "--peak-flops"));
  CHECK(contains(input_error([] { kvlab::resolve_device_flags({{}, {}, {}, "24GB"}, ""); }), "--memory"));
  CHECK(contains(input_error([] { kvlab::resolve_device_flags({"h100-sxm", "0", {}, {}}, ""); }), "--bandwidth"));
  CHECK(contains(input_error([] { kvlab::resolve_device_flags({"nosuch", {}, {}, {}}, ""); }), "--gpu"));
  CHECK(contains(input_error([] { kvlab::resolve_device_flags({}, ""); }), "--gpu"));

  // A student's own file in data/hardware's schema.
  const auto path = std::filesystem::temp_directory_path() / "kvlab_test_my_gpu.json";
  std::ofstream(path) << R"({"name": "my-3090", "memory_bytes": 24000000000, "bandwidth_bytes_per_s": 936e9,
                            "bf16_flops_per_s": 71e12, "fp32_flops_per_s": 35.6e12})";
  const kvlab::DeviceSpec file = kvlab::resolve_device_flags({path.string(), {}, {}, {}}, "");
  CHECK(file.spec.name == "my-3090");
  CHECK(file.spec.bf16_flops_per_s == 71e12);
  CHECK(contains(file.provenance, "file"));
  std::ofstream(path) << R"({"memory_bytes": 24000000000, "bandwidth_bytes_per_s": 0,
                            "bf16_flops_per_s": 71e12, "fp32_flops_per_s": 35.6e12})";
  const std::string bad = input_error([&] { kvlab::resolve_device_flags({path.string(), {}, {}, {}}, ""); });
  CHECK(contains(bad, "--gpu"));
  CHECK(contains(bad, "bandwidth_bytes_per_s"));
  std::filesystem::remove(path);
}

TEST_CASE("catalogue: the GPUs students own or rent, dense rates") {
  for (const char* name : {"rtx-3090", "rtx-4090", "rtx-5090", "l4", "l40s", "a10g", "t4", "h20", "h200", "b200",
                           "mi300x"}) {
    CAPTURE(name);
    const kvlab::GpuSpec g = kvlab::load_gpu(name);
    CHECK_FALSE(g.source.empty());
    CHECK(g.bf16_flops_per_s > g.fp32_flops_per_s);
  }
  CHECK(kvlab::load_gpu("h200").bandwidth_bytes_per_s == 4.8e12);
  CHECK(kvlab::load_gpu("b200").bf16_flops_per_s == 2250e12);  // 36 PFLOPS sparse / 8 GPUs / 2
  CHECK(kvlab::load_gpu("l4").bf16_flops_per_s == 121e12);      // 242 with sparsity
}

TEST_CASE("tensor parallel: heads split, K/V heads replicated past their count, as vLLM shards") {
  const kvlab::ModelSpec m70 = kvlab::load_model("llama-3-70b");  // 64 query heads, 8 K/V heads
  const auto two = kvlab::tensor_parallel_share(m70, 2);
  CHECK(two.query_heads == 32);
  CHECK(two.kv_heads == 4);
  CHECK(two.kv_replicas == 1);
  CHECK(*two.per_device.kv_bytes_per_token_16bit == 327680 / 2);
  const auto sixteen = kvlab::tensor_parallel_share(m70, 16);
  CHECK(sixteen.kv_heads == 1);
  CHECK(sixteen.kv_replicas == 2);
  CHECK(*sixteen.per_device.kv_bytes_per_token_16bit == 327680 / 8);
  CHECK(contains(input_error([&] { kvlab::tensor_parallel_share(m70, 3); }), "--tp"));
  CHECK(contains(input_error([&] { kvlab::tensor_parallel_share(m70, 0); }), "--tp"));
  const auto mla = kvlab::tensor_parallel_share(kvlab::load_model("deepseek-v2"), 8);
  CHECK(mla.kv_replicas == 8);
  CHECK(mla.per_device.kv_bytes_per_token_16bit == kvlab::load_model("deepseek-v2").kv_bytes_per_token_16bit);
}

// ---- plan: hand arithmetic ---------------------------------------------------------------------
// Catalogue figures: llama-2-7b N = 6,738,415,616, 32 layers × 32 K/V heads × 128; llama-3-8b
// N = 8,030,261,248, 32 × 8 × 128; llama-3-70b N = 70,553,706,496, 80 × 8 × 128, 64 query heads.
// a100-80gb: 2039e9 B/s, 312e12 FLOP/s, 80e9 B; h100-sxm: 3.35e12 B/s, 989.5e12 FLOP/s, 80e9 B.
// Budget 0.9 × 80e9 = 72e9 B. bf16 weights and cache: 2 B each.

namespace {

kvlab::Plan plan(const char* model, const char* gpu, std::uint64_t ctx, std::uint64_t batch, std::uint64_t tp = 1) {
  kvlab::PlanQuery q;
  q.ctx = ctx;
  q.batch = batch;
  q.tp = tp;
  return kvlab::make_plan(kvlab::load_model(model), kvlab::load_gpu(gpu), q);
}

}  // namespace

TEST_CASE("plan golden: llama-2-7b on a100-80gb, ctx 4096 × batch 8") {
  const kvlab::Plan p = plan("llama-2-7b", "a100-80gb", 4096, 8);
  CHECK(p.weights_bytes == 13'476'831'232.0);                 // 6,738,415,616 × 2
  CHECK(p.kv_bytes_per_sequence == 2'147'483'648ull);          // 2 × 32 × 32 × 128 × 2 × 4096
  CHECK(p.kv_bytes == 17'179'869'184ull);                      // × 8
  CHECK(p.fits);                                               // 30,656,700,416 <= 72e9
  CHECK(p.max_batch == 27);                                    // floor(58,523,168,768 / 2,147,483,648) = floor(27.25)
  REQUIRE(p.decode_at_max);
  // Batch 27: bytes = 13,476,831,232 + 27 × 2,147,483,648 = 71,458,889,728; memory-bound.
  CHECK(p.decode_at_max->bytes == 71'458'889'728.0);
  CHECK(close(p.decode_at_max->tokens_per_s, 27.0 * 2039e9 / 71'458'889'728.0));
  // Prefill, 27 prompts of 4096: 2N × 27 × 4096 + 27 × (4 × 32 × 32 × 128) × 4096 × 4097 / 2 FLOPs.
  CHECK(p.prefill_at_max.flops == 1'609'205'966'438'400.0);
  CHECK(close(p.prefill_at_max.time_s, 1'609'205'966'438'400.0 / 312e12));
  CHECK(p.prefill_at_max.bound == kvlab::Bound::compute);
}

TEST_CASE("plan golden: llama-2-7b on h100-sxm, ctx 4096 × batch 1") {
  const kvlab::Plan p = plan("llama-2-7b", "h100-sxm", 4096, 1);
  CHECK(p.kv_bytes == 2'147'483'648ull);
  CHECK(p.fits);
  CHECK(p.max_batch == 27);
  CHECK(close(p.decode_at_max->tokens_per_s, 27.0 * 3.35e12 / 71'458'889'728.0));
  CHECK(close(p.prefill_at_max.time_s, 1'609'205'966'438'400.0 / 989.5e12));
  // At the requested batch 1: (13,476,831,232 + 2,147,483,648) B / 3.35e12 B/s per token.
  CHECK(close(p.decode_at_batch->tokens_per_s, 3.35e12 / 15'624'314'880.0));
}

TEST_CASE("plan golden: llama-3-8b (GQA) on h100-sxm and a100-80gb, ctx 8192 × batch 16") {
  for (const auto& gpu_bw : {std::pair{"h100-sxm", 3.35e12}, std::pair{"a100-80gb", 2039e9}}) {
    const char* gpu = gpu_bw.first;  // not a structured binding: CAPTURE's lambda cannot take one (clang)
    const double bw = gpu_bw.second;
    CAPTURE(gpu);
    const kvlab::Plan p = plan("llama-3-8b", gpu, 8192, 16);
    CHECK(p.weights_bytes == 16'060'522'496.0);              // 8,030,261,248 × 2
    CHECK(p.kv_bytes_per_sequence == 1'073'741'824ull);       // 2 × 32 × 8 × 128 × 2 × 8192
    CHECK(p.kv_bytes == 17'179'869'184ull);
    CHECK(p.fits);
    CHECK(p.max_batch == 52);                                 // floor(55,939,477,504 / 1,073,741,824) = floor(52.1)
    CHECK(p.decode_at_max->bytes == 71'895'097'344.0);        // 16,060,522,496 + 52 × 1,073,741,824
    CHECK(close(p.decode_at_max->tokens_per_s, 52.0 * bw / 71'895'097'344.0));
    CHECK(p.prefill_at_max.flops == 7'756'430'958'395'392.0);
  }
}

TEST_CASE("plan golden: llama-3-70b on a100-80gb does not fit; with --tp 2 on h100-sxm it does") {
  const kvlab::Plan one = plan("llama-3-70b", "a100-80gb", 4096, 1);
  CHECK(one.weights_bytes == 141'107'412'992.0);              // 70,553,706,496 × 2 > 72e9
  CHECK(one.kv_bytes == 1'342'177'280ull);                    // 2 × 80 × 8 × 128 × 2 × 4096
  CHECK_FALSE(one.fits);
  CHECK(one.max_batch == 0);
  CHECK_FALSE(one.decode_at_max);

  const kvlab::Plan two = plan("llama-3-70b", "h100-sxm", 4096, 1, 2);
  CHECK(two.weights_bytes == 70'553'706'496.0);               // half of 141,107,412,992 per device
  CHECK(two.kv_bytes == 671'088'640ull);                      // 4 of the 8 K/V heads: 2 × 80 × 4 × 128 × 2 × 4096
  CHECK(two.fits);                                            // 71,224,795,136 <= 72e9
  CHECK(two.max_batch == 2);                                  // floor(1,446,293,504 / 671,088,640) = floor(2.16)
  // Batch 2 per device: bytes = 70,553,706,496 + 2 × 671,088,640; FLOPs with 32 query heads.
  CHECK(two.decode_at_max->bytes == 71'895'883'776.0);
  CHECK(two.decode_at_max->flops == 151'844'831'232.0);       // 2 × 35,276,853,248 × 2 + 4 × 2 × 4096 × 80 × 32 × 128
  CHECK(close(two.decode_at_max->tokens_per_s, 2.0 * 3.35e12 / 71'895'883'776.0));
  CHECK(two.prefill_at_max.flops == 599'971'564'879'872.0);
}

TEST_CASE("plan: bad input names the flag") {
  const auto m = kvlab::load_model("llama-2-7b");
  const auto g = kvlab::load_gpu("h100-sxm");
  kvlab::PlanQuery q;
  q.memory_utilization = 0;
  CHECK(contains(input_error([&] { kvlab::make_plan(m, g, q); }), "--memory-utilization"));
  q = {};
  q.tp = 3;
  CHECK(contains(input_error([&] { kvlab::make_plan(m, g, q); }), "--tp"));
  q = {};
  kvlab::ModelSpec no_params = m;
  no_params.num_parameters.reset();
  CHECK(contains(input_error([&] { kvlab::make_plan(no_params, g, q); }), "--params"));
  q.params = 7e9;
  CHECK_NOTHROW(kvlab::make_plan(no_params, g, q));
  q = {};
  q.ctx = std::uint64_t{1} << 40;
  q.batch = std::uint64_t{1} << 40;
  CHECK_THROWS_AS(kvlab::make_plan(m, g, q), kvlab::InputError);
}

TEST_CASE("roofline --gpu X alone: the course's 7B at batch 1 and 8 on X (004 §B.2 (c))") {
  kvlab::checks::RooflineOptions o;
  o.gpu = "h100-sxm";
  const kvlab::Result r = kvlab::checks::run_roofline(o, {});
  CHECK(r.passed());
  // N = 7e9 at 2 B plus llama-2-7b's cache at ctx 1024: 14e9 + 524,288 × 1024 bytes.
  CHECK(r.metric_value("bytes") == 14'536'870'912.0);
  CHECK(close(r.metric_value("tokens_per_s"), 3.35e12 / 14'536'870'912.0));
  CHECK(close(r.metric_value("time_s"), 14'536'870'912.0 / 3.35e12));
  CHECK(close(r.metric_value("ridge"), 989.5e12 / 3.35e12));
  CHECK(r.metric_value("tokens_per_s_batch8") > r.metric_value("tokens_per_s"));

  kvlab::checks::RooflineOptions flags;
  flags.bandwidth = "936GB/s";
  flags.peak_flops = "71TFLOPS";
  const kvlab::Result mine = kvlab::checks::run_roofline(flags, {});
  CHECK(mine.passed());
  CHECK(close(mine.metric_value("tokens_per_s"), 936e9 / 14'536'870'912.0));
  flags.bandwidth = "nan";
  CHECK(contains(input_error([&] { kvlab::checks::run_roofline(flags, {}); }), "--bandwidth"));
  kvlab::checks::RooflineOptions batch_alone;
  batch_alone.gpu = "h100-sxm";
  batch_alone.batch = 4;
  CHECK(contains(input_error([&] { kvlab::checks::run_roofline(batch_alone, {}); }), "--batch"));
}

TEST_CASE("roofline --tp 2: one device's step, half the weights and half the K/V heads") {
  kvlab::checks::RooflineOptions o;
  o.model = "llama-3-70b";
  o.gpu = "h100-sxm";
  o.ctx = 4096;
  o.batch = 2;
  const kvlab::Result whole = kvlab::checks::run_roofline(o, {});
  o.tp = 2;
  const kvlab::Result half = kvlab::checks::run_roofline(o, {});
  CHECK(whole.passed());
  CHECK(half.passed());
  CHECK(half.metric_value("kv_bytes") == whole.metric_value("kv_bytes") / 2);
  CHECK(half.metric_value("weight_bytes") == whole.metric_value("weight_bytes") / 2);
  CHECK(half.metric_value("bytes") == 71'895'883'776.0);  // as plan's golden above
  o.tp = 3;
  CHECK(contains(input_error([&] { kvlab::checks::run_roofline(o, {}); }), "--tp"));
}

}  // namespace cost_plan_test
