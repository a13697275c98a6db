// kv-quant (checks/kv_quant.cpp): the check passing, failing with a scale dropped on the decode
// path or per-token keys, refusing bad options, and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "checks/kv_quant.hpp"
#include "core/error.hpp"
#include "quant/quant_cache.hpp"
#include "../test_util.hpp"

namespace check_kv_quant_test {

using namespace kvlab;

TEST_CASE("kv-quant passes, and fails with a scale dropped on the decode path or per-token keys") {
  checks::RunContext ctx;
  checks::KvQuantOptions o;
  const Result good = checks::run_kv_quant(o, ctx);
  CHECK(good.passed());
  CHECK(good.errata().empty());
  CHECK(good.metric_value("max_prefill_decode_diff") == 0.0);
  CHECK(good.metric_value("kivi_cells_per_channel_wins") == 9.0);

  checks::KvQuantParts dropped;  // decode appends store scale 1: prefill ≠ decode, and errors explode
  dropped.make_cache = [](int width, int max_len, const QuantConfig& cfg) {
    QuantConfig c = cfg;
    c.faults.drop_scale_on_decode = true;
    return std::make_unique<QuantKVCache<double>>(1, width, max_len, c);
  };
  const Result bad = checks::run_kv_quant(o, ctx, dropped);
  CHECK_FALSE(bad.passed());
  CHECK(bad.metric_value("max_prefill_decode_diff") > 0.0);

  checks::KvQuantParts per_token;  // a cache that ignores KIVI's layout and quantizes K per token
  per_token.make_cache = [](int width, int max_len, const QuantConfig& cfg) {
    QuantConfig c = cfg;
    c.key_axis = KeyAxis::per_token;
    return std::make_unique<QuantKVCache<double>>(1, width, max_len, c);
  };
  const Result tok = checks::run_kv_quant(o, ctx, per_token);
  CHECK_FALSE(tok.passed());
  CHECK(tok.metric_value("kivi_cells_per_channel_wins") < 9.0);

  o.head_dim = 63;
  CHECK(test::input_error([&] { checks::run_kv_quant(o, ctx); }).find("--head-dim") != std::string::npos);
  o = {};
  o.group_size = 129;
  CHECK(test::input_error([&] { checks::run_kv_quant(o, ctx); }).find("--group-size") != std::string::npos);
  o = {};
  o.tokens = 4096;
  o.kv_heads = 8;
  CHECK(test::input_error([&] { checks::run_kv_quant(o, ctx); }).find("--tokens") != std::string::npos);
  o = {};
  o.outlier_scale = NAN;
  CHECK(test::input_error([&] { checks::run_kv_quant(o, ctx); }).find("--outlier-scale") != std::string::npos);
}

TEST_CASE("kv-quant: judge fails a buffer one byte long, an element past its bound, and a decode read that differs") {
  checks::KvQuantOptions o;
  o.tokens = 32;
  o.kv_heads = 1;
  o.head_dim = 16;
  o.group_size = 16;
  o.queries = 2;
  const checks::KvQuantMeasured good = checks::measure_kv_quant(o, checks::RunContext{});
  // Formats fp16, int8, int4, int2, fp8 e4m3, fp8 e5m2. Rows: bytes per format (0–5), the cell
  // count (6), ratios of codes (7–8) and with scales (9–11), element bounds per format (12–17),
  // fp8 relative errors (18–19), attention bounds per format (20–25), KIVI (26), the ordinary
  // channels (27), prefill = decode (28).
  REQUIRE(good.formats == all_kv_quant_formats());
  const auto rows = checks::judge_kv_quant(good);
  REQUIRE(rows.size() == 29);
  for (const Expectation& e : rows) CHECK(e.holds());
  checks::KvQuantMeasured off = good;
  for (checks::KvBytesCell& c : off.bytes)  // the int4 cache at G holds one byte more than its layout
    if (c.format == KvQuantFormat::int4 && c.group == o.group_size) c.bytes.value_params += 1;
  const auto longer = checks::judge_kv_quant(off);
  CHECK_FALSE(longer[2].holds());
  CHECK_FALSE(longer[6].holds());
  CHECK_FALSE(longer[11].holds());  // int4's transfer ratio with its scales
  off = good;
  REQUIRE(off.errors.back().format == KvQuantFormat::fp8_e5m2);
  off.errors.back().element = 1.01;  // one fp8 e5m2 element 1% past its format's bound
  CHECK_FALSE(checks::judge_kv_quant(off)[17].holds());
  off = good;
  off.paths[1].dv = 0x1.0p-40;  // an int8 V position reads back differently after decode
  CHECK_FALSE(checks::judge_kv_quant(off)[28].holds());
  off = good;
  REQUIRE(off.kivi.back().outlier_keys);
  off.kivi.back().k_per_token = off.kivi.back().k_per_channel / 2;  // per-token K the better on an outlier cell
  CHECK_FALSE(checks::judge_kv_quant(off)[26].holds());
}

}  // namespace check_kv_quant_test
