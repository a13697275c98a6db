// lib/cost/premises.hpp: the course's premises, against the documents' own arithmetic and the
// catalogue entries they name.
#include <doctest/doctest.h>

#include <cmath>

#include "cost/premises.hpp"
#include "io/catalogue.hpp"

namespace cost_premises_test {

using namespace kvlab;

TEST_CASE("premises: the 7B's weights and the A100's ridge points as the documents compute them") {
  // 004 §1.5: 2N bytes of bf16 weights = 14 GB for the round 7B.
  CHECK(premises::kParams7b * premises::kBytesPerParam == 14e9);
  // 004 §1.5: ridge ≈ 153 FLOP/B on the 80 GB card; 000 §3.1's ≈ 200 is the 40 GB card's.
  CHECK(std::round(premises::kA100Bf16FlopsPerS / premises::kA100_80gbBandwidthBytesPerS) == 153.0);
  CHECK(std::round(premises::kA100Bf16FlopsPerS / premises::kA100_40gbBandwidthBytesPerS) == 201.0);  // 200.6
  CHECK(premises::kCtx == 4096);
  CHECK(premises::kDraftParams7b * 2 == 14e9);  // 000 §9.3: +14 GB
}

TEST_CASE("premises: the catalogue entries they name agree with the documents' figures") {
  const GpuSpec g = load_gpu(premises::kGpu);
  CHECK(g.bf16_flops_per_s == premises::kA100Bf16FlopsPerS);
  CHECK(g.bandwidth_bytes_per_s == premises::kA100_80gbBandwidthBytesPerS);
  CHECK(load_gpu("a100-40gb").bandwidth_bytes_per_s == premises::kA100_40gbBandwidthBytesPerS);
  const ModelSpec m = load_model(premises::kModel7b);
  CHECK(m.n_layer == 32);
  CHECK(m.n_head == 32);
  CHECK(m.n_kv_head == 32);  // MHA
  CHECK(m.head_dim == 128);
}

}  // namespace cost_premises_test
