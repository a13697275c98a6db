// Unit tests of MLA (naive and absorbed paths, its latent cache); the MLA checks have theirs in
// tests/checks/.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/gqa.hpp"
#include "cache/latent_cache.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "model/mla.hpp"

namespace model_mla_test {

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

}  // namespace model_mla_test
