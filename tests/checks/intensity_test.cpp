// intensity (checks/intensity.cpp): the check passing with the library's counts and byte model,
// failing when AV is forgotten, the FFN is 2D wide or the weights are re-read per row, and its
// judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cstdint>

#include "checks/intensity.hpp"
#include "core/error.hpp"
#include "cost/traffic.hpp"
#include "model/generate.hpp"
#include "../test_util.hpp"

namespace check_intensity_test {

using namespace kvlab;
using kvlab::test::input_error;

TEST_CASE("intensity: 000 §3.1 terms, MLP ∝ B, attention ≈ 1 (E17 on GQA); fails when AV is forgotten or the FFN is 2D") {
  checks::RunContext ctx;
  checks::IntensityOptions o;
  const Result ok = checks::run_intensity(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.errata().size() == 1);  // E17: the GQA row
  CHECK(ok.metric_value("attention_intensity") == doctest::Approx(1.0).epsilon(0.001));

  checks::IntensityParts no_av;
  no_av.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    OpCount k = count_forward(c, n, s);
    k.attn_values = 0;
    return k;
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, no_av).passed());

  checks::IntensityParts narrow_ffn;
  narrow_ffn.count = [](const ModelConfig& c, std::int64_t n, std::int64_t s) {
    OpCount k = count_forward(c, n, s);
    k.mlp /= 2;
    return k;
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, narrow_ffn).passed());

  checks::IntensityParts weights_per_row;  // re-reads the weights for every row: no batch reuse
  weights_per_row.linear_bytes = [](std::uint64_t rows, std::uint64_t in, std::uint64_t out, double b) {
    return static_cast<double>(rows) * linear_bytes(1, in, out, b);
  };
  CHECK_FALSE(checks::run_intensity(o, ctx, weights_per_row).passed());

  o.kv_heads = 8;  // GQA: the attention rows differ from 1 on every batch
  const Result gqa = checks::run_intensity(o, ctx);
  CHECK(gqa.passed());
  CHECK(gqa.errata().size() == 4);
  o.kv_heads = 5;
  CHECK(input_error([&] { checks::run_intensity(o, ctx); }).find("--kv-heads") != std::string::npos);
}

TEST_CASE("intensity: judge fails a term one FLOP off, an attention intensity of 2, and a memory-bound prefill") {
  const checks::IntensityMeasured good = checks::measure_intensity({});
  const auto rows = checks::judge_intensity(good);
  REQUIRE(rows.size() == 5 + 2 * 4 + 1 + 5 + 2);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::IntensityMeasured off = good;
  off.mlp += 1;  // the FFN term one FLOP over 16BLD²
  CHECK_FALSE(checks::judge_intensity(off)[3].holds());
  off = good;
  off.decode[2].attention_bytes /= 2;  // batch 64's attention reads half its cache: intensity 2
  CHECK_FALSE(checks::judge_intensity(off)[5 + 2 * 2 + 1].holds());
  CHECK(checks::judge_intensity(off)[5 + 2 * 2].holds());  // the MLP row of the same batch still holds
  off = good;
  off.ridge = 1e6;  // a GPU no prefill can saturate: the compute-bound claim fails
  const auto ridge_rows = checks::judge_intensity(off);
  CHECK_FALSE(ridge_rows[ridge_rows.size() - 2].holds());
  CHECK(ridge_rows.back().holds());
}

}  // namespace check_intensity_test
