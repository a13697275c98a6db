// Unit tests of the model layer: config validation, attention against a plain reference, RoPE,
// caches, the mini-GPT forward.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/gqa.hpp"
#include "cache/kv_cache.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"

namespace model_gpt_test {

using namespace kvlab;

namespace {

Mat<double> random_mat(Rng& rng, int rows, int cols) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
  return m;
}

// Reference attention the textbook way: repeat_interleave the K/V heads, then per head
// softmax(q k^T / sqrt(d) + mask) v with Eigen products (004 §3.4, writing 1).
Mat<double> reference_attention(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, int n_head,
                                int n_kv_head, int hd, int q_pos0, bool causal) {
  const int T = static_cast<int>(q.rows()), S = static_cast<int>(k.rows()), group = n_head / n_kv_head;
  Mat<double> out(T, n_head * hd);
  for (int h = 0; h < n_head; ++h) {
    const int g = h / group;
    const Mat<double> qh = q.middleCols(h * hd, hd), kh = k.middleCols(g * hd, hd), vh = v.middleCols(g * hd, hd);
    Mat<double> s = qh * kh.transpose() / std::sqrt(double(hd));
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < S; ++j)
        if (causal && j > q_pos0 + i) s(i, j) = -INFINITY;
    for (int i = 0; i < T; ++i) {
      const double m = s.row(i).maxCoeff();
      s.row(i) = (s.row(i).array() - m).exp().matrix();
      s.row(i) /= s.row(i).sum();
    }
    out.middleCols(h * hd, hd) = s * vh;
  }
  return out;
}

}  // namespace

TEST_CASE("ModelConfig rejects invalid shapes, naming the field") {
  ModelConfig c;
  c.n_kv_head = 3;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("n_kv_head"), InputError);
  c = ModelConfig{};
  c.d_model = 0;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("d_model"), InputError);
  c = ModelConfig{};
  c.n_layer = -1;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("n_layer"), InputError);
  c = ModelConfig{};
  c.positional = Positional::rope;
  c.head_dim = 7;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("head_dim"), InputError);
  c = ModelConfig{};
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("grouped-query attention matches the repeat_interleave reference (MHA, GQA, MQA, chunk)") {
  Rng rng(7);
  const int n_head = 8, hd = 4;
  for (int n_kv : {8, 4, 2, 1}) {
    for (auto [T, S, causal] : {std::tuple{5, 5, true}, std::tuple{1, 9, true}, std::tuple{3, 9, true},
                                std::tuple{4, 4, false}}) {
      const Mat<double> q = random_mat(rng, T, n_head * hd), k = random_mat(rng, S, n_kv * hd),
                        v = random_mat(rng, S, n_kv * hd);
      const int q_pos0 = S - T;  // lower-right alignment: the new queries are the last T positions
      const Mat<double> got = grouped_query_attention<double>(
          q, ConstMatView<double>(k.data(), S, k.cols()), ConstMatView<double>(v.data(), S, v.cols()), n_head,
          n_kv, hd, q_pos0, causal);
      const Mat<double> want = reference_attention(q, k, v, n_head, n_kv, hd, q_pos0, causal);
      // Two summation orders of <= 9 terms of O(1) values: a few ulps; 1e-13 is ~500 u.
      CHECK((got - want).cwiseAbs().maxCoeff() < 1e-13);
    }
  }
}

TEST_CASE("the upper-left causal mask (SDPA is_causal with T=1) is not what decode needs") {
  // 004 §3.3 row 2: with one query and S keys, the correct mask lets it see all S keys.
  Rng rng(3);
  const Mat<double> q = random_mat(rng, 1, 8), k = random_mat(rng, 6, 8), v = random_mat(rng, 6, 8);
  const ConstMatView<double> kv(k.data(), 6, 8), vv(v.data(), 6, 8);
  const auto lower_right = grouped_query_attention<double>(q, kv, vv, 2, 2, 4, 5, true);
  const auto upper_left = grouped_query_attention<double>(q, kv, vv, 2, 2, 4, 0, true);  // sees key 0 only
  CHECK((lower_right - upper_left).cwiseAbs().maxCoeff() > 1e-3);
  CHECK((upper_left.leftCols(4) - v.row(0).leftCols(4)).cwiseAbs().maxCoeff() < 1e-15);
}

TEST_CASE("RoPE preserves norms and makes q·k depend on the relative position only") {
  Rng rng(11);
  const Mat<double> q0 = random_mat(rng, 1, 8), k0 = random_mat(rng, 1, 8);
  auto rotated = [&](const Mat<double>& x, int pos) {
    Mat<double> y = x;
    apply_rope(y, 1, 8, pos, 10000.0);
    return y;
  };
  CHECK(std::abs(rotated(q0, 37).norm() - q0.norm()) < 1e-12);
  const double a = rotated(q0, 10).row(0).dot(rotated(k0, 3).row(0));
  const double b = rotated(q0, 107).row(0).dot(rotated(k0, 100).row(0));
  CHECK(std::abs(a - b) < 1e-12);
  Mat<double> odd(1, 6);
  CHECK_THROWS_AS(apply_rope(odd, 2, 3, 0, 1e4), std::invalid_argument);
}

TEST_CASE("caches count what they move: concat n(n+1)/2, prealloc n; views and truncate") {
  ConcatCache<double> cat(2, 3);
  PreallocCache<double> pre(2, 3, 10);
  for (int t = 0; t < 10; ++t) {
    const Mat<double> k = Mat<double>::Constant(1, 3, t), v = Mat<double>::Constant(1, 3, -t);
    for (int l = 0; l < 2; ++l) {
      cat.append(l, k, v);
      pre.append(l, k, v);
    }
  }
  CHECK(cat.stats().positions_moved() == 2 * 55);
  CHECK(pre.stats().positions_moved() == 2 * 10);
  CHECK(cat.stats().allocations == 20);
  CHECK(pre.stats().allocations == 2);
  CHECK(cat.keys(1)(7, 2) == 7.0);
  CHECK(pre.values(0)(9, 0) == -9.0);
  pre.truncate(4);
  cat.truncate(4);
  CHECK(pre.length(0) == 4);
  CHECK(cat.keys(0).rows() == 4);
  CHECK_THROWS_AS(pre.truncate(5), std::invalid_argument);
  CHECK_THROWS_AS(pre.append(0, Mat<double>(7, 3), Mat<double>(7, 3)), std::length_error);
  CHECK_THROWS_AS(cat.append(0, Mat<double>(1, 4), Mat<double>(1, 4)), std::invalid_argument);
}

TEST_CASE("mini-GPT forward: shapes, determinism by seed, position checks") {
  ModelConfig c;
  const MiniGPT<double> a(c, 5), b(c, 5), other(c, 6);
  const std::vector<int> ids{1, 2, 3, 4};
  auto ca = a.make_cache(CacheKind::prealloc, 8), cb = b.make_cache(CacheKind::prealloc, 8),
       co = other.make_cache(CacheKind::prealloc, 8);
  const auto la = a.forward(ids, 0, *ca), lb = b.forward(ids, 0, *cb), lo = other.forward(ids, 0, *co);
  CHECK(la.rows() == 4);
  CHECK(la.cols() == c.vocab_size);
  CHECK((la - lb).cwiseAbs().maxCoeff() == 0.0);
  CHECK((la - lo).cwiseAbs().maxCoeff() > 0.0);
  CHECK_THROWS_AS(a.forward(ids, 0, *ca), std::invalid_argument);  // cache already holds 4
  const std::vector<int> bad{c.vocab_size};
  auto fresh = a.make_cache(CacheKind::prealloc, 8);
  CHECK_THROWS_AS(a.forward(bad, 0, *fresh), InputError);
  std::vector<int> too_long(static_cast<std::size_t>(c.block_size) + 1, 0);
  auto big = a.make_cache(CacheKind::prealloc, c.block_size + 1);
  CHECK_THROWS_AS(a.forward(too_long, 0, *big), InputError);
}

}  // namespace model_gpt_test
