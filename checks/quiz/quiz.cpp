#include "quiz/quiz.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "cost/kv_cache.hpp"
#include "report/writers.hpp"
#include "cost/layers.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "spec/expected_tokens.hpp"

namespace kvlab {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Dense models with K/V heads in the catalogue (MLA models are kv-size's business).
const std::vector<std::string> kCacheModels = {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
                                               "llama-3-70b", "mistral-7b", "qwen2-7b", "falcon-7b",
                                               "gemma-2-9b"};
// Those with fewer K/V heads than query heads (GQA or MQA).
const std::vector<std::string> kGroupedModels = {"llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b",
                                                 "qwen2-7b", "falcon-7b", "gemma-2-9b"};
// Dense models small enough for one GPU, with a parameter count in the catalogue.
const std::vector<std::string> kDecodeModels = {"llama-2-7b", "llama-2-13b", "llama-3-8b", "mistral-7b",
                                                "qwen2-7b"};

template <class T>
const T& pick(Rng& rng, const std::vector<T>& items) {
  const auto i = static_cast<std::size_t>(rng.uniform() * static_cast<double>(items.size()));
  return items[std::min(i, items.size() - 1)];
}

QuizQuestion kv_cache_question(Rng& rng) {
  QuizQuestion q;
  q.kind = QuizKind::kv_cache;
  q.source = "004 §1.4, §B.2 (b), §C 8";
  q.model = pick(rng, kCacheModels);
  q.batch = pick(rng, std::vector<std::uint64_t>{1, 4, 8, 16, 32, 64});
  q.ctx = pick(rng, std::vector<std::uint64_t>{2048, 4096, 8192, 32768});
  q.kv_dtype = pick(rng, std::vector<std::string>{"bf16", "bf16", "fp8"});
  const ModelSpec m = load_model(q.model);
  const KvQuery kq{q.batch, q.ctx, parse_cache_dtype(q.kv_dtype), {}};
  const KvCacheSize size = kv_cache_size(m, kq);
  const std::uint64_t bytes_per_element = cache_dtype_bits(kq.dtype) / 8;
  q.text = fmt::format(
      "KV cache of {} ({} layers, {} KV heads of head_dim {}) at batch {} × {} tokens, stored in {} "
      "({} B per element): how many GiB?",
      q.model, size.layout.n_layer, size.layout.kv_heads, size.layout.head_dim, q.batch, q.ctx, q.kv_dtype,
      bytes_per_element);
  q.answer = static_cast<double>(size.total_bytes) / kGiB;
  q.unit = "GiB";
  q.tolerance_rel = 0.01;
  q.tolerance_why = "three significant figures; in GiB (2^30 B), not GB: the two differ by 7.4%";
  q.worked = fmt::format(
      "2 (K and V) · {} layers · {} KV heads · {} · {} B = {} B per token; × {} · {} = {} tokens "
      "= {} B = {:.4g} GiB",
      size.layout.n_layer, size.layout.kv_heads, size.layout.head_dim, bytes_per_element,
      group_thousands(static_cast<std::uint64_t>(size.bytes_per_token)), q.batch, q.ctx, group_thousands(size.tokens),
      group_thousands(size.total_bytes), q.answer);
  if (size.total_bytes != size.total_bytes_if_all_full) {
    // Windows (cost/layers.hpp): a sliding layer keeps at most W positions, so the sum runs over
    // the layer groups.
    std::string layout, sum;
    for (const GroupKv& g : kv_held(m, kq).groups) {
      const std::string what = g.group.kind == LayerKind::sliding
                                   ? fmt::format("{} with a {}-token sliding window", g.group.count, g.group.span)
                                   : fmt::format("{} full", g.group.count);
      layout += (layout.empty() ? "" : ", ") + what;
      sum += fmt::format("{}{} · {} B · {} · {}", sum.empty() ? "" : " + ", g.group.count,
                         group_thousands(g.bits_per_token / g.group.count / 8), q.batch, g.positions);
    }
    q.text += fmt::format(" Its layers: {}; a sliding layer keeps at most its window of positions.",
                          layout);
    q.worked = fmt::format(
        "every layer caching every position: {} B per token · {} tokens = {} B; with the windows, "
        "layers × bytes per token and layer × batch × positions held: {} = {} B = {:.4g} GiB",
        group_thousands(static_cast<std::uint64_t>(size.bytes_per_token)), group_thousands(size.tokens),
        group_thousands(size.total_bytes_if_all_full), sum, group_thousands(size.total_bytes), q.answer);
  }
  return q;
}

QuizQuestion decode_bound_question(Rng& rng) {
  QuizQuestion q;
  q.kind = QuizKind::decode_bound;
  q.source = "004 §1.5, §B.2 (c), §C 9";
  q.model = pick(rng, kDecodeModels);
  q.gpu = pick(rng, gpu_names());
  const ModelSpec m = load_model(q.model);
  const GpuSpec g = load_gpu(q.gpu);
  const double n = static_cast<double>(m.num_parameters.value_or(0));
  if (n <= 0) throw std::logic_error("quiz: catalogue model " + q.model + " lacks num_parameters");
  const double bytes = weight_bytes(n, 2.0);
  q.text = fmt::format(
      "{} has N = {} parameters, stored in bf16 (2 B each). On the {} ({:.4g} TB/s), what is the upper "
      "bound on decode tokens/s at batch 1, counting only the weight reads?",
      q.model, group_thousands(*m.num_parameters), q.gpu, g.bandwidth_bytes_per_s / 1e12);
  q.answer = g.bandwidth_bytes_per_s / bytes;
  q.unit = "tok/s";
  q.tolerance_rel = 0.02;
  q.tolerance_why = "an estimate to two or three significant figures";
  q.worked = fmt::format(
      "each token reads every weight once: 2 B · {} = {:.4g} GB; {:.4g} GB/s / {:.4g} GB = {:.4g} "
      "tokens/s (the KV cache and the FLOPs only lower it)",
      group_thousands(*m.num_parameters), bytes / 1e9, g.bandwidth_bytes_per_s / 1e9, bytes / 1e9, q.answer);
  return q;
}

QuizQuestion ridge_question(Rng& rng) {
  QuizQuestion q;
  q.kind = QuizKind::ridge;
  q.source = "004 §1.5, §C 9";
  q.gpu = pick(rng, gpu_names());
  const GpuSpec g = load_gpu(q.gpu);
  q.text = fmt::format(
      "The {} computes {:.4g} TFLOP/s (dense bf16) and reads {:.4g} TB/s. Where is its ridge point, in "
      "FLOP per byte?",
      q.gpu, g.bf16_flops_per_s / 1e12, g.bandwidth_bytes_per_s / 1e12);
  q.answer = ridge_flops_per_byte(g);
  q.unit = "FLOP/B";
  q.tolerance_rel = 0.01;
  q.tolerance_why = "three significant figures";
  q.worked = fmt::format("ridge = peak / bandwidth = {:.4g} FLOP/s / {:.4g} B/s = {:.4g} FLOP/B",
                         g.bf16_flops_per_s, g.bandwidth_bytes_per_s, q.answer);
  return q;
}

QuizQuestion gqa_ratio_question(Rng& rng) {
  QuizQuestion q;
  q.kind = QuizKind::gqa_ratio;
  q.source = "004 §2.2, §C 8, §C 10";
  q.model = pick(rng, kGroupedModels);
  const ModelSpec m = load_model(q.model);
  const KvQuery own{1, 1, CacheDtype::bf16, {}};
  KvQuery mha = own;
  mha.kv_heads = m.n_head;
  const double ratio = static_cast<double>(kv_cache_size(m, mha).total_bytes) /
                       static_cast<double>(kv_cache_size(m, own).total_bytes);
  q.text = fmt::format(
      "{} has {} query heads and {} KV head{}. How many times larger would its KV cache be as MHA "
      "({} KV heads), all else equal?",
      q.model, m.n_head, m.n_kv_head, m.n_kv_head == 1 ? " (MQA)" : "s (GQA)", m.n_head);
  q.answer = ratio;
  q.unit = "×";
  q.tolerance_rel = 0.005;
  q.tolerance_why = "an exact ratio of head counts";
  q.worked = fmt::format(
      "the cache is proportional to n_kv_head (2 · L · n_kv_head · head_dim per token): {} / {} = {:.4g}×; "
      "the weights and FLOPs of the query side do not change",
      m.n_head, m.n_kv_head, q.answer);
  return q;
}

QuizQuestion expected_tokens_question(Rng& rng) {
  QuizQuestion q;
  q.kind = QuizKind::expected_tokens;
  q.source = "000 §7.4";
  q.alpha = pick(rng, std::vector<double>{0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9});
  q.k = pick(rng, std::vector<int>{2, 3, 4, 5, 6, 8});
  q.text = fmt::format(
      "Speculative decoding with K = {} draft tokens per step and acceptance rate α = {} (i.i.d.): "
      "expected tokens per target forward, E[τ]?",
      q.k, q.alpha);
  q.answer = spec::expected_tokens(q.alpha, q.k);
  q.unit = "tokens";
  q.tolerance_rel = 0.01;
  q.tolerance_why = "three significant figures";
  q.worked = fmt::format("E[τ] = (1 − α^(K+1)) / (1 − α) = (1 − {}^{}) / (1 − {}) = {:.4g}", q.alpha, q.k + 1,
                         q.alpha, q.answer);
  return q;
}

}  // namespace

QuizKind parse_quiz_kind(const std::string& s) {
  for (QuizKind k : all_quiz_kinds())
    if (s == quiz_kind_name(k)) return k;
  throw InputError("--kind: must be one of kv-cache, decode-bound, ridge, gqa-ratio, etau; got '" + s + "'");
}

const char* quiz_kind_name(QuizKind k) {
  switch (k) {
    case QuizKind::kv_cache: return "kv-cache";
    case QuizKind::decode_bound: return "decode-bound";
    case QuizKind::ridge: return "ridge";
    case QuizKind::gqa_ratio: return "gqa-ratio";
    case QuizKind::expected_tokens: return "etau";
  }
  return "?";
}

std::vector<QuizKind> all_quiz_kinds() {
  return {QuizKind::kv_cache, QuizKind::decode_bound, QuizKind::ridge, QuizKind::gqa_ratio,
          QuizKind::expected_tokens};
}

std::vector<QuizQuestion> make_quiz(std::uint64_t seed, int count, const std::vector<QuizKind>& kinds) {
  require_range("--count", count, 1, 100);
  const std::vector<QuizKind> cycle = kinds.empty() ? all_quiz_kinds() : kinds;
  Rng rng(seed);
  std::vector<QuizQuestion> quiz;
  for (int i = 0; i < count; ++i) {
    switch (cycle[static_cast<std::size_t>(i) % cycle.size()]) {
      case QuizKind::kv_cache: quiz.push_back(kv_cache_question(rng)); break;
      case QuizKind::decode_bound: quiz.push_back(decode_bound_question(rng)); break;
      case QuizKind::ridge: quiz.push_back(ridge_question(rng)); break;
      case QuizKind::gqa_ratio: quiz.push_back(gqa_ratio_question(rng)); break;
      case QuizKind::expected_tokens: quiz.push_back(expected_tokens_question(rng)); break;
    }
  }
  return quiz;
}

}  // namespace kvlab
