// Unit tests of the speculative-decoding variants: typical acceptance
// (lib/spec/typical), Jacobi decoding (lib/spec/jacobi), tree attention (lib/attention/masked,
// lib/model/masked_forward, lib/spec/token_tree) and multi-candidate tree sampling
// (lib/spec/tree_sampling), and the check jacobi, each shown
// to pass with correct parts and to fail with a deliberately broken one.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "attention/gqa.hpp"
#include "attention/masked.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "jacobi.hpp"
#include "model/gpt.hpp"
#include "model/masked_forward.hpp"
#include "spec/distribution.hpp"
#include "spec/jacobi.hpp"
#include "spec/loop.hpp"
#include "spec/step_law.hpp"
#include "spec/token_tree.hpp"
#include "spec/tree_sampling.hpp"
#include "spec/typical.hpp"

namespace spec_variants_test {

namespace {

using kvlab::InputError;
using kvlab::Mat;
using kvlab::MiniGPT;
using kvlab::ModelConfig;
using kvlab::Rng;
namespace spec = kvlab::spec;

ModelConfig small_config(kvlab::Positional pos = kvlab::Positional::learned) {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.head_dim = 4;
  c.vocab_size = 8;
  c.block_size = 24;
  c.positional = pos;
  return c;
}

}  // namespace

// ---------------------------------------------------------------- typical acceptance

TEST_CASE("typical: entropy, threshold and Medusa's rule on a hand example") {
  const std::vector<double> uniform(4, 0.25);
  CHECK(spec::entropy_nats(uniform) == doctest::Approx(std::log(4.0)).epsilon(1e-15));
  CHECK(spec::entropy_nats(spec::one_hot(4, 2)) == 0.0);
  // Uniform over 4: δ e^(−H) = 0.3 / 4 = 0.075 < ε = 0.09.
  CHECK(spec::typical_threshold(uniform, {}) == doctest::Approx(0.075).epsilon(1e-14));
  // One-hot: e^0 = 1, so the threshold is ε.
  CHECK(spec::typical_threshold(spec::one_hot(4, 0), {}) == 0.09);
  const std::vector<double> p{0.7, 0.25, 0.04, 0.01};
  const auto rule = spec::typical_accept_rule({});
  const double tau = spec::typical_threshold(p, {});
  CHECK(tau == doctest::Approx(std::min(0.09, 0.3 * std::exp(-spec::entropy_nats(p)))));
  CHECK(rule(p, p, 0) == 1.0);
  CHECK(rule(p, p, 1) == 1.0);
  CHECK(rule(p, p, 3) == 0.0);
  CHECK(spec::greedy_replacement(p, p) == spec::one_hot(4, 0));
  // Law q·1[typical] + P(reject)·1[argmax]: with q = p the rejected mass 0.04 + 0.01 (both below
  // τ ≈ 0.084) moves to token 0.
  const auto law = spec::step_output_law(p, p, p, rule, spec::greedy_replacement);
  CHECK(law[0] == doctest::Approx(0.75));
  CHECK(law[2] == 0.0);
  CHECK(law[3] == 0.0);
  kvlab::test::input_error([] { spec::typical_accept_rule({0.0, 0.3}); });
  kvlab::test::input_error([] { spec::typical_accept_rule({0.09, std::nan("")}); });
}

TEST_CASE("typical: verify_one with the exact rule and residual is rejection sampling's law") {
  const std::vector<double> p{0.5, 0.3, 0.2}, q{0.2, 0.2, 0.6};
  Rng rng(3);
  std::vector<int> counts(3, 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i)
    ++counts[spec::verify_one(p, q, rng, spec::exact_accept_probability, spec::residual_distribution).token];
  for (int x = 0; x < 3; ++x) CHECK(std::abs(counts[x] / double(n) - p[x]) < 0.01);
}

// ---------------------------------------------------------------- Jacobi

TEST_CASE("jacobi: reaches greedy decoding within n iterations; a greedy start is a fixed point") {
  MiniGPT<double> m(small_config(), 11);
  m.weights().wte *= 10.0;
  const std::vector<int> prompt{1, 2, 3};
  spec::SamplerConfig greedy;
  greedy.temperature = 0.0;
  Rng rng(1);
  const int n = 10;
  const auto ref = spec::autoregressive_decode(m, prompt, n, greedy, rng);
  const auto run = spec::jacobi_decode(m, prompt, std::vector<int>(n, 7), n + 1);
  CHECK(run.converged);
  CHECK(run.iterates.back() == ref);
  for (int t = 0; t <= n && t < static_cast<int>(run.iterates.size()); ++t)
    CHECK(std::equal(run.iterates[t].begin(), run.iterates[t].begin() + t, ref.begin()));
  const auto at_fixed_point = spec::jacobi_decode(m, prompt, ref, 5);
  CHECK(at_fixed_point.forwards == 1);
  CHECK(at_fixed_point.converged);
  kvlab::test::input_error([&] { spec::jacobi_decode(m, prompt, std::vector<int>{}, 3); });
  kvlab::test::input_error([&] { spec::jacobi_decode(m, prompt, std::vector<int>(30, 0), 3); });
  kvlab::test::input_error([&] { spec::jacobi_decode(m, prompt, std::vector<int>{9}, 3); });
}

// ---------------------------------------------------------------- tree attention

TEST_CASE("tree: Medusa's static tree has k^N paths and Σ k^d nodes; mask and positions") {
  std::vector<std::vector<int>> heads(4, std::vector<int>{0, 1, 2, 3, 4});
  const auto t = spec::cartesian_tree(heads);
  CHECK(t.size() == 5 + 25 + 125 + 625);
  CHECK(spec::tree_leaves(t).size() == 625);
  const auto small = spec::cartesian_tree({{5, 6}, {1, 2}});  // nodes 0:5 1:6 2:5→1 3:5→2 4:6→1 5:6→2
  CHECK(small.parent == std::vector<int>{-1, -1, 0, 0, 1, 1});
  CHECK(spec::tree_path(small, 4) == std::vector<int>{1, 4});
  CHECK(spec::tree_positions(small, 3) == std::vector<int>{3, 3, 4, 4, 4, 4});
  const auto m = spec::tree_attention_mask(small, 3);
  CHECK(m.rows == 6);
  CHECK(m.cols == 9);
  for (int j = 0; j < 3; ++j) CHECK(m(5, j));
  CHECK(m(5, 3 + 1));   // its parent
  CHECK(m(5, 3 + 5));   // itself
  CHECK_FALSE(m(5, 3 + 4));  // its sibling
  CHECK_FALSE(m(5, 3 + 0));  // the other branch
  CHECK_FALSE(m(0, 3 + 1));  // a sibling at depth 1
  // Pruning by path probability keeps an ancestor-closed subtree.
  const std::vector<double> score{0.6, 0.4, 0.6 * 0.9, 0.6 * 0.1, 0.4 * 0.9, 0.4 * 0.1};
  const auto pruned = spec::prune_tree(small, score, 3);
  CHECK(pruned.token == std::vector<int>{5, 6, 1});
  CHECK(pruned.parent == std::vector<int>{-1, -1, 0});
  kvlab::test::input_error([&] { spec::prune_tree(small, score, 7); });
  kvlab::test::input_error([] { spec::cartesian_tree({{1}, {}}); });
}

TEST_CASE("masked attention: the causal mask gives grouped_query_attention's output bit for bit") {
  Rng rng(5);
  const int t = 6, nh = 4, nkv = 2, hd = 4;
  Mat<double> q(t, nh * hd), k(t, nkv * hd), v(t, nkv * hd);
  for (auto* m : {&q, &k, &v})
    for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = rng.normal();
  const kvlab::ConstMatView<double> kv(k.data(), t, nkv * hd), vv(v.data(), t, nkv * hd);
  kvlab::AttentionMask causal(t, t);
  for (int i = 0; i < t; ++i)
    for (int j = 0; j <= i; ++j) causal.set(i, j, true);
  const Mat<double> a = kvlab::grouped_query_attention(q, kv, vv, nh, nkv, hd, 0, true);
  const Mat<double> b = kvlab::masked_attention(q, kv, vv, nh, nkv, hd, causal);
  CHECK((a - b).cwiseAbs().maxCoeff() == 0.0);
  kvlab::AttentionMask empty_row = causal;
  empty_row.set(0, 0, false);
  CHECK_THROWS_AS(kvlab::masked_attention(q, kv, vv, nh, nkv, hd, empty_row), std::invalid_argument);
}

TEST_CASE("forward_masked: each tree node's logits = a causal forward over prompt + its path") {
  for (auto pos : {kvlab::Positional::learned, kvlab::Positional::rope}) {
    const MiniGPT<double> m(small_config(pos), 21);
    const std::vector<int> prompt{3, 1, 4};
    const auto tree = spec::cartesian_tree({{5, 6, 2}, {1, 2}, {0, 7}});
    auto cache = m.make_cache(kvlab::CacheKind::prealloc, 3 + tree.size());
    m.forward(prompt, 0, *cache);
    const Mat<double> lg = kvlab::forward_masked(m, tree.token, spec::tree_positions(tree, 3),
                                                 spec::tree_attention_mask(tree, 3), *cache);
    CHECK(cache->length(0) == 3 + tree.size());
    for (int node = 0; node < tree.size(); ++node) {
      std::vector<int> seq = prompt;
      for (int n : spec::tree_path(tree, node)) seq.push_back(tree.token[static_cast<std::size_t>(n)]);
      auto c2 = m.make_cache(kvlab::CacheKind::prealloc, static_cast<int>(seq.size()));
      const Mat<double> ref = m.forward(seq, 0, *c2);
      CHECK((ref.bottomRows(1) - lg.row(node)).cwiseAbs().maxCoeff() == 0.0);
    }
    auto c3 = m.make_cache(kvlab::CacheKind::prealloc, 40);
    m.forward(prompt, 0, *c3);
    const std::vector<int> far{30};
    CHECK_THROWS_AS(kvlab::forward_masked(m, std::vector<int>{1}, std::vector<int>{2, 3},
                                          kvlab::AttentionMask(1, 4, true), *c3),
                    std::invalid_argument);
    if (pos == kvlab::Positional::learned)
      kvlab::test::input_error([&] {
        kvlab::forward_masked(m, std::vector<int>{1}, far, kvlab::AttentionMask(1, 4, true), *c3);
      });
  }
}

// ---------------------------------------------------------------- multi-candidate sampling

TEST_CASE("tree sampling: SpecInfer's law equals the target's; without the residual update it does not") {
  Rng rng(8);
  const int v = 4, depth = 2;
  // Random p, q tables for every path of length 0 .. depth (index: base-V with offsets).
  std::vector<std::vector<double>> pt, qt;
  for (int i = 0; i < 1 + v + v * v; ++i) {
    pt.push_back(spec::random_distribution(v, rng));
    qt.push_back(spec::random_distribution(v, rng));
  }
  auto index = [&](std::span<const int> path) {
    if (path.empty()) return std::size_t{0};
    std::size_t off = 1, num = 0;
    if (path.size() == 2) off += v;
    for (int t : path) num = num * v + static_cast<std::size_t>(t);
    return off + num;
  };
  const spec::NextDist p = [&](std::span<const int> path) { return spec::Dist(pt[index(path)]); };
  const spec::NextDist q = [&](std::span<const int> path) { return spec::Dist(qt[index(path)]); };
  const std::vector<int> branching{3, 2};
  const auto target = spec::sequence_law(p, v, depth + 1);
  const auto law = spec::tree_step_law(p, q, branching, v, depth + 1);
  double s = 0.0, d = 0.0;
  for (std::size_t i = 0; i < law.size(); ++i) s += law[i], d = std::max(d, std::abs(law[i] - target[i]));
  CHECK(s == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(d < 1e-15);
  spec::MultiCandidateRule naive;
  naive.carry_residual = false;
  const auto bad = spec::tree_step_law(p, q, branching, v, depth + 1, naive);
  double dn = 0.0;
  for (std::size_t i = 0; i < bad.size(); ++i) dn = std::max(dn, std::abs(bad[i] - target[i]));
  CHECK(dn > 1e-3);
  // The sampler follows its law: first-token frequencies over 1e5 steps.
  std::vector<int> first(v, 0);
  const int n = 100000;
  int bad_sizes = 0;
  for (int i = 0; i < n; ++i) {
    const auto tree = spec::draw_token_tree(q, branching, rng);
    const auto out = spec::verify_token_tree(tree, p, q, rng);
    bad_sizes += (tree.size() != 3 + 6 || out.empty() || out.size() > 3) ? 1 : 0;
    if (!out.empty()) ++first[out[0]];
  }
  CHECK(bad_sizes == 0);
  for (int x = 0; x < v; ++x) CHECK(std::abs(first[x] / double(n) - pt[0][static_cast<std::size_t>(x)]) < 0.01);
  kvlab::test::input_error([&] { spec::tree_step_law(p, q, std::vector<int>{0}, v, 2); });
  kvlab::test::input_error([&] { spec::sequence_law(p, v, 0); });
}

}  // namespace spec_variants_test
