// model/fast_gpt.hpp's windowed forward (FastGpt::extend_window), the long-context self-draft of
// speculative decoding (000 §8.5): with a window that covers the prefix it is the full decode bit
// for bit; with a narrower one it equals a hand-built float64 forward whose attention is masked to
// the attention sinks and the recent positions, over a cache whose earlier positions the model
// computed with full attention; bad arguments are InputErrors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "model/fast_gpt.hpp"
#include "model/gpt.hpp"

namespace model_fast_window_test {

using namespace kvlab;

namespace {

ModelConfig small_config(Positional pos = Positional::learned) {
  ModelConfig c;
  c.n_layer = 2, c.d_model = 32, c.n_head = 4, c.n_kv_head = 2, c.head_dim = 8, c.vocab_size = 40, c.block_size = 64;
  c.positional = pos;
  return c;
}

Mat<double> layer_norm(const Mat<double>& x, const Vec<float>& g, const Vec<float>& b) {
  Mat<double> y(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double mean = x.row(r).mean();
    const double var = (x.row(r).array() - mean).square().mean();
    for (Eigen::Index c = 0; c < x.cols(); ++c)
      y(r, c) = (x(r, c) - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
  }
  return y;
}

// Logits [n, vocab] of tokens at positions 0 .. n − 1 through the mini-GPT with learned positions,
// in float64, where position p attends to every j <= p when p < full_below, and otherwise only to
// j < sink or p − recent < j <= p: the windowed draft's K/V at p >= full_below over the full
// model's below it.
Mat<double> masked_forward(const MiniGPT<float>& m, const std::vector<int>& tokens, int full_below, int sink, int recent) {
  const ModelConfig& c = m.config();
  const auto& w = m.weights();
  const int n = static_cast<int>(tokens.size()), hd = c.head_dim, group = c.n_head / c.n_kv_head;
  Mat<double> x(n, c.d_model);
  for (int p = 0; p < n; ++p) x.row(p) = (w.wte.row(tokens[p]) + w.wpe.row(p)).cast<double>();
  auto visible = [&](int p, int j) { return j <= p && (p < full_below || j < sink || j > p - recent); };
  for (const auto& b : w.blocks) {
    const Mat<double> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
    const Mat<double> q = (h * b.w_q.cast<double>()).rowwise() + b.b_q.cast<double>().transpose();
    const Mat<double> k = (h * b.w_k.cast<double>()).rowwise() + b.b_k.cast<double>().transpose();
    const Mat<double> v = (h * b.w_v.cast<double>()).rowwise() + b.b_v.cast<double>().transpose();
    Mat<double> att = Mat<double>::Zero(n, c.n_head * hd);
    for (int p = 0; p < n; ++p)
      for (int head = 0; head < c.n_head; ++head) {
        const int g = head / group;
        std::vector<double> s(static_cast<std::size_t>(n), 0.0);
        double mx = -1e300, den = 0.0;
        for (int j = 0; j < n; ++j)
          if (visible(p, j)) {
            s[j] = q.row(p).segment(head * hd, hd).dot(k.row(j).segment(g * hd, hd)) / std::sqrt(double(hd));
            mx = std::max(mx, s[j]);
          }
        for (int j = 0; j < n; ++j)
          if (visible(p, j)) den += (s[j] = std::exp(s[j] - mx));
        for (int j = 0; j < n; ++j)
          if (visible(p, j)) att.row(p).segment(head * hd, hd) += s[j] / den * v.row(j).segment(g * hd, hd);
      }
    x += (att * b.w_o.cast<double>()).rowwise() + b.b_o.cast<double>().transpose();
    Mat<double> f = (layer_norm(x, b.ln2_gain, b.ln2_bias) * b.w_fc.cast<double>()).rowwise() +
                    b.b_fc.cast<double>().transpose();
    f = f.unaryExpr([](double a) { return 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))); });
    x += (f * b.w_proj.cast<double>()).rowwise() + b.b_proj.cast<double>().transpose();
  }
  return layer_norm(x, w.lnf_gain, w.lnf_bias) * w.w_lm.cast<double>();
}

std::vector<int> tokens_of(int n, int vocab) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back((7 * i + 3) % vocab);
  return t;
}

}  // namespace

TEST_CASE("extend_window: a window covering the prefix is the full decode, bit for bit (RoPE and learned positions)") {
  {  // RoPE, 300 cached positions: three decode chunks of 128, so the chunked join is exercised
    const ModelConfig c = small_config(Positional::rope);
    const MiniGPT<float> ref(c, 5);
    FastGpt full(ref, 1, 320, 16), win(ref, 1, 320, 16);
    const std::vector<int> prompt = tokens_of(16, c.vocab_size);
    std::vector<float> lg(c.vocab_size), a(c.vocab_size), b(c.vocab_size);
    full.prefill(prompt, lg);
    win.prefill(prompt, lg);
    int tok = 1;
    for (int p = 16; p < 300; ++p) {  // grow both caches by decode
      full.decode(std::span<const int>(&tok, 1), a);
      win.decode(std::span<const int>(&tok, 1), b);
      tok = (tok * 5 + 1) % c.vocab_size;
    }
    REQUIRE(full.length() == 300);
    full.decode(std::span<const int>(&tok, 1), a);
    win.extend_window(std::span<const int>(&tok, 1), 300, AttentionWindow{4, 297}, b);  // 4 + 297 >= 301
    CHECK(a == b);
    CHECK(win.length() == 300);  // the draft's forward does not move the model's length
    win.extend_window(std::span<const int>(&tok, 1), 300, AttentionWindow{0, 301}, b);
    CHECK(a == b);
    win.extend_window(std::span<const int>(&tok, 1), 300, AttentionWindow{4, 200}, b);
    CHECK(a != b);  // a narrower window reads less and gives other logits
  }
  // Learned positions within block_size 64.
  const ModelConfig c = small_config();
  const MiniGPT<float> ref(c, 5);
  FastGpt full(ref, 1, 64, 16), win(ref, 1, 64, 16);
  const std::vector<int> prompt = tokens_of(16, c.vocab_size);
  std::vector<float> lg(c.vocab_size), a(c.vocab_size), b(c.vocab_size);
  full.prefill(prompt, lg);
  win.prefill(prompt, lg);
  const int tok = 9;
  full.decode(std::span<const int>(&tok, 1), a);
  win.extend_window(std::span<const int>(&tok, 1), 16, AttentionWindow{8, 9}, b);
  CHECK(a == b);
}

TEST_CASE("extend_window: attention sinks + recent positions equal a hand-built float64 masked forward") {
  const ModelConfig c = small_config();
  const MiniGPT<float> ref(c, 13);
  const std::vector<int> tokens = tokens_of(40, c.vocab_size);
  const int cached = 28, sink = 3, recent = 6;  // positions 28 .. 39 through the window, 12 at once
  FastGpt fast(ref, 1, 64, 32);
  std::vector<float> pre(static_cast<std::size_t>(cached) * c.vocab_size);
  fast.extend(std::span<const int>(tokens.data(), cached), pre);  // the target's own K/V, full attention
  const int T = static_cast<int>(tokens.size()) - cached;
  std::vector<float> got(static_cast<std::size_t>(T) * c.vocab_size);
  fast.extend_window(std::span<const int>(tokens.data() + cached, T), cached, AttentionWindow{sink, recent}, got);
  const Mat<double> want = masked_forward(ref, tokens, cached, sink, recent);
  const Mat<double> unmasked = masked_forward(ref, tokens, 64, sink, recent);
  double worst = 0.0, scale = 0.0, window_effect = 0.0;
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < c.vocab_size; ++v) {
      worst = std::max(worst, std::abs(got[static_cast<std::size_t>(t) * c.vocab_size + v] - want(cached + t, v)));
      scale = std::max(scale, std::abs(want(cached + t, v)));
      window_effect = std::max(window_effect, std::abs(unmasked(cached + t, v) - want(cached + t, v)));
    }
  CAPTURE(worst);
  CAPTURE(window_effect);
  CHECK(worst <= 1e-4 * std::max(1.0, scale));
  CHECK(window_effect > 100 * worst);  // the mask changes the logits far beyond the tolerance: the test can fail
  CHECK(fast.length() == cached);

  // The same positions drafted one token at a time (as the speculative loop does): its own K/V
  // written at each position and read by the next, the same logits.
  std::vector<float> one(c.vocab_size);
  double worst_one = 0.0;
  for (int t = 0; t < T; ++t) {
    fast.extend_window(std::span<const int>(&tokens[cached + t], 1), cached + t, AttentionWindow{sink, recent}, one);
    for (int v = 0; v < c.vocab_size; ++v)
      worst_one = std::max(worst_one, std::abs(one[v] - want(cached + t, v)));
  }
  CHECK(worst_one <= 1e-4 * std::max(1.0, scale));
}

TEST_CASE("extend_window: bad arguments are InputErrors") {
  const ModelConfig c = small_config();
  const MiniGPT<float> ref(c, 13);
  FastGpt fast(ref, 1, 64, 16);
  std::vector<float> lg(17 * c.vocab_size);
  const std::vector<int> one{1}, many(17, 1), bad{c.vocab_size};
  CHECK_THROWS_AS(fast.extend_window(one, -1, {}, lg), InputError);
  CHECK_THROWS_AS(fast.extend_window(one, 64, {}, lg), InputError);
  CHECK_THROWS_AS(fast.extend_window(many, 0, {}, lg), InputError);
  CHECK_THROWS_AS(fast.extend_window(bad, 0, {}, lg), InputError);
  CHECK_THROWS_AS(fast.extend_window(one, 0, AttentionWindow{-1, 4}, lg), InputError);
  CHECK_THROWS_AS(fast.extend_window(one, 0, AttentionWindow{4, 0}, lg), InputError);
  CHECK_THROWS_AS(WindowDraftSequence(fast, {}, 1), InputError);  // the model holds no prefix of 1
  CHECK_THROWS_AS(FastSequence(fast, 1), InputError);
}

TEST_CASE("extend over a long cached prefix (the verify step at long context) equals the prefill and the decode steps") {
  // From 1024 cached positions a few rows take decode's chunked attention (each K/V chunk read
  // once for all rows) instead of per-head GEMMs: the same logits as a prefill of the whole
  // sequence (the GEMM path) and as one decode step per token (decode's chunks).
  const ModelConfig c = small_config(Positional::rope);
  const MiniGPT<float> ref(c, 17);
  const int cached = 1100, rows = 5;
  const std::vector<int> tokens = tokens_of(cached + rows, c.vocab_size);
  FastGpt whole(ref, 1, 1200, cached + rows), verify(ref, 1, 1200, cached + rows), steps(ref, 1, 1200, cached + rows);
  std::vector<float> last(c.vocab_size), all(static_cast<std::size_t>(cached + rows) * c.vocab_size);
  whole.prefill(tokens, last, all);
  verify.prefill(std::span<const int>(tokens.data(), cached), last);
  steps.prefill(std::span<const int>(tokens.data(), cached), last);
  std::vector<float> got(static_cast<std::size_t>(rows) * c.vocab_size), one(c.vocab_size);
  verify.extend(std::span<const int>(tokens.data() + cached, rows), got);
  double worst_prefill = 0.0, worst_steps = 0.0, scale = 0.0;
  for (int t = 0; t < rows; ++t) {
    steps.decode(std::span<const int>(&tokens[cached + t], 1), one);
    for (int v = 0; v < c.vocab_size; ++v) {
      const float g = got[static_cast<std::size_t>(t) * c.vocab_size + v];
      worst_prefill = std::max(worst_prefill, static_cast<double>(std::abs(g - all[static_cast<std::size_t>(cached + t) * c.vocab_size + v])));
      worst_steps = std::max(worst_steps, static_cast<double>(std::abs(g - one[v])));
      scale = std::max(scale, static_cast<double>(std::abs(g)));
    }
  }
  CAPTURE(worst_prefill);
  CAPTURE(worst_steps);
  CHECK(worst_prefill <= 1e-4 * std::max(1.0, scale));
  CHECK(worst_steps <= 1e-5 * std::max(1.0, scale));
  CHECK(verify.length() == cached + rows);
}

}  // namespace model_fast_window_test
