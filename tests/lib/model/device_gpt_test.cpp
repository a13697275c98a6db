// The `--device cuda` forward (model/device_gpt.hpp) run on the CPU implementation of
// the device operations (device/host_ops.hpp). The forward, the cache addressing (contiguous,
// paged through a shuffled block table, bf16 storage) and the batched decode must give the
// reference model's logits; each deliberate fault of the operations must show.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "model/device_gpt.hpp"
#include "device/host_ops.hpp"
#include "reference/kernels.hpp"
#include "core/error.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace model_device_gpt_test {

using namespace kvlab;
using namespace kvlab::gpu;

namespace {

ModelConfig small_config(int n_kv_head, Positional positional = Positional::learned) {
  ModelConfig c;
  c.n_kv_head = n_kv_head;
  c.positional = positional;
  c.block_size = 64;
  return c;
}

double max_abs_diff(const Mat<float>& a, const Mat<double>& b) {
  return (a.cast<double>() - b).cwiseAbs().maxCoeff();
}

/// The float64 reference's logits of `ids` in one forward.
Mat<double> reference(const ModelConfig& c, std::uint64_t seed, const std::vector<int>& ids) {
  const MiniGPT<double> ref(c, seed);
  auto cache = ref.make_cache(CacheKind::prealloc, static_cast<int>(ids.size()));
  return ref.forward(ids, 0, *cache);
}

/// Prefill `prefill` tokens then decode the rest one at a time on the device model.
Mat<float> incremental(DeviceGpt& g, const std::vector<int>& ids, int prefill) {
  Mat<float> out(static_cast<int>(ids.size()), g.config().vocab_size);
  out.topRows(prefill) = g.forward(0, std::span(ids).first(static_cast<std::size_t>(prefill)));
  for (std::size_t p = static_cast<std::size_t>(prefill); p < ids.size(); ++p)
    out.row(static_cast<Eigen::Index>(p)) = g.forward(0, std::span(ids).subspan(p, 1));
  return out;
}

}  // namespace

TEST_CASE("device gpt on host ops: prefill + decode equal the float64 model within the f32 rounding bound") {
  for (const int kv : {8, 2, 1})
    for (const Positional pos : {Positional::learned, Positional::rope})
      for (const bool paged : {false, true}) {
        CAPTURE(kv);
        CAPTURE(paged);
        const bool rope = pos == Positional::rope;
        CAPTURE(rope);
        const ModelConfig c = small_config(kv, pos);
        const MiniGPT<float> model(c, 7);
        const auto ids = checks::random_tokens(8, 20, c.vocab_size);
        const Mat<double> ref = reference(c, 7, ids);
        auto ops = make_host_ops();
        DeviceGpt g(model, *ops, {.batch = 1, .max_ctx = 20, .paged = paged, .block_size = 3, .seed = 5});
        const Mat<float> got = incremental(g, ids, 8);
        const double bound = checks::rounding_bound(c, Dtype::f32, std::max(1.0, ref.cwiseAbs().maxCoeff()));
        CHECK(max_abs_diff(got, ref) <= bound);
        CHECK(max_abs_diff(got, ref) > 0);  // f32 against f64: not the same numbers
        CHECK(g.length(0) == 20);
      }
}

TEST_CASE("device gpt on host ops: paged and contiguous caches give the same bits; batched ragged decode = one at a time") {
  const ModelConfig c = small_config(2);
  const MiniGPT<float> model(c, 3);
  const auto a = checks::random_tokens(1, 17, c.vocab_size), b = checks::random_tokens(2, 17, c.vocab_size);
  auto ops = make_host_ops();
  DeviceGpt alone(model, *ops, {.batch = 1, .max_ctx = 17});
  const Mat<float> ref_a = incremental(alone, a, 5);
  DeviceGpt alone_b(model, *ops, {.batch = 1, .max_ctx = 17});
  const Mat<float> ref_b = incremental(alone_b, b, 9);
  for (const int bs : {1, 4, 18}) {
    CAPTURE(bs);
    DeviceGpt two(model, *ops, {.batch = 2, .max_ctx = 17, .paged = true, .block_size = bs, .seed = 11});
    Mat<float> out_a(17, c.vocab_size), out_b(17, c.vocab_size);
    out_a.topRows(5) = two.forward(0, std::span(a).first(5));
    out_b.topRows(9) = two.forward(1, std::span(b).first(9));
    for (int p = 5; p < 9; ++p) out_a.row(p) = two.forward(0, std::span(a).subspan(static_cast<std::size_t>(p), 1));
    for (int p = 9; p < 17; ++p) {  // both at position p: one batched step
      const int toks[] = {a[static_cast<std::size_t>(p)], b[static_cast<std::size_t>(p)]};
      const Mat<float> lg = two.decode(toks);
      out_a.row(p) = lg.row(0);
      out_b.row(p) = lg.row(1);
    }
    CHECK((out_a - ref_a).cwiseAbs().maxCoeff() == 0.f);
    CHECK((out_b - ref_b).cwiseAbs().maxCoeff() == 0.f);
    CHECK((two.keys(1, 0) - alone.keys(1, 0)).cwiseAbs().maxCoeff() == 0.f);
  }
}

TEST_CASE("device gpt on host ops: bf16 cache storage stays within its rounding, K reads back as bf16") {
  const ModelConfig c = small_config(2);
  const MiniGPT<float> model(c, 3);
  const auto ids = checks::random_tokens(4, 12, c.vocab_size);
  auto ops = make_host_ops();
  DeviceGpt f32(model, *ops, {.max_ctx = 12});
  DeviceGpt bf16(model, *ops, {.max_ctx = 12, .storage = kernels::Storage::bf16});
  const Mat<float> a = incremental(f32, ids, 4), b = incremental(bf16, ids, 4);
  const double diff = (a - b).cwiseAbs().maxCoeff();
  CHECK(diff > 0);
  CHECK(diff < 0.05 * std::max(1.0f, a.cwiseAbs().maxCoeff()));  // 2^-8 relative per element, a few layers
  const Mat<float> k = bf16.keys(0, 0);
  for (Eigen::Index i = 0; i < k.size(); ++i) CHECK(round_to_bf16(k.data()[i]) == k.data()[i]);
}

TEST_CASE("device gpt on host ops: each fault of the operations shows") {
  const ModelConfig c = small_config(2);
  const MiniGPT<float> model(c, 3);
  const auto ids = checks::random_tokens(4, 12, c.vocab_size);
  auto honest = make_host_ops();
  DeviceGpt ref_g(model, *honest, {.max_ctx = 13, .paged = true, .block_size = 2, .seed = 3});
  const Mat<float> ref = incremental(ref_g, ids, 4);
  const auto differs = [&](HostFaults f) {
    auto ops = make_host_ops(f);
    DeviceGpt g(model, *ops, {.max_ctx = 13, .paged = true, .block_size = 2, .seed = 3});
    const Mat<float> got = incremental(g, ids, 4);
    return !((got - ref).cwiseAbs().maxCoeff() == 0.f);  // NaN counts as a difference
  };
  CHECK(differs({.append_wrong_slot = true}));
  CHECK(differs({.attention_no_gather = true}));
  CHECK(differs({.attention_drops_last = true}));
  CHECK(differs({.append_overwrites_past = true}));
}

TEST_CASE("device gpt: past K/V never change when a token is appended; truncate rolls back") {
  const ModelConfig c = small_config(2, Positional::rope);
  const MiniGPT<float> model(c, 3);
  const auto ids = checks::random_tokens(4, 10, c.vocab_size);
  auto ops = make_host_ops();
  DeviceGpt g(model, *ops, {.max_ctx = 10, .paged = true, .block_size = 4, .seed = 1});
  g.forward(0, std::span(ids).first(6));
  const Mat<float> k6 = g.keys(1, 0), v6 = g.values(1, 0);
  const Mat<float> next = g.forward(0, std::span(ids).subspan(6, 1));
  CHECK((g.keys(1, 0).topRows(6) - k6).cwiseAbs().maxCoeff() == 0.f);
  CHECK((g.values(1, 0).topRows(6) - v6).cwiseAbs().maxCoeff() == 0.f);
  g.truncate(0, 6);  // rollback, then the same token again: the same logits
  CHECK(g.length(0) == 6);
  CHECK((g.forward(0, std::span(ids).subspan(6, 1)) - next).cwiseAbs().maxCoeff() == 0.f);

  auto bad = make_host_ops({.append_overwrites_past = true});
  DeviceGpt h(model, *bad, {.max_ctx = 10});
  h.forward(0, std::span(ids).first(6));
  const Mat<float> before = h.keys(0, 0);
  h.forward(0, std::span(ids).subspan(6, 1));
  CHECK((h.keys(0, 0).topRows(6) - before).cwiseAbs().maxCoeff() > 0.f);
}

TEST_CASE("device gpt: bad input is an InputError naming what is wrong") {
  auto ops = make_host_ops();
  const MiniGPT<float> model(small_config(2), 3);
  DeviceGpt g(model, *ops, {.batch = 2, .max_ctx = 4});
  const int bad_token[] = {model.config().vocab_size};
  CHECK_THROWS_AS(g.forward(0, bad_token), InputError);
  const int five[] = {1, 2, 3, 4, 5};
  CHECK_THROWS_AS(g.forward(0, five), InputError);
  CHECK_THROWS_AS(g.forward(2, std::span(five).first(1)), InputError);
  const int three[] = {1, 2, 3};
  CHECK_THROWS_AS(g.decode(three), InputError);
  CHECK_THROWS_AS(g.truncate(0, 1), InputError);
  ModelConfig sw = small_config(2);
  sw.sliding_window = 4;
  CHECK_THROWS_AS(DeviceGpt(MiniGPT<float>(sw, 1), *ops, {}), InputError);
  CHECK_THROWS_AS(DeviceGpt(model, *ops, {.max_ctx = 65}), InputError);  // > block_size 64, learned positions
}

}  // namespace model_device_gpt_test
