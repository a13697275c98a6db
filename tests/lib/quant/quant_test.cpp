// Unit tests of the quantized KV cache: kvlab's own fp8/fp16 codecs against values the
// formats define, packed codes, KIVI's layout (per-channel K with a full-precision residual), a
// decode path that drops its scale (the checks kv-quant and int8-outliers have theirs in tests/checks/).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/rng.hpp"
#include "quant/int8_matmul.hpp"
#include "quant/minifloat.hpp"
#include "quant/quant_cache.hpp"
#include "test_util.hpp"

namespace quant_quant_test {

using namespace kvlab;

TEST_CASE("fp8 e4m3 / e5m2 and fp16: special values, saturation, ties to even") {
  const auto e4 = MiniFloat::fp8_e4m3, e5 = MiniFloat::fp8_e5m2, h = MiniFloat::fp16;
  CHECK(minifloat_decode(0x7E, e4) == 448.0);   // S.1111.110: largest finite
  CHECK(std::isnan(minifloat_decode(0x7F, e4)));  // S.1111.111: NaN, no infinities
  CHECK(minifloat_decode(0x01, e4) == std::ldexp(1.0, -9));  // smallest subnormal
  CHECK(minifloat_decode(0x08, e4) == std::ldexp(1.0, -6));  // smallest normal
  CHECK(minifloat_decode(0x7B, e5) == 57344.0);
  CHECK(std::isinf(minifloat_decode(0x7C, e5)));
  CHECK(std::isnan(minifloat_decode(0x7D, e5)));
  CHECK(minifloat_decode(0x7BFF, h) == 65504.0);
  CHECK(minifloat_decode(0x3C00, h) == 1.0);
  CHECK(minifloat_encode(1e6, e4) == 0x7E);  // saturates, also for inf
  CHECK(minifloat_encode(-std::numeric_limits<double>::infinity(), e4) == 0xFE);
  CHECK(minifloat_encode(1e9, e5) == 0x7B);
  CHECK(minifloat_encode(std::nan(""), e4) == 0x7F);
  // 1.0625 is halfway between 1 and 1.125 in e4m3: ties to even (1.0); 1.1875 -> 1.25.
  CHECK(minifloat_round(1.0625, e4) == 1.0);
  CHECK(minifloat_round(1.1875, e4) == 1.25);
  CHECK(minifloat_round(-3.3, e5) == -3.5);
  CHECK(minifloat_round(17.0, e4) == 16.0);  // step 2 in [16, 32): 17 is a tie, 16 is even
  CHECK(minifloat_round(464.0, e4) == 448.0);  // beyond max: saturated, not NaN
  CHECK(minifloat_round(std::ldexp(1.0, -10), e4) == 0.0);  // half the smallest subnormal: tie to 0
  // every finite code decodes and re-encodes to itself (fp8: all 256 codes)
  for (MiniFloat f : {e4, e5}) {
    int finite = 0;
    for (unsigned c = 0; c < 256; ++c) {
      const double v = minifloat_decode(static_cast<std::uint16_t>(c), f);
      if (!std::isfinite(v)) continue;
      ++finite;
      if (v == 0 && c != 0) continue;  // -0 encodes back to 0x80 too, checked by the next line
      CHECK(minifloat_encode(v, f) == c);
    }
    CHECK(finite == (f == e4 ? 254 : 248));
  }
  // round-trip relative error <= 2^-(M+1) for normals
  Rng rng(5);
  for (MiniFloat f : {e4, e5, h}) {
    const MiniFloatSpec& s = minifloat_spec(f);
    double worst = 0;
    for (int i = 0; i < 20000; ++i) {
      const double x = std::ldexp(1.0 + rng.uniform(), static_cast<int>(rng.uniform() * 8) - 3);
      worst = std::max(worst, std::fabs(minifloat_round(x, f) - x) / x);
    }
    CHECK(worst <= s.unit_roundoff());
    CHECK(worst > 0.85 * s.unit_roundoff());  // the worst case is u / (1 + u)
  }
  CHECK(minifloat_decode(minifloat_encode_up(1.0001, h), h) > 1.0001);
  CHECK(minifloat_decode(minifloat_encode_down(-1.0001, h), h) < -1.0001);
  CHECK(minifloat_decode(minifloat_encode_up(1e-9, h), h) == std::ldexp(1.0, -24));
  CHECK_THROWS_AS(minifloat_encode_up(70000.0, h), std::domain_error);
}

TEST_CASE("PackedCodes stores b bits per code") {
  for (int bits : {2, 4, 8, 16}) {
    PackedCodes p(bits);
    p.resize(37);
    CHECK(p.bytes() == (37u * bits + 7) / 8);
    const std::uint32_t mask = (1u << bits) - 1u;
    for (std::uint64_t i = 0; i < 37; ++i) p.set(i, static_cast<std::uint32_t>(i * 2654435761u) & mask);
    for (std::uint64_t i = 0; i < 37; ++i) CHECK(p.get(i) == (static_cast<std::uint32_t>(i * 2654435761u) & mask));
  }
  CHECK_THROWS_AS(PackedCodes(3), std::invalid_argument);
}

TEST_CASE("QuantKVCache: KIVI layout, residual, prefill = decode, bytes of the real buffers") {
  const int W = 16, G = 4, T = 11;
  Rng rng(9);
  Mat<double> k(T, W), v(T, W);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < W; ++c) {
      k(t, c) = rng.normal() * (c == 3 ? 30.0 : 1.0);
      v(t, c) = rng.normal();
    }
  for (KvQuantFormat f : all_kv_quant_formats()) {
    QuantConfig cfg;
    cfg.format = f;
    cfg.group_size = G;
    QuantKVCache<double> pre(1, W, 32, cfg), dec(1, W, 32, cfg);
    pre.append(0, k, v);
    for (int t = 0; t < T; ++t) dec.append(0, k.middleRows(t, 1), v.middleRows(t, 1));
    CHECK((pre.keys(0) - dec.keys(0)).cwiseAbs().maxCoeff() == 0.0);
    CHECK((pre.values(0) - dec.values(0)).cwiseAbs().maxCoeff() == 0.0);
    const bool fp16 = f == KvQuantFormat::fp16;
    CHECK(pre.quantized_key_positions(0) == (fp16 ? T : 8));  // two full groups of 4; 3 in the residual
    if (!fp16) CHECK((pre.keys(0).bottomRows(3) - k.bottomRows(3)).cwiseAbs().maxCoeff() == 0.0);
    const QuantBytes b = pre.bytes(0);
    const int bits = kv_quant_code_bits(f), np = kv_quant_params_per_group(f);
    CHECK(b.value_codes == std::uint64_t(T * W * bits / 8));
    CHECK(b.value_params == std::uint64_t(T * (W / G) * np * 2));
    CHECK(b.key_params == std::uint64_t(fp16 ? 0 : 2 * W * np * 2));
    CHECK(b.residual == std::uint64_t(fp16 ? 0 : 3 * W * 8));
    // the error stays within half a step for int formats
    if (f == KvQuantFormat::int4) {
      const double step_v = (v.row(0).maxCoeff() - v.row(0).minCoeff()) / 15.0;
      CHECK((pre.values(0).row(0) - v.row(0)).cwiseAbs().maxCoeff() <= step_v * 0.5 * (1 + 2e-3) + 1e-6);
    }
    pre.truncate(9);  // inside the residual: fine
    CHECK(pre.length(0) == 9);
    if (fp16) CHECK_NOTHROW(pre.truncate(6));
    else CHECK_THROWS_AS(pre.truncate(6), std::invalid_argument);  // inside quantized group 1
  }
  QuantConfig faulty;
  faulty.format = KvQuantFormat::int8;
  faulty.faults.drop_scale_on_decode = true;
  QuantKVCache<double> a(1, W, 32, faulty), b(1, W, 32, faulty);
  a.append(0, k, v);
  for (int t = 0; t < T; ++t) b.append(0, k.middleRows(t, 1), v.middleRows(t, 1));
  CHECK((a.values(0) - b.values(0)).cwiseAbs().maxCoeff() > 0.1);
}

}  // namespace quant_quant_test
