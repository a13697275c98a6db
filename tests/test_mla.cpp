// Unit tests of MLA (naive and absorbed paths, its latent cache), and the check mla-cache shown to
// fail on broken parts.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/gqa.hpp"
#include "cache/latent_cache.hpp"
#include "checks/mla_cache.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "model/mla.hpp"

using namespace kvlab;

TEST_CASE("LatentCache stores d_c + d_r per position and counts it") {
  LatentCache<double> cache(2, 5, 2, 4);
  for (int l = 0; l < 2; ++l) cache.append(l, Mat<double>::Constant(3, 5, l), Mat<double>::Constant(3, 2, -l));
  CHECK(cache.length(1) == 3);
  CHECK(cache.elements_written() == 2 * 3 * 7);
  CHECK(cache.elements_held() == 2 * 3 * 7);
  CHECK(cache.stats().positions_written == 6);
  CHECK(cache.latents(1)(2, 4) == 1.0);
  CHECK(cache.rope_keys(1)(0, 1) == -1.0);
  CHECK_THROWS_AS(cache.append(0, Mat<double>(2, 5), Mat<double>(2, 2)), std::length_error);
  CHECK_THROWS_AS(cache.append(0, Mat<double>(1, 4), Mat<double>(1, 2)), std::invalid_argument);
  cache.truncate(1);
  CHECK(cache.elements_held() == 2 * 7);
}

TEST_CASE("MLA mini-GPT: naive = absorbed, incremental = full, with and without a query latent") {
  for (int q_lora : {24, 0}) {
    MlaConfig c;
    c.q_lora_rank = q_lora;
    const MlaGPT<double> model(c, 3);
    const std::vector<int> ids{5, 17, 2, 90, 33, 7, 61, 0, 12, 44};
    auto full_naive = model.make_cache(10), full_abs = model.make_cache(10), inc = model.make_cache(10);
    const Mat<double> a = model.forward(ids, 0, full_naive, MlaPath::naive);
    const Mat<double> b = model.forward(ids, 0, full_abs, MlaPath::absorbed);
    Mat<double> d(10, c.vocab_size);
    d.topRows(4) = model.forward(std::span(ids).first(4), 0, inc, MlaPath::absorbed);
    for (int t = 4; t < 10; ++t) d.row(t) = model.forward(std::span(ids).subspan(t, 1), t, inc, MlaPath::naive);
    // Same mathematics, different association: rounding only (~1e-16 relative; logits are O(0.1)).
    CHECK((a - b).cwiseAbs().maxCoeff() < 1e-13);
    CHECK((a - d).cwiseAbs().maxCoeff() < 1e-13);
    CHECK(inc.elements_written() == 10u * c.n_layer * (c.kv_lora_rank + c.rope_head_dim));
  }
  MlaConfig bad;
  bad.rope_head_dim = 3;
  CHECK_THROWS_WITH_AS(MlaGPT<double>(bad, 1), doctest::Contains("rope_head_dim"), InputError);
}

TEST_CASE("mla-cache passes and fails when the MLA cache is counted as separate K and V") {
  checks::RunContext ctx;
  checks::MlaCacheOptions o;
  const Result r = checks::run_mla_cache(o, ctx);
  CHECK(r.passed());
  // E20: 64× with d_r (56.9). "约 1/3.5" (3.556) and "约 1/28" (28.44) are truncations the
  // precision rule allows for a figure marked approximate: no erratum.
  REQUIRE(r.errata().size() == 1);
  CHECK(r.errata()[0].find("MHA / what MLA caches") != std::string::npos);
  for (const auto& e : r.expectations)
    if (e.quantity.rfind("GQA / MLA elements per token per layer", 0) == 0 ||
        e.quantity.rfind("MHA / MLA elements per token per layer", 0) == 0) {
      CAPTURE(e.quantity);
      CHECK(e.stated.has_value());
      CHECK_FALSE(e.is_erratum());
    }
  checks::MlaCacheParts doubled;  // a cost model that caches the latent twice, like K and V
  doubled.elements_per_layer = [](const ModelSpec& m, std::uint64_t kv_heads) {
    KvQuery q;
    q.ctx = 1;
    if (kv_heads) q.kv_heads = kv_heads;
    const std::uint64_t n = count_elements(kv_cache_tensors(m, q)) / m.n_layer;
    return m.is_mla() ? n + *m.kv_lora_rank : n;
  };
  CHECK_FALSE(checks::run_mla_cache(o, ctx, doubled).passed());
  o.mla_model = "llama-3-70b";
  CHECK_THROWS_WITH_AS(checks::run_mla_cache(o, ctx), doctest::Contains("--mla-model"), InputError);
  o = {};
  o.gqa_model = "no-such-model";
  CHECK_THROWS_WITH_AS(checks::run_mla_cache(o, ctx), doctest::Contains("--gqa-model"), InputError);
}
