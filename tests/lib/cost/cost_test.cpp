// The cost model (lib/cost/): KV-cache bytes on data/facts.md's values, int4's half byte, overflow as
// an InputError, the decode roofline on the course's numbers, where decode turns compute-bound, and
// the mixture-of-experts weight model (N_active per token, the experts a batch touches).
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"

namespace cost_cost_test {

using kvlab::test::input_error;

namespace {

using kvlab::CacheDtype;
using kvlab::InputError;
using kvlab::KvQuery;
using kvlab::ModelSpec;


std::uint64_t total_bytes(const std::string& model, std::uint64_t batch, std::uint64_t ctx, CacheDtype d,
                          std::optional<std::uint64_t> heads = std::nullopt) {
  return kvlab::kv_cache_size(kvlab::load_model(model), KvQuery{batch, ctx, d, heads}).total_bytes;
}

/// A tiny MLA spec whose cache has an odd element count per token (3), to exercise int4.
ModelSpec odd_mla() {
  ModelSpec m;
  m.name = "odd";
  m.n_layer = 1;
  m.d_model = 8;
  m.n_head = 2;
  m.n_kv_head = 2;
  m.head_dim = 4;
  m.vocab_size = 10;
  m.kv_lora_rank = 2;
  m.qk_rope_head_dim = 1;
  return m;
}

}  // namespace

TEST_CASE("kv bytes: all catalogue models' 16-bit per-token bytes equal data/facts.md's reference") {
  for (const auto& name : kvlab::model_names()) {
    CAPTURE(name);
    const ModelSpec m = kvlab::load_model(name);
    REQUIRE(m.kv_bytes_per_token_16bit.has_value());
    CHECK(kvlab::kv_bytes_per_token_16bit(m) == *m.kv_bytes_per_token_16bit);
  }
}

TEST_CASE("kv bytes: the course's figures, on data/facts.md's configs") {
  // 004 §1.4: 2 · 80 · 8 · 128 · (32 · 8192) · 2 = 80 GiB; MHA 640 GiB; MQA 10 GiB.
  CHECK(total_bytes("llama-2-70b", 32, 8192, CacheDtype::bf16) == 80ull << 30);
  CHECK(total_bytes("llama-2-70b", 32, 8192, CacheDtype::bf16, 64) == 640ull << 30);
  CHECK(total_bytes("llama-2-70b", 32, 8192, CacheDtype::bf16, 1) == 10ull << 30);
  CHECK(total_bytes("llama-2-7b", 1, 1, CacheDtype::bf16) == 524288);  // 0.5 MiB
  // 000 §0: LLaMA-3-70B, 4K, fp16: 1,342,177,280 B = 1.25 GiB.
  CHECK(total_bytes("llama-3-70b", 1, 4096, CacheDtype::fp16) == 1342177280ull);
  // 000 §2.2: DeepSeek-V2 (MLA): 60 · 4096 · 576 · 2 = 283,115,520 B.
  CHECK(total_bytes("deepseek-v2", 1, 4096, CacheDtype::fp16) == 283115520ull);
  // 003 Q5: 7B, 2048 tokens, fp16: 1 GiB, not 2.
  CHECK(total_bytes("llama-2-7b", 1, 2048, CacheDtype::fp16) == 1ull << 30);
  CHECK(total_bytes("llama-2-7b", 1, 2048, CacheDtype::fp32) == 2ull << 30);
  // MQA and explicit head_dim models.
  CHECK(total_bytes("falcon-7b", 1, 1, CacheDtype::bf16) == 2 * 32 * 1 * 64 * 2);
  CHECK(total_bytes("gemma-2-9b", 1, 1, CacheDtype::bf16) == 2 * 42 * 8 * 256 * 2);
  CHECK(total_bytes("palm-540b", 1, 1, CacheDtype::bf16) == 2 * 118 * 1 * 256 * 2);
}

TEST_CASE("kv bytes: dtypes, with int4 as half a byte computed in bits") {
  CHECK(kvlab::parse_cache_dtype("int4") == CacheDtype::int4);
  CHECK(input_error([] { kvlab::parse_cache_dtype("fp7"); }).find("kv-dtype") != std::string::npos);
  const ModelSpec m = kvlab::load_model("llama-2-7b");
  const auto per = [&](CacheDtype d) { return kvlab::kv_cache_size(m, KvQuery{1, 1, d, {}}).bytes_per_token; };
  CHECK(per(CacheDtype::fp32) == 1048576);
  CHECK(per(CacheDtype::fp16) == 524288);
  CHECK(per(CacheDtype::bf16) == 524288);
  CHECK(per(CacheDtype::fp8) == 262144);
  CHECK(per(CacheDtype::int8) == 262144);
  CHECK(per(CacheDtype::int4) == 131072);

  const ModelSpec odd = odd_mla();  // 3 elements per token: 12 bits = 1.5 bytes at int4
  const auto s1 = kvlab::kv_cache_size(odd, KvQuery{1, 1, CacheDtype::int4, {}});
  CHECK(s1.bits_per_token == 12);
  CHECK(s1.bytes_per_token == 1.5);
  CHECK(s1.total_bytes == 2);  // a partial byte occupies a whole one
  CHECK(kvlab::kv_cache_size(odd, KvQuery{1, 2, CacheDtype::int4, {}}).total_bytes == 3);
  CHECK(kvlab::kv_cache_size(odd, KvQuery{3, 1, CacheDtype::int4, {}}).total_bytes == 5);
}

TEST_CASE("kv bytes: the closed form equals a layer-by-layer count of the cache tensors") {
  for (const auto& name : kvlab::model_names()) {
    const ModelSpec m = kvlab::load_model(name);
    for (CacheDtype d : kvlab::all_cache_dtypes()) {
      CAPTURE(name);
      const KvQuery q{3, 1000, d, {}};
      const auto s = kvlab::kv_cache_size(m, q);
      CHECK(kvlab::count_elements(kvlab::kv_cache_tensors(m, q)) * kvlab::cache_dtype_bits(d) == s.total_bits);
    }
  }
  const auto t = kvlab::kv_cache_tensors(kvlab::load_model("deepseek-v2"), KvQuery{2, 7, CacheDtype::bf16, {}});
  REQUIRE(t.size() == 120);
  CHECK(t[0].name == "c_kv");
  CHECK(t[0].shape == std::vector<std::uint64_t>{2, 7, 512});
  CHECK(t[1].shape == std::vector<std::uint64_t>{2, 7, 64});
}

TEST_CASE("kv bytes: bad sizes and overflow are InputErrors, never a wrong number") {
  const ModelSpec big = kvlab::load_model("llama-3.1-405b");
  const std::string ovf = input_error([&] {
    kvlab::kv_cache_size(big, KvQuery{4'000'000'000ull, 4'000'000'000ull, CacheDtype::bf16, {}});
  });
  CHECK(ovf.find("overflows 64 bits") != std::string::npos);
  CHECK(ovf.find("batch") != std::string::npos);
  const auto max = std::numeric_limits<std::uint64_t>::max();
  CHECK(input_error([&] { kvlab::kv_cache_size(big, KvQuery{max, 2, CacheDtype::int4, {}}); })
            .find("batch x ctx") != std::string::npos);
  CHECK(input_error([&] { kvlab::kv_cache_size(big, KvQuery{0, 1, CacheDtype::bf16, {}}); }).find("batch") !=
        std::string::npos);
  CHECK(input_error([&] { kvlab::kv_cache_size(big, KvQuery{1, 0, CacheDtype::bf16, {}}); }).find("ctx") !=
        std::string::npos);
  // 2^63 bits still fits and comes out exact; 2^64 bits is refused.
  const ModelSpec m = kvlab::load_model("llama-2-7b");  // 2^22 bits per token at bf16
  CHECK(kvlab::kv_cache_size(m, KvQuery{1ull << 20, 1ull << 21, CacheDtype::bf16, {}}).total_bytes == 1ull << 60);
  CHECK_THROWS_AS(kvlab::kv_cache_size(m, KvQuery{1ull << 21, 1ull << 21, CacheDtype::bf16, {}}), InputError);
}

TEST_CASE("kv bytes: --kv-heads must divide the query heads and is refused for MLA") {
  const ModelSpec l70 = kvlab::load_model("llama-2-70b");
  CHECK(input_error([&] { kvlab::kv_layout(l70, 5); }) ==
        "kv-heads: must divide num_attention_heads = 64 of llama-2-70b (got 5)");
  CHECK(input_error([&] { kvlab::kv_layout(l70, 0); }).find("kv-heads") != std::string::npos);
  CHECK(input_error([&] { kvlab::kv_layout(l70, 128); }).find("kv-heads") != std::string::npos);
  CHECK(kvlab::kv_layout(l70, 16).elements_per_layer == 2 * 16 * 128);
  const std::string mla = input_error([] { kvlab::kv_layout(kvlab::load_model("deepseek-v2"), 8); });
  CHECK(mla.find("MLA") != std::string::npos);
  CHECK(mla.find("kv-heads") != std::string::npos);
}

TEST_CASE("roofline: the course's A100-80GB table (004 §1.5 group 5)") {
  const ModelSpec m7 = kvlab::load_model("llama-2-7b");
  const auto a100 = kvlab::load_gpu("a100-80gb");
  CHECK(kvlab::ridge_flops_per_byte(a100) == doctest::Approx(153.016).epsilon(1e-5));
  CHECK(kvlab::ridge_flops_per_byte(kvlab::load_gpu("a100-40gb")) == doctest::Approx(200.643).epsilon(1e-5));
  const auto step = [&](std::uint64_t b, std::uint64_t ctx) {
    return kvlab::decode_step(m7, a100, kvlab::DecodeQuery{7e9, 2.0, KvQuery{b, ctx, CacheDtype::bf16, {}}});
  };
  const auto s1 = step(1, 1024);
  // 4 · 1024 · 32 · 4096 FLOPs = 1024 · 524,288 B: the attention FLOPs equal the KV bytes, and
  // 2N FLOPs equal 2N bytes, so the intensity at batch 1 is exactly 1.
  CHECK(s1.intensity == 1.0);
  CHECK(s1.tokens_per_s == doctest::Approx(140.264).epsilon(1e-5));
  CHECK(s1.bound == kvlab::Bound::memory);
  CHECK(step(8, 1024).tokens_per_s == doctest::Approx(891.611).epsilon(1e-5));
  const auto s64 = step(64, 4096);
  CHECK(s64.kv_bytes == 128ull << 30);
  CHECK(s64.weight_bytes == 14e9);
  CHECK(s64.intensity == doctest::Approx(6.82413).epsilon(1e-5));
  CHECK(s64.flops == 2 * 7e9 * 64 + 4.0 * 64 * 4096 * 32 * 4096);
  CHECK(s64.time_s == std::max(s64.time_memory_s, s64.time_compute_s));
  CHECK(s64.tokens_per_s * s64.time_s == doctest::Approx(64.0));
}

TEST_CASE("roofline: compute-bound batch solves intensity = ridge, or says never") {
  const ModelSpec m7 = kvlab::load_model("llama-2-7b");
  const auto a100 = kvlab::load_gpu("a100-80gb");
  const auto q = [](std::uint64_t b, std::uint64_t ctx) {
    return kvlab::DecodeQuery{7e9, 2.0, KvQuery{b, ctx, CacheDtype::bf16, {}}};
  };
  const auto never = kvlab::compute_bound_batch(m7, a100, q(1, 1024));
  CHECK_FALSE(never.reachable);
  CHECK(never.intensity_limit == doctest::Approx((14e9 + 4.0 * 1024 * 32 * 4096) / (1024.0 * 524288)));
  CHECK(kvlab::decode_step(m7, a100, q(1'000'000, 1024)).bound == kvlab::Bound::memory);

  const auto cb = kvlab::compute_bound_batch(m7, a100, q(1, 128));
  REQUIRE(cb.reachable);
  CHECK(cb.min_batch == 564);
  CHECK(kvlab::decode_step(m7, a100, q(cb.min_batch, 128)).bound == kvlab::Bound::compute);
  CHECK(kvlab::decode_step(m7, a100, q(cb.min_batch - 1, 128)).bound == kvlab::Bound::memory);
  const auto h100 = kvlab::load_gpu("h100-sxm");  // GQA at short context on another GPU
  const ModelSpec l3 = kvlab::load_model("llama-3-8b");
  const auto cb3 = kvlab::compute_bound_batch(l3, h100, kvlab::DecodeQuery{8.03e9, 2.0, KvQuery{1, 256, CacheDtype::bf16, {}}});
  REQUIRE(cb3.reachable);
  const auto at = [&](std::uint64_t b) {
    return kvlab::decode_step(l3, h100, kvlab::DecodeQuery{8.03e9, 2.0, KvQuery{b, 256, CacheDtype::bf16, {}}});
  };
  CHECK(at(cb3.min_batch).intensity >= at(cb3.min_batch).ridge);
  CHECK(at(cb3.min_batch - 1).intensity < at(cb3.min_batch - 1).ridge);
}

TEST_CASE("roofline: MLA attention FLOPs use the absorbed form; bad inputs are InputErrors") {
  const ModelSpec ds = kvlab::load_model("deepseek-v2");
  CHECK(kvlab::attention_flops_per_sequence(ds, 10) == 10ull * 60 * 128 * (2 * (512 + 64) + 2 * 512));
  CHECK(kvlab::attention_flops_per_sequence(kvlab::load_model("llama-2-7b"), 10) == 4ull * 10 * 32 * 32 * 128);
  const auto a100 = kvlab::load_gpu("a100-80gb");
  const ModelSpec m = kvlab::load_model("llama-2-7b");
  CHECK(input_error([&] { kvlab::decode_step(m, a100, kvlab::DecodeQuery{std::nan(""), 2.0, {}}); })
            .find("params") != std::string::npos);
  CHECK(input_error([&] { kvlab::decode_step(m, a100, kvlab::DecodeQuery{-1.0, 2.0, {}}); }).find("params") !=
        std::string::npos);
  CHECK(input_error([&] { kvlab::decode_step(m, a100, kvlab::DecodeQuery{7e9, 0.0, {}}); })
            .find("weight-bytes") != std::string::npos);
}

TEST_CASE("roofline, MoE: a token's FLOPs use N_active; the bytes grow from N_active towards N") {
  const ModelSpec mx = kvlab::load_model("mixtral-8x7b");
  const auto a100 = kvlab::load_gpu("a100-80gb");
  const double n = 46.7e9, a = 12.88e9;
  const kvlab::MoeQuery moe{a, 8, 2};
  const auto step = [&](std::uint64_t b) {
    return kvlab::decode_step(mx, a100, kvlab::DecodeQuery{n, 2.0, KvQuery{b, 1024, CacheDtype::bf16, {}}, moe});
  };
  // Batch 1: exactly the active parameters are read and used (the reviewer's H2: not 46.7e9).
  const auto s1 = step(1);
  CHECK(s1.weights.model == kvlab::WeightModel::moe_uniform);
  CHECK(s1.weights.params_read == a);
  CHECK(s1.weight_bytes == 2 * a);
  CHECK(s1.flops_weights == 2 * a);
  CHECK(s1.flops == 2 * a + 4.0 * 1024 * 32 * 32 * 128);
  // The split: P_e = (N − N_active)/(E − k), S = N_active − k·P_e (mixtral: 5.64e9 and 1.61e9).
  const double pe = (n - a) / 6, sh = a - 2 * pe;
  CHECK(s1.weights.params_per_expert == doctest::Approx(pe).epsilon(1e-15));
  CHECK(s1.weights.shared_params == doctest::Approx(sh).epsilon(1e-14));
  // Batch 2: an expert escapes both tokens with probability (3/4)^2, so D = 8·(1 − 9/16) = 3.5.
  const auto s2 = step(2);
  CHECK(s2.weights.experts_touched == doctest::Approx(3.5).epsilon(1e-15));
  CHECK(s2.weights.params_read == doctest::Approx(sh + 3.5 * pe).epsilon(1e-15));
  CHECK(s2.weights.params_read_high == doctest::Approx(sh + 4 * pe).epsilon(1e-15));
  CHECK(s2.flops_weights == 2 * a * 2);
  // Monotone in B, and all experts (N) by batch 256: 8·(3/4)^256 < 1e-30.
  double last = 0;
  for (std::uint64_t b : {1, 2, 3, 4, 8, 16, 64}) {
    const double r = step(b).weights.params_read;
    CHECK(r > last);
    CHECK(r <= n);
    last = r;
  }
  CHECK(step(256).weights.params_read == doctest::Approx(n).epsilon(1e-15));
}

TEST_CASE("roofline, MoE without E and k: exact at batch 1, the worst case min(N, B·N_active) beyond") {
  const ModelSpec ds = kvlab::load_model("deepseek-v3");
  const auto a100 = kvlab::load_gpu("a100-80gb");
  const auto read = [&](std::uint64_t b) {
    return kvlab::weight_read(671e9, kvlab::MoeQuery{37e9, {}, {}}, b);
  };
  CHECK(read(1).params_read == 37e9);
  CHECK(read(1).model == kvlab::WeightModel::moe_worst_case);
  CHECK(read(4).params_read == 4 * 37e9);
  CHECK(read(4).params_read_low == 37e9);
  CHECK(read(100).params_read == 671e9);
  const auto s = kvlab::decode_step(ds, a100, kvlab::DecodeQuery{671e9, 2.0, KvQuery{1, 4096, CacheDtype::bf16, {}},
                                                                  kvlab::MoeQuery{37e9, {}, {}}});
  CHECK(s.weight_bytes == 74e9);
  CHECK(s.flops_weights == 74e9);
  // Dense stays dense: no MoE query, or N_active = N.
  CHECK(kvlab::weight_read(7e9, std::nullopt, 64).params_read == 7e9);
  CHECK(kvlab::weight_read(7e9, kvlab::MoeQuery{7e9, {}, {}}, 64).model == kvlab::WeightModel::dense);
}

TEST_CASE("roofline, MoE: inconsistent figures are InputErrors naming them") {
  using kvlab::MoeQuery;
  CHECK(input_error([] { kvlab::weight_read(7e9, MoeQuery{8e9, {}, {}}, 1); }).find("active-params") == 0);
  CHECK(input_error([] { kvlab::weight_read(7e9, MoeQuery{0.5, {}, {}}, 1); }).find("active-params") == 0);
  CHECK(input_error([] { kvlab::weight_read(7e9, MoeQuery{std::nan(""), {}, {}}, 1); }).find("active-params") == 0);
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{12.88e9, 8, std::nullopt}, 1); })
            .find("experts-per-token") == 0);
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{12.88e9, 8, 9}, 1); })
            .find("experts-per-token: must be in [1, experts = 8] (got 9)") == 0);
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{12.88e9, 8, 0}, 1); }).find("experts-per-token") == 0);
  // N·k/E = 11.675e9 > 11e9: the shared parameters would be negative.
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{11e9, 8, 2}, 1); })
            .find("active-params: must be >= params × experts-per-token / experts") == 0);
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{12.88e9, 8, 8}, 1); }).find("active-params") == 0);
  CHECK(input_error([] { kvlab::weight_read(46.7e9, MoeQuery{12.88e9, 8, 2}, 0); }).find("batch") == 0);
}

TEST_CASE("roofline, MoE: the compute-bound batch is the first integer batch at the ridge") {
  const ModelSpec mx = kvlab::load_model("mixtral-8x7b");
  const auto a100 = kvlab::load_gpu("a100-80gb");
  for (const auto& moe : {kvlab::MoeQuery{12.88e9, 8, 2}, kvlab::MoeQuery{12.88e9, {}, {}}}) {
    const auto q = [&](std::uint64_t b, std::uint64_t ctx) {
      return kvlab::DecodeQuery{46.7e9, 2.0, KvQuery{b, ctx, CacheDtype::bf16, {}}, moe};
    };
    CHECK_FALSE(kvlab::compute_bound_batch(mx, a100, q(1, 4096)).reachable);  // I(∞) < ridge
    const auto cb = kvlab::compute_bound_batch(mx, a100, q(1, 128));
    REQUIRE(cb.reachable);
    CAPTURE(cb.min_batch);
    const auto at = [&](std::uint64_t b) { return kvlab::decode_step(mx, a100, q(b, 128)); };
    CHECK(at(cb.min_batch).intensity >= at(cb.min_batch).ridge);
    CHECK(at(cb.min_batch - 1).intensity < at(cb.min_batch - 1).ridge);
    CHECK(cb.batch == doctest::Approx(static_cast<double>(cb.min_batch)).epsilon(1.0 / cb.min_batch));
  }
}

TEST_CASE("roofline_time: the max of the two times, and which one bounds (memory on a tie)") {
  using kvlab::Bound, kvlab::RooflineTime, kvlab::roofline_time;
  const RooflineTime c = roofline_time(8.0, 1.0, 2.0, 1.0);  // 4 s of compute, 1 s of memory
  CHECK(c.compute_s == 4.0);
  CHECK(c.memory_s == 1.0);
  CHECK(c.time_s == 4.0);
  CHECK(c.bound == Bound::compute);
  const RooflineTime m = roofline_time(1.0, 6.0, 1.0, 2.0);  // 1 s against 3 s
  CHECK(m.time_s == 3.0);
  CHECK(m.bound == Bound::memory);
  CHECK(roofline_time(2.0, 2.0, 1.0, 1.0).bound == Bound::memory);
}

}  // namespace cost_cost_test
