// parallel-sampling — 000 §5.2 (vLLM, arXiv 2309.06180 §4.4): n samples of one prompt share its blocks.
//
// Claim (000 §5.2): paging supports copy-on-write sharing, so parallel sampling (n outputs of one
// prompt) comes naturally: the prompt's KV is stored once and referenced by every sample's block
// table; only the blocks a sample writes are its own.
//
// kvlab prefills a prompt once in a paged pool, forks n − 1 more samples from it (fork: every
// table points at the prompt's blocks, ref count n) and samples new tokens for each from the
// mini-GPT's softmax (seeded). Each sample's logits are compared with the same token sequence run
// alone through a contiguous preallocated cache.
// Expected (integer bookkeeping, exact): blocks in use = F + n·(⌈(P+G)/B⌉ − F) with F = ⌊P/B⌋
// shared full prompt blocks, against n·⌈(P+G)/B⌉ for n private copies; copy-on-write copies =
// n − 1 when the prompt ends mid-block (P mod B ≠ 0: every sample but the last to write copies
// the shared last prompt block), else 0; blocks held by all n tables = F; audit clean and every
// block free after freeing. Logits: equal to the contiguous runs within the float rounding bound.
//
//   kvlab parallel-sampling [--samples 4] [--prompt 40] [--new-tokens 24] [--block-size 16]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/parallel_sampling.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::parallel_sampling {
namespace {

// Largest options: 32 samples × 64 tokens after a 256-token prompt, paged and contiguous, take
// about 2 s here.
constexpr int kMaxSamples = 32, kMaxPrompt = 256, kMaxNew = 64, kMaxBlockSize = 256;

// The sizes the claim is about: F shared full prompt blocks, ⌈(P+G)/B⌉ blocks per copy, the
// blocks in use with sharing and with n private copies, and the copy-on-write copies expected.
struct Bookkeeping {
  int per_copy, full_prompt, shared, copies, cow;
};
Bookkeeping bookkeeping(const ParallelSamplingOptions& o) {
  const int n = o.samples, P = o.prompt, B = o.block_size, L = P + o.new_tokens;
  const int per_copy = (L + B - 1) / B, F = P / B;
  return {per_copy, F, F + n * (per_copy - F), n * per_copy, P % B != 0 ? n - 1 : 0};
}

template <class T>
int sample_token(const Mat<T>& logits_row, Rng& rng) {
  const Eigen::Index V = logits_row.cols();
  std::vector<double> p(static_cast<std::size_t>(V));
  double mx = -INFINITY, sum = 0;
  for (Eigen::Index i = 0; i < V; ++i) mx = std::max(mx, static_cast<double>(logits_row(0, i)));
  for (Eigen::Index i = 0; i < V; ++i) sum += p[static_cast<std::size_t>(i)] = std::exp(static_cast<double>(logits_row(0, i)) - mx);
  for (double& x : p) x /= sum;
  return static_cast<int>(rng.categorical(p));
}

template <class T>
MiniGPT<T> sampling_model(const ParallelSamplingOptions& o, const RunContext& ctx) {
  const int L = o.prompt + o.new_tokens;
  ModelConfig base;
  base.n_kv_head = 2;
  base.block_size = std::max(64, L);
  return check_model<T>(base, ctx, "parallel-sampling", {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"}, {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (the pool keeps every position)"}, {"cla_share", [](const ModelConfig& c) { return c.cla_share == 1; }, "1 (one cache layer per layer)"},
       {"block_size", [L](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= L; },
        fmt::format(">= {} with learned positions (--prompt + --new-tokens)", L)}});
}

// The blocks every sample's table holds (the shared prompt).
int blocks_in_every_table(const std::vector<std::vector<int>>& tables) {
  std::vector<int> common = tables.front();
  std::sort(common.begin(), common.end());
  for (std::size_t s = 1; s < tables.size(); ++s) {
    std::vector<int> t = tables[s];
    std::sort(t.begin(), t.end());
    std::vector<int> both;
    std::set_intersection(common.begin(), common.end(), t.begin(), t.end(), std::back_inserter(both));
    common = both;
  }
  return static_cast<int>(common.size());
}

template <class T>
ParallelSamplingMeasured measure_impl(const ParallelSamplingOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int n = o.samples, P = o.prompt, G = o.new_tokens, L = P + G;
  const MiniGPT<T> model = sampling_model<T>(o, ctx);
  ParallelSamplingMeasured out{.options = o, .context = ctx, .config = model.config()};
  const ModelConfig& cfg = out.config;
  const std::vector<int> prompt = random_tokens(ctx.seed + 1, P, cfg.vocab_size);

  PagedKVPool<T> pool(bookkeeping(o).copies, o.block_size, cfg.n_layer, cfg.kv_width(), {}, faults);
  BlockManager& m = pool.manager();
  std::vector<std::unique_ptr<PagedKVCache<T>>> views;
  views.push_back(pool.view(m.add_sequence()));
  const Mat<T> prefill = model.forward(prompt, 0, *views[0]);
  for (int s = 1; s < n; ++s) views.push_back(pool.view(m.fork(views[0]->sequence())));
  out.blocks_after_fork = m.blocks_in_use();

  Rng rng(ctx.seed + 2);
  std::vector<std::vector<int>> seqs(static_cast<std::size_t>(n), prompt);
  std::vector<Mat<T>> logits(static_cast<std::size_t>(n), Mat<T>(G, cfg.vocab_size));  // row g: after token P + g
  std::vector<Mat<T>> last(static_cast<std::size_t>(n), prefill.bottomRows(1));
  for (int g = 0; g < G; ++g)
    for (int s = 0; s < n; ++s) {
      const auto i = static_cast<std::size_t>(s);
      seqs[i].push_back(sample_token(last[i], rng));
      last[i] = model.forward(std::span<const int>(seqs[i]).subspan(static_cast<std::size_t>(P + g), 1), P + g, *views[i]);
      logits[i].row(g) = last[i];
    }
  for (const auto& v : views) out.tables.push_back(m.block_table(v->sequence()));
  out.blocks_common = blocks_in_every_table(out.tables);
  out.blocks_in_use = m.blocks_in_use();
  out.running_problems = m.audit().problems;
  out.cow_copies = m.stats().cow_copies;

  // The reference: each sample's tokens alone through a contiguous cache.
  for (int s = 0; s < n; ++s) {
    const auto i = static_cast<std::size_t>(s);
    PreallocCache<T> cache(cfg.n_layer, cfg.kv_width(), L);
    const Mat<T> full = model.forward(seqs[i], 0, cache);
    out.max_abs_diff = nan_max(out.max_abs_diff, static_cast<double>(max_abs(full.middleRows(P, G) - logits[i])));
    if (s == 0) out.max_abs_diff = nan_max(out.max_abs_diff, static_cast<double>(max_abs(full.topRows(P) - prefill)));
    out.logit_scale = std::max(out.logit_scale, static_cast<double>(max_abs(full)));
    out.sampled.emplace_back(seqs[i].begin() + P, seqs[i].end());
  }
  for (const auto& v : views) m.free(v->sequence());
  const PoolAudit end = m.audit();
  out.end_problems = end.problems;
  out.blocks_free_at_end = end.blocks_free + end.blocks_evictable;
  return out;
}

void present(const ParallelSamplingMeasured& m, Result& r) {
  const ParallelSamplingOptions& o = m.options;
  const Bookkeeping k = bookkeeping(o);
  const int n = o.samples, P = o.prompt, B = o.block_size, L = P + o.new_tokens;
  r.metric_exact("blocks_shared_prompt", static_cast<std::uint64_t>(m.blocks_in_use));
  r.metric_exact("blocks_private_copies", static_cast<std::uint64_t>(k.copies));
  r.metric("memory_ratio", double(k.copies) / m.blocks_in_use);
  r.metric_exact("cow_copies", m.cow_copies);
  r.metric("max_abs_diff", m.max_abs_diff);

  Table mem{"KV blocks: shared prompt vs n private copies",
            {"", "blocks", "formula"},
            {{std::string("after prefill + fork (prompt once)"), std::int64_t{m.blocks_after_fork}, fmt::format("⌈{}/{}⌉", P, B)},
             {std::string("after decoding, shared prompt (measured)"), std::int64_t{m.blocks_in_use},
              fmt::format("{} + {}·({} − {}) = {}", k.full_prompt, n, k.per_copy, k.full_prompt, k.shared)},
             {std::string("n private copies (formula)"), std::int64_t{k.copies}, fmt::format("{}·⌈{}/{}⌉ = {}", n, L, B, k.copies)}}};
  r.tables.push_back(std::move(mem));
  Table per{"samples", {"sample", "block table", "first sampled tokens"}, {}};
  for (int s = 0; s < n && s < 8; ++s) {
    const auto& t = m.tables[static_cast<std::size_t>(s)];
    const auto& sampled = m.sampled[static_cast<std::size_t>(s)];
    std::string tt, toks;
    for (std::size_t i = 0; i < t.size() && i < 8; ++i) tt += (i ? ", " : "") + std::to_string(t[i]);
    for (std::size_t g = 0; g < sampled.size() && g < 6; ++g) toks += (g ? " " : "") + std::to_string(sampled[g]);
    per.rows.push_back({std::to_string(s), "[" + tt + (t.size() > 8 ? ", ...]" : "]"), toks});
  }
  r.tables.push_back(std::move(per));
  const RunContext& ctx = m.context;
  if (!ctx.weights.empty()) r.notes.push_back(weights_note(m.config, ctx.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, 2 K/V heads, {} on {}; prompt seed {}, "
                                  "tokens sampled from softmax(logits) with seed {}",
                                  dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed + 1, ctx.seed + 2));
  r.notes.push_back("The saving is (n − 1)·F blocks: it grows with the prompt's share of each sample's sequence.");
  for (const auto& p : m.running_problems) r.notes.push_back("audit (running): " + p);
  for (const auto& p : m.end_problems) r.notes.push_back("audit (after freeing): " + p);
}

}  // namespace

ParallelSamplingMeasured measure_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx,
                                                   const ParallelSamplingParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts.faults); });
}

std::vector<Expectation> judge_parallel_sampling(const ParallelSamplingMeasured& m) {
  const ParallelSamplingOptions& o = m.options;
  const Bookkeeping k = bookkeeping(o);
  const int n = o.samples, P = o.prompt, B = o.block_size, L = P + o.new_tokens;
  const std::string exact = "integer bookkeeping: exact";
  const Dtype dtype = m.context.dtype;
  return {
      {.quantity = fmt::format("blocks in use, shared prompt: F + n·(⌈{}/{}⌉ − F), F = ⌊{}/{}⌋ = {}", L, B, P, B, k.full_prompt),
       .source = "000 §5.2", .unit = "blocks", .expected = double(k.shared), .tolerance = 0, .why = exact,
       .measured = double(m.blocks_in_use)},
      {.quantity = "blocks every sample's table holds (the shared prompt)", .source = "000 §5.2", .unit = "blocks",
       .expected = double(n > 1 ? k.full_prompt : k.per_copy), .tolerance = 0, .why = exact,
       .measured = double(m.blocks_common)},
      {.quantity = fmt::format("copy-on-write copies ({} mod {} = {}: {})", P, B, P % B,
                               P % B ? "n − 1 samples copy the shared last prompt block" : "no partial block"),
       .source = "000 §5.2", .unit = "blocks", .expected = double(k.cow), .tolerance = 0, .why = exact,
       .measured = double(m.cow_copies)},
      {.quantity = "max |Δlogits| each sample vs its tokens alone in a contiguous cache", .source = "000 §5.2",
       .unit = "", .expected = 0, .tolerance = rounding_bound(m.config, dtype, m.logit_scale),
       .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(m.config),
                          unit_roundoff(dtype), dtype_name(dtype)),
       .measured = m.max_abs_diff},
      {.quantity = "pool audit problems (running, and after freeing)", .source = "000 §6.2", .unit = "problems",
       .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact",
       .measured = double(m.running_problems.size() + m.end_problems.size())},
      {.quantity = "blocks free after freeing every sample", .source = "000 §6.2", .unit = "blocks",
       .expected = double(k.copies), .tolerance = 0, .why = exact, .measured = double(m.blocks_free_at_end)}};
}

const CheckDef<ParallelSamplingOptions, ParallelSamplingMeasured>& parallel_sampling_check() {
  using O = ParallelSamplingOptions;
  static const CheckDef<O, ParallelSamplingMeasured> def{
      .spec = {.name = "parallel-sampling",
               .order = 430,
               .source = "000 §5.2",
               .summary = "n samples of one prompt share its blocks: F + n·(⌈L/B⌉ − F) vs n·⌈L/B⌉",
               .claim_zh = "同一提示的 n 个样本共享其块：F + n·(⌈L/B⌉ − F) 对 n·⌈L/B⌉",
               .description =
                   "Prefills one prompt in a paged pool, forks n samples from it and samples new tokens for\n"
                   "each; counts the blocks in use against the formula and against n private copies, the\n"
                   "copy-on-write copies of the shared last prompt block, and compares each sample's logits\n"
                   "with its tokens run alone through a contiguous cache.",
               .derivation =
                   "Fork shares every prompt block (ref count n). The F = ⌊P/B⌋ full prompt blocks are never\n"
                   "written again: stored once. A partial last prompt block is written by every sample's\n"
                   "first new token: the first n − 1 writers copy it (ref > 1), the last writes in place.\n"
                   "Each sample then owns ⌈(P+G)/B⌉ − F blocks, so in use = F + n·(⌈(P+G)/B⌉ − F), against\n"
                   "n·⌈(P+G)/B⌉ for n copies: (n − 1)·F blocks saved.\n"
                   "Source: 000 §5.2; vLLM, arXiv 2309.06180 §4.4.",
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--samples", &O::samples, Allowed::integers(2, kMaxSamples), "Samples of the prompt (n >= 2)"},
                  {"--prompt", &O::prompt, Allowed::integers(1, kMaxPrompt), "Prompt tokens"},
                  {"--new-tokens", &O::new_tokens, Allowed::integers(1, kMaxNew), "Tokens sampled per sample"},
                  {"--block-size", &O::block_size, Allowed::integers(1, kMaxBlockSize), "Positions per block"}},
      .constraints = {},
      .measure = [](const O& o, const RunContext& ctx) { return measure_parallel_sampling(o, ctx); },
      .judge = judge_parallel_sampling,
      .present = present,
      .claim =
          [](const ParallelSamplingMeasured& m) {
            const ParallelSamplingOptions& o = m.options;
            const Bookkeeping k = bookkeeping(o);
            return fmt::format("{} samples of one {}-token prompt, {} new tokens each, share the prompt's {} full blocks: "
                               "{} blocks in use instead of {} for {} private copies ({:.2f}× less).",
                               o.samples, o.prompt, o.new_tokens, k.full_prompt, k.shared, k.copies, o.samples,
                               double(k.copies) / k.shared);
          }};
  return def;
}

Result run_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx, const ParallelSamplingParts& parts) {
  return run_check(parallel_sampling_check(), o, ctx, [&parts](const ParallelSamplingOptions& opts, const RunContext& c) {
    return measure_parallel_sampling(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(parallel_sampling_check);

}  // namespace kvlab::checks::parallel_sampling
