// lib/reference/roofline.hpp: one step's FLOPs, bytes and roofline time, worked out by hand.
#include <doctest/doctest.h>

#include "reference/roofline.hpp"

namespace reference_roofline_test {

using namespace kvlab;

TEST_CASE("reference roofline: FLOPs per position, MHA and MLA") {
  CHECK(reference::attention_flops_per_position(32, 128) == 16384.0);  // 4 · 32 · 128
  // MLA, 2 heads, d_c = 4, d_r = 2: 2·2·6 + 2·2·4 = 24 + 16.
  CHECK(reference::mla_attention_flops_per_position(2, 4, 2) == 40.0);
}

TEST_CASE("reference roofline: a decode step, the course's 7B at batch 1") {
  // llama-2-7b: N = 7e9, 32 layers × 32 heads × 128; ctx 1000 cached tokens: 2·7e9 + 1000·32·16384.
  const double per_position = reference::attention_flops_per_position(32, 128);
  CHECK(reference::decode_flops(7e9, 1, 1000.0 * 32, per_position) == 14e9 + 524'288'000.0);
  CHECK(reference::decode_flops(7e9, 4, 32, per_position) == 56e9 + 4 * 32 * 16384.0);
}

TEST_CASE("reference roofline: a mixed step (prompt chunk + decodes) and its time") {
  reference::StepShape m;
  m.params = 100;
  m.bytes_per_param = 2;
  m.flops_per_token = 10;
  m.kv_bytes_per_token = 3;
  // A chunk of 4 tokens after 6 cached ones: 4·6 + 4·5/2 = 34 positions attended; 2 decodes at
  // context 5: 10 more. FLOPs = 2·100·6 + 10·44 = 1640; bytes = 200 + 3·(6 + 10) = 248.
  const reference::StepWork w = reference::step_work(m, 6, 4, 2, 5);
  CHECK(w.flops == 1640.0);
  CHECK(w.bytes == 248.0);
  CHECK(reference::roofline_seconds(w, 1640.0, 248.0) == 1.0);
  CHECK(reference::roofline_seconds(w, 164.0, 248.0) == 10.0);  // compute-bound
  CHECK(reference::roofline_seconds(w, 1640.0, 24.8) == 10.0);  // memory-bound
  // Decode only (no chunk): 2·N·B FLOPs plus ctx each; weights + B·ctx cache bytes.
  const reference::StepWork d = reference::step_work(m, 0, 0, 3, 7);
  CHECK(d.flops == 600.0 + 210.0);
  CHECK(d.bytes == 200.0 + 63.0);
}

}  // namespace reference_roofline_test
