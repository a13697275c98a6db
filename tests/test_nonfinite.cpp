// Nothing passes on NaN: the NaN-aware reductions of core/finite.hpp, the forward's refusal of a
// weights file whose activations overflow (MiniGPT::source, require_finite_forward), and every
// check that accepts --weights run on such a file: each refuses it (InputError naming the file)
// and none passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "checks/kv_invariance.hpp"
#include "core/finite.hpp"
#include "model/generate.hpp"
#include "model/gpt.hpp"
#include "model/weights_io.hpp"
#include "spec/jacobi.hpp"
#include "spec/loop.hpp"
#include "framework/check.hpp"
#include "test_util.hpp"

namespace test_nonfinite {

namespace {

using namespace kvlab;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kvlab_test_nonfinite_" + name + ".safetensors")).string();
}

/// Every weight of `m` multiplied by `scale` (LayerNorm gains and biases included).
template <class T>
void scale_weights(MiniGPT<T>& m, T scale) {
  auto& w = m.weights();
  w.wte *= scale;
  w.wpe *= scale;
  for (auto& b : w.blocks) {
    for (auto* x : {&b.w_q, &b.w_k, &b.w_v, &b.w_o, &b.w_fc, &b.w_proj}) *x *= scale;
    for (auto* x : {&b.ln1_gain, &b.ln1_bias, &b.b_q, &b.b_k, &b.b_v, &b.b_o, &b.ln2_gain, &b.ln2_bias, &b.b_fc,
                    &b.b_proj})
      *x *= scale;
  }
  w.lnf_gain *= scale;
  w.lnf_bias *= scale;
  w.w_lm *= scale;
}

/// A seeded model of `c` with every weight times `scale`, saved as F64 at a temporary path:
/// finite in the file, but its forward overflows (1e200 in float64, 1e30 in float32).
std::string overflowing_file(const std::string& name, const ModelConfig& c, double scale) {
  MiniGPT<double> m(c, 7);
  scale_weights(m, scale);
  const std::string path = tmp_path(name);
  save_gpt(m, path, {}, "F64");
  return path;
}

/// The shape of tests/cli_cases_weights.sh's model: every --weights check accepts it except the
/// ones that enumerate a small vocabulary.
ModelConfig wide_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 32;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.head_dim = 8;
  c.vocab_size = 256;
  c.block_size = 96;
  return c;
}

/// The small-vocabulary shape of the speculative checks that enumerate their output law.
ModelConfig small_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.n_kv_head = 2;
  c.head_dim = 8;
  c.vocab_size = 8;
  c.block_size = 16;
  return c;
}

}  // namespace

TEST_CASE("NaN-aware reductions keep the NaN that std::max and maxCoeff drop") {
  // What the checks did: std::max(0.0, NaN) is 0.0, so a NaN difference read as "equal".
  CHECK(std::max(0.0, kNaN) == 0.0);
  CHECK(std::isnan(nan_max(0.0, kNaN)));
  CHECK(std::isnan(nan_max(kNaN, 0.0)));
  CHECK(nan_max(1.0, 2.0) == 2.0);
  CHECK(std::isnan(nan_min(kNaN, 1.0)));
  CHECK(nan_min(3.0, 1.0) == 1.0);

  Mat<double> a = Mat<double>::Zero(2, 3), b = Mat<double>::Zero(2, 3);
  CHECK(max_abs_diff(a, b) == 0.0);
  a(1, 2) = kNaN;  // the last element: a plain maxCoeff's comparisons never pick it
  CHECK(std::isnan(max_abs_diff(a, b)));
  CHECK(std::isnan(max_abs_diff(b, a)));
  CHECK(std::isnan(max_abs(a - b)));
  CHECK(std::isnan(max_abs(a)));
  a(1, 2) = kInf;
  b(1, 2) = kInf;
  CHECK(std::isnan(max_abs_diff(a, b)));  // inf − inf: not "equal"
  CHECK(max_abs(Mat<double>(0, 0)) == 0.0);
  CHECK_THROWS_AS(max_abs_diff(Mat<double>(2, 2), Mat<double>(2, 3)), std::invalid_argument);

  const std::vector<float> x{1.0f, 2.0f, std::nanf("")}, y{1.0f, 2.0f, 3.0f};
  CHECK(std::isnan(max_abs_diff(std::span<const float>(x), std::span<const float>(y))));
  CHECK(max_abs_diff(std::span<const float>(y), std::span<const float>(y)) == 0.0);

  // An Expectation fed a NaN difference fails, and says the value was not finite.
  Result r;
  r.expect({.quantity = "max |Δ|", .source = "test", .unit = "", .expected = 0, .tolerance = 0, .why = "exact",
            .measured = nan_max(0.0, max_abs_diff(a, b))});
  CHECK_FALSE(r.passed());
}

TEST_CASE("argmax of non-finite logits is refused, not token 0 on both sides") {
  Mat<double> logits(2, 4);
  logits << 0.1, 0.5, 0.2, 0.3, kNaN, kNaN, kNaN, kNaN;
  CHECK(checked_argmax(logits.row(0)) == 1);
  CHECK_THROWS_AS(checked_argmax(logits.row(1)), NonFiniteError);
  CHECK(argmax_row(logits, 0) == 1);
  CHECK_THROWS_AS(argmax_row(logits, 1), NonFiniteError);
  CHECK_THROWS_AS(spec::jacobi_update(logits, 2, 1), NonFiniteError);  // reads row 1
  const std::vector<double> row{0.0, kNaN, 1.0};
  CHECK_THROWS_AS(spec::process_logits(row, spec::SamplerConfig{.temperature = 0.0}), NonFiniteError);
}

TEST_CASE("a weights file whose forward overflows is an input error naming the file; a seeded model is not") {
  ModelConfig c = wide_config();
  const std::string path = overflowing_file("forward", c, 1e200);
  const std::vector<int> ids{1, 2, 3};
  {
    const MiniGPT<double> m = load_gpt<double>(path);
    CHECK(m.source() == path);
    auto cache = m.make_cache(CacheKind::prealloc, 4);
    const std::string msg = test::input_error([&] { m.forward(ids, 0, *cache); });
    CHECK(msg.find(path + ": the forward gives non-finite values (layer 0") == 0);
    CHECK(msg.find("overflow float64") != std::string::npos);
  }
  {  // the same weights without a source: the NaN comes back, and the comparison layer fails on it
    MiniGPT<double> m = load_gpt<double>(path);
    m.set_source("");
    auto cache = m.make_cache(CacheKind::prealloc, 4);
    const Mat<double> logits = m.forward(ids, 0, *cache);
    CHECK_FALSE(logits.allFinite());
  }
  {  // float32: finite weights (1e30) whose forward overflows float32 only
    const std::string p32 = overflowing_file("forward32", c, 1e30);
    const MiniGPT<float> m = load_gpt<float>(p32);
    auto cache = m.make_cache(CacheKind::prealloc, 4);
    const std::string msg = test::input_error([&] { m.forward(ids, 0, *cache); });
    CHECK(msg.find("overflow float32") != std::string::npos);
    std::filesystem::remove(p32);
  }
  {  // a model that stays finite runs as before
    const std::string ok = tmp_path("finite");
    save_gpt(MiniGPT<double>(c, 7), ok, {});
    const MiniGPT<double> m = load_gpt<double>(ok);
    auto cache = m.make_cache(CacheKind::prealloc, 4);
    CHECK(m.forward(ids, 0, *cache).allFinite());
    std::filesystem::remove(ok);
  }
  std::filesystem::remove(path);
}

TEST_CASE("every check that accepts --weights refuses a file whose forward overflows, and none passes") {
  struct Case {
    const char* name;
    double scale;
    Dtype dtype;
  };
  // float64 with weights of 1e200; float32 with 1e30 (finite in float32, the forward overflows).
  const Case cases[] = {{"f64", 1e200, Dtype::f64}, {"f32", 1e30, Dtype::f32}};
  std::vector<std::string> covered;
  for (const auto& k : cases) {
    const std::string wide = overflowing_file(std::string("wide_") + k.name, wide_config(), k.scale);
    const std::string small = overflowing_file(std::string("small_") + k.name, small_config(), k.scale);
    for (auto& check : checks::make_all_checks()) {
      if (!check->uses_weights() || !check->weights_refusal().empty()) continue;
      if (k.dtype == Dtype::f32 && !check->uses_dtype()) continue;
      CAPTURE(check->name());
      CAPTURE(k.name);
      bool refused_for_overflow = false;
      for (const std::string& path : {wide, small}) {
        checks::RunContext ctx;
        ctx.dtype = k.dtype;
        ctx.weights = path;
        if (check->uses_draft_weights()) ctx.draft_weights = path;
        try {
          const Result r = check->run(ctx);
          CHECK_MESSAGE(!r.passed(), check->name() << " passed on " << path);
          CHECK(r.skipped.empty());
        } catch (const InputError& e) {
          const std::string msg = e.what();
          if (msg.find("non-finite") != std::string::npos) {
            refused_for_overflow = true;
            CHECK(msg.find(path) != std::string::npos);
            CHECK(msg.find('\n') == std::string::npos);
          }
        }
      }
      CHECK_MESSAGE(refused_for_overflow, check->name() << ": neither file reached the forward's refusal");
      if (refused_for_overflow && k.dtype == Dtype::f64) covered.push_back(check->name());
    }
    std::filesystem::remove(wide);
    std::filesystem::remove(small);
  }
  // The checks the overflow was first seen in are among those covered.
  for (const char* name : {"kv-invariance", "paged-vs-contiguous", "prefix-cache", "parallel-sampling",
                           "greedy-generate", "jacobi", "spec-greedy"})
    CHECK_MESSAGE(std::find(covered.begin(), covered.end(), name) != covered.end(), name << " not covered");
  MESSAGE(covered.size() << " checks refuse an overflowing --weights file");
}

TEST_CASE("kv-invariance refuses a bidirectional weights file like the other cache checks") {
  ModelConfig c = wide_config();
  c.causal = false;
  const std::string path = tmp_path("bidirectional");
  save_gpt(MiniGPT<double>(c, 3), path, {});
  checks::RunContext ctx;
  ctx.weights = path;
  const std::string msg = test::input_error([&] { checks::run_kv_invariance(checks::KvInvarianceOptions{}, ctx); });
  CHECK(msg.find("--weights " + path + ": causal = false") == 0);
  CHECK(msg.find("kv-invariance needs true") != std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace test_nonfinite
