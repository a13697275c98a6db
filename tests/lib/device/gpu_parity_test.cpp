// The CUDA kernels' float64 references, hand-checked; the parity comparison (NaN first,
// then error against the dtype bound) fed CPU-computed "device" outputs — the honest float32
// stand-in must pass every case, each deliberate fault must fail; and, when a GPU is present,
// the real kernels (otherwise: skipped, never passed).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "attention/gqa.hpp"
#include "device/cuda_entry.hpp"
#include "device/device.hpp"
#include "reference/kernels.hpp"
#include "device/parity.hpp"
#include "core/tensor.hpp"

namespace device_gpu_parity_test {

using namespace kvlab;
using namespace kvlab::gpu;

namespace {

/// True when no row failed; prints the failing rows otherwise.
bool all_pass(const std::vector<ParityRow>& rows) {
  bool ok = true;
  for (const auto& r : rows)
    if (!r.result.passed) {
      ok = false;
      MESSAGE(r.kernel << " " << r.shape << " " << r.dtype << ": err " << r.result.error << " bound "
                       << r.result.bound << " non-finite " << r.result.non_finite << " stray "
                       << r.result.poison_lost);
    }
  return ok;
}

/// The rows of one kernel that failed.
int failures(const std::vector<ParityRow>& rows, const std::string& kernel, const std::string& shape_part = "") {
  int n = 0;
  for (const auto& r : rows)
    if (r.kernel == kernel && r.shape.find(shape_part) != std::string::npos && !r.result.passed) ++n;
  return n;
}

}  // namespace

TEST_CASE("gpu ref: bf16 rounding is nearest-even with relative error <= 2^-8") {
  CHECK(round_to_bf16(1.0f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 0x1.0p-8f) == 1.0f);               // a tie: to even (1.0)
  CHECK(round_to_bf16(1.0f + 0x1.8p-8f) == 1.0f + 0x1.0p-7f);   // above the tie: up
  CHECK(round_to_bf16(1.0f + 0x1.0p-7f + 0x1.0p-8f) == 1.0f + 0x1.0p-6f);  // a tie to the even neighbour
  CHECK(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  for (float x : {0.1f, 3.14159f, -1234.567f, 1e-20f})
    CHECK(std::abs(round_to_bf16(x) - x) <= kUnitBf16 * std::abs(x));
}

TEST_CASE("gpu ref: gamma_n and the storage units") {
  CHECK(gamma_f32(1) == doctest::Approx(0x1.0p-24).epsilon(1e-6));
  CHECK(gamma_f32(1000) > 1000 * 0x1.0p-24);
  CHECK(storage_unit(kernels::Storage::f32) == 0.0);
  CHECK(storage_unit(kernels::Storage::bf16) == 0x1.0p-8);
}

TEST_CASE("gpu ref: decode attention, hand-checked on one sequence of two positions") {
  // head_dim 2, one head: q = (1, 0), k0 = (0, 0), k1 = (sqrt2 ln 3, 0): scores 0 and ln 3, so the
  // weights are 1/4 and 3/4; v0 = (4, 0), v1 = (0, 8) -> out = (1, 6). scale_d = sum p |v|.
  kernels::DecodeAttentionInput in;
  in.layout.batch = 1, in.layout.n_kv_head = 1, in.layout.head_dim = 2, in.layout.max_ctx = 2;
  in.n_head = 1;
  in.q = {1, 0};
  in.k_cache = {0, 0, static_cast<float>(std::sqrt(2.0) * std::log(3.0)), 0};
  in.v_cache = {4, 0, 0, 8};
  in.lengths = {2};
  const Reference r = ref_decode_attention(in);
  REQUIRE(r.value.size() == 2);
  CHECK(r.value[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(r.value[1] == doctest::Approx(6.0).epsilon(1e-6));
  CHECK(r.scale[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(r.scale[1] == doctest::Approx(6.0).epsilon(1e-6));
  CHECK(r.bound > 0);
  CHECK(r.bound < 1e-4);  // float32 storage: the bound is a few hundred u here
}

TEST_CASE("gpu ref: the paged reference gathers through the block table") {
  // Two positions in blocks of 1: logical block 0 -> physical 1, 1 -> physical 0.
  kernels::DecodeAttentionInput in;
  auto& L = in.layout;
  L.batch = 1, L.n_kv_head = 1, L.head_dim = 2, L.paged = true, L.block_size = 1, L.num_blocks = 2,
  L.blocks_per_seq = 2, L.block_table = {1, 0};
  in.n_head = 1;
  in.q = {0, 0};                      // equal weights: the output is the mean of the two V rows
  in.k_cache = {0, 0, 0, 0};
  in.v_cache = {2, 0, 0, 4};
  in.lengths = {1};                   // only logical position 0 = physical slot 1: v = (0, 4)
  const Reference r = ref_decode_attention(in);
  CHECK(r.value[0] == doctest::Approx(0.0));
  CHECK(r.value[1] == doctest::Approx(4.0));
}

TEST_CASE("gpu ref: KV append marks untouched slots, RoPE and the row kernels match hand values") {
  kernels::KvAppendInput ap;
  ap.layout.batch = 2, ap.layout.n_kv_head = 1, ap.layout.head_dim = 2, ap.layout.max_ctx = 3;
  ap.k_new = {1, 2, 3, 4}, ap.v_new = {5, 6, 7, 8};
  ap.pos = {2, 0};
  const Reference a = ref_kv_append(ap);
  REQUIRE(a.value.size() == 24);
  CHECK(a.value[4] == 1.0);   // sequence 0, position 2 -> slot 2
  CHECK(a.value[6] == 3.0);   // sequence 1, position 0 -> slot 3
  CHECK(std::isnan(a.value[0]));
  CHECK(a.value[12 + 5] == 6.0);
  CHECK(a.bound == 0.0);

  kernels::RopeInput rp;
  rp.batch = 1, rp.n_heads = 1, rp.head_dim = 2, rp.theta = 10000, rp.pos = {1};
  rp.x = {1, 0};  // rotated by 1 rad: (cos 1, sin 1)
  const Reference r = ref_rope(rp);
  CHECK(r.value[0] == doctest::Approx(std::cos(1.0)));
  CHECK(r.value[1] == doctest::Approx(std::sin(1.0)));

  kernels::RowsInput rows;
  rows.rows = 1, rows.cols = 2, rows.x = {0, static_cast<float>(std::log(3.0))};
  const Reference s = ref_softmax(rows);
  CHECK(s.value[0] == doctest::Approx(0.25));
  CHECK(s.value[1] == doctest::Approx(0.75));
  rows.x = {-1, 1}, rows.gain = {2, 2}, rows.bias = {1, 1};
  const Reference ln = ref_layer_norm(rows);  // (x - 0) / sqrt(1 + 1e-5) * 2 + 1
  CHECK(ln.value[0] == doctest::Approx(1 - 2 / std::sqrt(1 + 1e-5)));
  CHECK(ln.value[1] == doctest::Approx(1 + 2 / std::sqrt(1 + 1e-5)));
  rows.x = {0, 1};
  const Reference g = ref_gelu(rows);
  CHECK(g.value[0] == 0.0);
  CHECK(g.value[1] == doctest::Approx(0.8413447460685429));
}

TEST_CASE("gpu plan: spans fit shared memory, cover every position and fill the device") {
  for (int group : {1, 2, 4, 8, 16, 32, 64, 128})
    for (int max_len : {1, 31, 32, 33, 1000, 4096, 131072})
      for (int batch : {1, 8, 64})
        for (int sms : {1, 108, 132}) {
          const auto p = kernels::plan_attention_spans(group, 8, batch, max_len, sms);
          CAPTURE(group);
          CAPTURE(max_len);
          CAPTURE(batch);
          CAPTURE(sms);
          CHECK(p.chunk >= 32);
          CHECK((p.chunk & (p.chunk - 1)) == 0);                      // a power of two
          CHECK(group * p.chunk * 4 <= 16 * 1024);                     // scores [G, chunk] in 16 KiB
          CHECK(static_cast<long long>(p.chunk) * p.n_chunks >= max_len);  // every position in a span
          CHECK(static_cast<long long>(p.chunk) * (p.n_chunks - 1) < max_len);  // no empty trailing span
        }
  // Long contexts at batch 1 are split across the device (flash-decoding), not one block per head.
  const auto p = kernels::plan_attention_spans(4, 8, 1, 131072, 132);
  CHECK(8LL * p.n_chunks >= 4 * 132);
}

TEST_CASE("gpu parity: compare() flags NaN first, stray writes, and errors above the bound") {
  Reference ref;
  ref.value = {1.0, 2.0, std::numeric_limits<double>::quiet_NaN()};
  ref.scale = {1.0, 2.0, 0.0};
  ref.bound = 1e-3;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> good = {1.0005f, 2.0f, nan};
  CHECK(compare(good, ref).passed);
  std::vector<float> has_nan = {nan, 2.0f, nan};
  const Comparison c1 = compare(has_nan, ref);
  CHECK_FALSE(c1.passed);
  CHECK(c1.non_finite == 1);
  CHECK(c1.first_bad == 0);
  std::vector<float> inf = {1.0f, std::numeric_limits<float>::infinity(), nan};
  CHECK_FALSE(compare(inf, ref).passed);
  std::vector<float> stray = {1.0f, 2.0f, 0.0f};  // wrote a slot that must keep the poison
  const Comparison c2 = compare(stray, ref);
  CHECK_FALSE(c2.passed);
  CHECK(c2.poison_lost == 1);
  std::vector<float> off = {1.0f, 2.01f, nan};     // 0.01 / 2 = 5e-3 > 1e-3
  const Comparison c3 = compare(off, ref);
  CHECK_FALSE(c3.passed);
  CHECK(c3.worst == 1);
  CHECK(c3.error == doctest::Approx(0.005).epsilon(1e-3));
  std::vector<float> short_out = {1.0f};
  CHECK_FALSE(compare(short_out, ref).passed);
}

TEST_CASE("gpu parity: the honest float32 CPU stand-in passes every case and shape") {
  CpuF32Runner cpu;
  const auto rows = run_parity(cpu, 1234);
  CHECK(rows.size() >= 30);
  CHECK(all_pass(rows));
  // Every CUDA kernel is in the table, with both cache storages for the cache kernels.
  for (const char* k : {"kv_append", "rope", "decode_attention", "layer_norm", "gelu", "softmax"}) {
    int n = 0;
    for (const auto& r : rows) n += r.kernel == k;
    CHECK_MESSAGE(n > 0, k);
  }
  int bf16_attn = 0;
  for (const auto& r : rows) bf16_attn += r.kernel == "decode_attention" && r.dtype == "bf16";
  CHECK(bf16_attn > 0);
}

TEST_CASE("gpu parity: every deliberate fault of the stand-in fails its kernel") {
  auto run_with = [](KernelFaults f, const std::string& only = "") {
    CpuF32Runner cpu(f);
    return run_parity(cpu, 1234, only);
  };
  KernelFaults f;
  f.paged_ignores_table = true;
  auto rows = run_with(f, "decode_attention");
  CHECK(failures(rows, "decode_attention", "paged") > 0);
  CHECK(failures(rows, "decode_attention", "contiguous") == 0);  // the fault touches only the gather

  f = {};
  f.attention_drops_last = true;
  CHECK(failures(run_with(f, "decode_attention"), "decode_attention") > 0);

  f = {};
  f.bf16_truncates = true;  // truncation errs up to 2^-7 relative: above the 2^-8 storage bound
  rows = run_with(f, "kv_append");
  int bf16_append_fail = 0;
  for (const auto& r : rows) bf16_append_fail += r.kernel == "kv_append" && r.dtype == "bf16" && !r.result.passed;
  CHECK(bf16_append_fail > 0);

  f = {};
  f.append_wrong_slot = true;
  CHECK(failures(run_with(f, "kv_append"), "kv_append") > 0);

  f = {};
  f.skips_last_element = true;  // the NaN poison shows
  for (const char* k : {"rope", "layer_norm", "gelu", "softmax"}) {
    rows = run_with(f, k);
    CHECK_MESSAGE(failures(rows, k) == static_cast<int>(rows.size()), k);  // every case of the kernel
    for (const auto& r : rows) CHECK(r.result.non_finite == 1);
  }

  f = {};
  f.rope_float_angle = true;
  CHECK(failures(run_with(f, "rope"), "rope") > 0);

  f = {};
  f.layer_norm_no_eps = true;
  CHECK(failures(run_with(f, "layer_norm"), "layer_norm") > 0);
}

namespace {
/// Whether the device test can run; when not, says why on stderr (doctest then counts the test
/// as skipped, never as passed).
bool no_gpu() {
  std::string why;
  if (cuda_compiled() && !cuda_devices(&why).empty()) return false;
  std::fprintf(stderr, "[test_gpu_parity] skipped: %s\n",
               cuda_compiled() ? ("no CUDA device (" + why + ")").c_str() : "built without CUDA");
  return true;
}
}  // namespace

TEST_CASE("gpu parity: the real kernels on a CUDA device" * doctest::skip(no_gpu())) {
  auto runner = make_cuda_runner();
  CHECK(all_pass(run_parity(*runner, 1234)));
}

}  // namespace device_gpu_parity_test
