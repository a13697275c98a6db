// Unit tests of the trainer (lib/train): the corpus split, the trainer's forward
// against MiniGPT's, the manual backward against central finite differences in float64 for every
// parameter tensor (and a broken backward per part that the check catches), the schedule and the
// determinism of a run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "test_util.hpp"
#include "train/backprop.hpp"
#include "train/checkpoint.hpp"
#include "train/corpus.hpp"
#include "train/trainer.hpp"

namespace train_train_test {

using namespace kvlab;
using namespace kvlab::train;

namespace {

ModelConfig tiny_config(int n_kv_head) {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 8;
  c.n_head = 4;
  c.n_kv_head = n_kv_head;
  c.head_dim = 3;
  c.vocab_size = 11;
  c.block_size = 6;
  return c;
}

/// A tiny model with every parameter perturbed (LayerNorm gains/biases too, and std 0.3 so the
/// attention is far from uniform and GELU's curvature is exercised).
MiniGPT<double> tiny_model(int n_kv_head, std::uint64_t seed) {
  MiniGPT<double> m(tiny_config(n_kv_head), seed);
  Rng rng(seed + 100);
  for (auto& p : param_refs(m.weights()))
    for (Eigen::Index i = 0; i < p.size; ++i) p.data[i] += 0.3 * rng.normal();
  return m;
}

struct GradCheck {
  double worst_ratio = 0;   // max over entries of |analytic - numeric| / tolerance
  std::string worst_name;
};

// Central differences (L(θ+h) - L(θ-h)) / 2h, h = 1e-5, of the summed loss over 5 tokens.
// Error budget per entry: truncation h² |L'''| / 6 ≈ 1e-10 · O(1..10) and rounding
// ε·|L| / h ≈ 2.2e-16 · 12 / 1e-5 ≈ 3e-10; tolerance 1e-7 + 1e-6 |numeric| leaves a margin of
// more than 100× while a wrong term (a dropped factor, O(0.01..1)) is far above it.
GradCheck grad_check(MiniGPT<double>& m) {
  const std::vector<int> tokens{3, 1, 4, 1, 5}, targets{1, 4, 1, 5, 9};
  GptWeights<double> grad = zeros_like(m.weights());
  forward_backward<double>(m.config(), m.weights(), tokens, targets, 1.0, grad);
  auto prefs = param_refs(m.weights());
  auto grefs = param_refs(grad);
  GradCheck out;
  const double h = 1e-5;
  for (std::size_t i = 0; i < prefs.size(); ++i) {
    for (Eigen::Index j = 0; j < prefs[i].size; ++j) {
      double& p = prefs[i].data[j];
      const double p0 = p;
      p = p0 + h;
      const double lp = sequence_loss<double>(m.config(), m.weights(), tokens, targets);
      p = p0 - h;
      const double lm = sequence_loss<double>(m.config(), m.weights(), tokens, targets);
      p = p0;
      const double numeric = (lp - lm) / (2 * h);
      const double ratio = std::abs(grefs[i].data[j] - numeric) / (1e-7 + 1e-6 * std::abs(numeric));
      if (ratio > out.worst_ratio) {
        out.worst_ratio = ratio;
        out.worst_name = prefs[i].name;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("train: split_fortunes splits at lines exactly % and drops blank fortunes") {
  const auto f = split_fortunes("a\nb\n%\n\n%\n%x\nc\n%\nlast");
  REQUIRE(f.size() == 3);
  CHECK(f[0] == "a\nb\n");
  CHECK(f[1] == "%x\nc\n");
  CHECK(f[2] == "last");
  CHECK(!load_fortunes("/nonexistent/kvlab/fortunes").has_value());
  CHECK(fortunes_skip_line("/x").find("/x") != std::string::npos);
}

TEST_CASE("train: the trainer's forward equals MiniGPT's forward") {
  for (int kv : {4, 2, 1}) {
    MiniGPT<double> m = tiny_model(kv, 7);
    const std::vector<int> tokens{3, 1, 4, 1, 5, 9};
    auto cache = m.make_cache(CacheKind::prealloc, 6);
    const Mat<double> ref = m.forward(tokens, 0, *cache);
    const Mat<double> got = train_forward<double>(m.config(), m.weights(), tokens);
    // Same operations in another summation order: float64 rounding, |logit| = O(1), sums of
    // <= 32 terms: 1e-12 is ~10^3 ulps of margin.
    CHECK((ref - got).cwiseAbs().maxCoeff() < 1e-12);
  }
  MiniGPT<float> mf(tiny_config(2), 7);
  const std::vector<int> tokens{3, 1, 4, 1, 5, 9};
  auto cache = mf.make_cache(CacheKind::prealloc, 6);
  const Mat<float> ref = mf.forward(tokens, 0, *cache);
  // float32: eps 1.2e-7 times sums of <= 32 O(1) terms per layer.
  CHECK((ref - train_forward<float>(mf.config(), mf.weights(), tokens)).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("train: the backward matches central finite differences in float64 for every parameter") {
  for (int kv : {4, 2, 1}) {  // MHA, GQA (2 query heads per K/V head), MQA
    MiniGPT<double> m = tiny_model(kv, 11);
    const GradCheck g = grad_check(m);
    INFO("n_kv_head " << kv << ", worst " << g.worst_name << " at " << g.worst_ratio << " x tolerance");
    CHECK(g.worst_ratio < 1.0);
  }
}

TEST_CASE("train: the gradient check catches a broken backward in each part") {
  for (const char* part : {"layernorm", "attention", "gelu", "embedding", "head"}) {
    MiniGPT<double> m = tiny_model(2, 11);
    set_broken_backward_for_test(part);
    const GradCheck g = grad_check(m);
    set_broken_backward_for_test("");
    INFO(part << ": worst " << g.worst_name << " at " << g.worst_ratio << " x tolerance");
    CHECK(g.worst_ratio > 100.0);
  }
}

TEST_CASE("train: cosine schedule with warm-up") {
  TrainConfig cfg;
  cfg.steps = 100;
  cfg.warmup = 10;
  cfg.lr = 1.0;
  CHECK(lr_at(cfg, 0) == doctest::Approx(0.1));
  CHECK(lr_at(cfg, 9) == doctest::Approx(1.0));
  CHECK(lr_at(cfg, 10) == doctest::Approx(1.0));
  CHECK(lr_at(cfg, 55) == doctest::Approx(0.55));
  CHECK(lr_at(cfg, 100) == doctest::Approx(0.1));
}

TEST_CASE("train: a run lowers the loss and replays bit for bit whatever the thread count") {
  ModelConfig c = tiny_config(2);
  c.vocab_size = 16;
  c.block_size = 8;
  std::vector<int> text;
  for (int i = 0; i < 400; ++i) text.push_back((i * 7 + i / 13) % 16);  // a learnable pattern
  TrainConfig cfg;
  cfg.steps = 60;
  cfg.batch = 6;
  cfg.warmup = 5;
  cfg.lr = 1e-2;
  MiniGPT<float> a(c, 1), b(c, 1);
  cfg.threads = 1;
  const TrainResult ra = train_model(a, text, cfg);
  cfg.threads = 3;
  const TrainResult rb = train_model(b, text, cfg);
  CHECK(ra.losses == rb.losses);
  CHECK(ra.losses.back() < 0.5 * ra.losses.front());
  CHECK(evaluate(a, text, 0, 1).loss == evaluate(a, text, 0, 2).loss);
  cfg.lr = std::nan("");
  CHECK(test::input_error([&] { train_model(a, text, cfg); }).find("lr") != std::string::npos);
}

// ---- checkpoints and the fortune corpus on small stand-ins ----

using kvlab::test::byte_config;

TEST_CASE("train: a checkpoint written and read back is the same model") {
  MiniGPT<float> m(byte_config(2, 16, 4), 3);
  const std::string path = (std::filesystem::temp_directory_path() / "kvlab_test_ckpt.safetensors").string();
  train::save_checkpoint(m, path, {{"kvlab.train", "steps=20 batch=4 lr=0.001"}});
  std::map<std::string, std::string> meta;
  const MiniGPT<float> back = train::load_checkpoint(path, &meta);
  CHECK(meta.at("kvlab.train") == "steps=20 batch=4 lr=0.001");
  CHECK(meta.at("format") == "pt");
  const std::vector<int> ids{72, 101, 108, 108, 111};
  CHECK(train_forward<float>(m.config(), m.weights(), ids) == train_forward<float>(back.config(), back.weights(), ids));
  CHECK(test::input_error([&] { train::load_checkpoint(path + ".absent"); }).find("absent") != std::string::npos);
}

TEST_CASE("train: corpus from a fixture directory splits fortune 9 of every 10 to validation") {
  const auto c = load_fortunes(kvlab::test::fortune_fixture("kvlab_test_fortunes"));
  REQUIRE(c.has_value());
  CHECK(c->n_fortunes_train == 36);
  CHECK(c->n_fortunes_validation == 4);
}

}  // namespace train_train_test
