// Claims docs/claims.md once only showed or planned, now judged: the linear-attention layer the
// check of that name rests on (003 part 3); roofline's rows for 000 §1.1, §3.1, 003 Q6 and 004 §1.5;
// kv-size's cell-by-cell judgment of the cheatsheet's tables. Each passes with kvlab's parts and
// fails with a broken one.
#include <doctest/doctest.h>

#include <memory>

#include <fmt/format.h>

#include "attention/linear_attention.hpp"
#include "checks/roofline_check.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

using namespace kvlab;

TEST_CASE("linear attention: recurrent = parallel; state and work per step are constant") {
  Rng rng(7);
  const int T = 20, d = 5;
  Mat<double> q(T, d), k(T, d), v(T, d);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < d; ++j) q(t, j) = rng.normal(), k(t, j) = rng.normal(), v(t, j) = rng.normal();
  for (const double gamma : {1.0, 0.5}) {
    LinearAttention layer(d, d, gamma);
    const Mat<double> par = linear_attention_parallel(q, k, v, gamma);
    for (int t = 0; t < T; ++t) {
      const Vec<double> y = layer.step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose());
      CHECK((y - par.row(t).transpose()).cwiseAbs().maxCoeff() < 1e-13);
      CHECK(layer.state_bytes() == (d * d + d) * sizeof(double));
      CHECK(layer.last_step_macs() == static_cast<std::uint64_t>(2 * d * d + 2 * d));
    }
  }
  // t = 0 sees only itself: y_0 = v_0 whatever q and γ are.
  LinearAttention first(d, d, 0.5);
  CHECK((first.step(q.row(0).transpose(), k.row(0).transpose(), v.row(0).transpose()) - v.row(0).transpose())
            .cwiseAbs()
            .maxCoeff() < 1e-15);
  CHECK(test::input_error([] { LinearAttention(4, 4, 0.0); }).find("decay") != std::string::npos);
  CHECK(test::input_error([] { LinearAttention(0, 4); }).find("key_dim") != std::string::npos);
  CHECK_THROWS_AS(LinearAttention(4, 4).step(Vec<double>::Zero(3), Vec<double>::Zero(4), Vec<double>::Zero(4)),
                  std::invalid_argument);
}

// ---- roofline's judged rows for 000 §1.1, §3.1, 003 Q6 and 004 §1.5's last row ----------------


namespace {

/// The expectation of `r` whose quantity starts with `prefix`; fails the test when there is none.
const Expectation* row_starting(const Result& r, const std::string& prefix) {
  for (const auto& e : r.expectations)
    if (e.quantity.rfind(prefix, 0) == 0) return &e;
  FAIL("no expectation starts with: " << prefix);
  return nullptr;
}

}  // namespace

TEST_CASE("roofline judges 70B utilization (E10), the 40 GB ridge, the crossover, the KV share (E16) and 80 GB") {
  const Result ok = checks::run_roofline({}, checks::RunContext{});
  CHECK(ok.passed());
  CHECK(ok.metric_value("utilization_70b_batch1_percent") == doctest::Approx(0.361059).epsilon(1e-5));
  CHECK(row_starting(ok, "decode FLOP utilization bound")->is_erratum());
  CHECK(row_starting(ok, "KV share of the bytes a decode step reads, llama-2-7b, N = 7e9, batch 1000")->is_erratum());
  CHECK_FALSE(row_starting(ok, "ridge point, A100-40GB")->is_erratum());
  CHECK(row_starting(ok, "smallest batch that makes decode compute-bound, ctx 128")->measured == 564);

  // A step that forgets the KV cache's bytes: utilization, KV share and the 80 GB rows fail.
  checks::RooflineParts no_kv;
  no_kv.decode_step = [](const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
    DecodeStep s = decode_step(m, g, q);
    s.bytes -= static_cast<double>(s.kv_bytes);
    s.kv_bytes = 0;
    s.intensity = s.flops / s.bytes;
    return s;
  };
  const Result bad = checks::run_roofline({}, checks::RunContext{}, no_kv);
  CHECK_FALSE(bad.passed());
  CHECK_FALSE(row_starting(bad, "decode FLOP utilization bound")->holds());
  CHECK_FALSE(row_starting(bad, "KV share of the bytes a decode step reads, llama-2-7b, N = 7e9, batch 1000")->holds());
  CHECK_FALSE(row_starting(bad, "the last row fits one a100-80gb")->holds());

  // A llama-2-7b read as MQA (its data/facts.md bytes per token unchanged): the crossover rows fail.
  checks::RooflineParts gqa7;
  gqa7.load_model = [](const std::string& n) {
    ModelSpec m = load_model(n);
    if (n == "llama-2-7b") m.n_kv_head = 1;
    return m;
  };
  const Result crossed = checks::run_roofline({}, checks::RunContext{}, gqa7);
  CHECK_FALSE(row_starting(crossed, "decode intensity as batch → ∞, llama-2-7b, N = 7e9, ctx 1024")->holds());
  CHECK_FALSE(row_starting(crossed, "smallest batch that makes decode compute-bound, ctx 1024")->holds());

  // A catalogue whose A100-40GB has the 80 GB card's bandwidth: the ≈ 200 row fails.
  checks::RooflineParts wrong_40;
  wrong_40.load_gpu = [](const std::string& n) {
    GpuSpec g = load_gpu(n);
    if (n == "a100-40gb") g.bandwidth_bytes_per_s = 2.039e12;
    return g;
  };
  CHECK_FALSE(row_starting(checks::run_roofline({}, checks::RunContext{}, wrong_40), "ridge point, A100-40GB")->holds());
}


