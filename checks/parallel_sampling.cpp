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
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

// Largest options: 32 samples × 64 tokens after a 256-token prompt, paged and contiguous, take
// about 2 s here.
constexpr int kMaxSamples = 32, kMaxPrompt = 256, kMaxNew = 64, kMaxBlockSize = 256;

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
Result run_impl(const ParallelSamplingOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int n = o.samples, P = o.prompt, G = o.new_tokens, B = o.block_size, L = P + G;
  ModelConfig base;
  base.n_kv_head = 2;
  base.block_size = std::max(64, L);
  const MiniGPT<T> model = check_model<T>(base, ctx, "parallel-sampling", {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"}, {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (the pool keeps every position)"}, {"cla_share", [](const ModelConfig& c) { return c.cla_share == 1; }, "1 (one cache layer per layer)"},
       {"block_size", [L](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= L; },
        fmt::format(">= {} with learned positions (--prompt + --new-tokens)", L)}});
  const ModelConfig& cfg = model.config();
  const std::vector<int> prompt = random_tokens(ctx.seed + 1, P, cfg.vocab_size);

  const int per_copy = (L + B - 1) / B, F = P / B;
  const int want_shared = F + n * (per_copy - F), want_copies = n * per_copy;
  const int want_cow = P % B != 0 ? n - 1 : 0;

  PagedKVPool<T> pool(want_copies, B, cfg.n_layer, cfg.kv_width(), {}, faults);
  BlockManager& m = pool.manager();
  std::vector<std::unique_ptr<PagedKVCache<T>>> views;
  views.push_back(pool.view(m.add_sequence()));
  const Mat<T> prefill = model.forward(prompt, 0, *views[0]);
  for (int s = 1; s < n; ++s) views.push_back(pool.view(m.fork(views[0]->sequence())));
  const int shared_after_fork = m.blocks_in_use();

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

  // Blocks every table holds (the shared prompt), and what is in use.
  std::vector<int> common = m.block_table(views[0]->sequence());
  std::sort(common.begin(), common.end());
  for (int s = 1; s < n; ++s) {
    std::vector<int> t = m.block_table(views[static_cast<std::size_t>(s)]->sequence());
    std::sort(t.begin(), t.end());
    std::vector<int> both;
    std::set_intersection(common.begin(), common.end(), t.begin(), t.end(), std::back_inserter(both));
    common = both;
  }
  const int in_use = m.blocks_in_use();
  const PoolAudit running = m.audit();
  const std::uint64_t cow = m.stats().cow_copies;

  // The reference: each sample's tokens alone through a contiguous cache.
  double diff = 0, scale = 1;
  for (int s = 0; s < n; ++s) {
    PreallocCache<T> cache(cfg.n_layer, cfg.kv_width(), L);
    const Mat<T> full = model.forward(seqs[static_cast<std::size_t>(s)], 0, cache);
    diff = nan_max(diff, static_cast<double>(max_abs(full.middleRows(P, G) - logits[static_cast<std::size_t>(s)])));
    if (s == 0) diff = nan_max(diff, static_cast<double>(max_abs(full.topRows(P) - prefill)));
    scale = std::max(scale, static_cast<double>(max_abs(full)));
  }
  const double bound = rounding_bound(cfg, ctx.dtype, scale);
  std::vector<std::vector<int>> tables;
  for (const auto& v : views) tables.push_back(m.block_table(v->sequence()));
  for (const auto& v : views) m.free(v->sequence());
  const PoolAudit end = m.audit();

  Result r;
  r.check = "parallel-sampling";
  r.source = "000 §5.2";
  r.claim = fmt::format("{} samples of one {}-token prompt, {} new tokens each, share the prompt's {} full blocks: {} "
                        "blocks in use instead of {} for {} private copies ({:.2f}× less).",
                        n, P, G, F, want_shared, want_copies, n, double(want_copies) / want_shared);
  const std::string exact = "integer bookkeeping: exact";
  r.expect({.quantity = fmt::format("blocks in use, shared prompt: F + n·(⌈{}/{}⌉ − F), F = ⌊{}/{}⌋ = {}", L, B, P, B, F),
            .source = "000 §5.2", .unit = "blocks", .expected = double(want_shared), .tolerance = 0, .why = exact,
            .measured = double(in_use)});
  r.expect({.quantity = "blocks every sample's table holds (the shared prompt)", .source = "000 §5.2", .unit = "blocks",
            .expected = double(n > 1 ? F : per_copy), .tolerance = 0, .why = exact, .measured = double(common.size())});
  r.expect({.quantity = fmt::format("copy-on-write copies ({} mod {} = {}: {})", P, B, P % B,
                                    P % B ? "n − 1 samples copy the shared last prompt block" : "no partial block"),
            .source = "000 §5.2", .unit = "blocks", .expected = double(want_cow), .tolerance = 0, .why = exact,
            .measured = double(cow)});
  r.expect({.quantity = "max |Δlogits| each sample vs its tokens alone in a contiguous cache", .source = "000 §5.2",
            .unit = "", .expected = 0, .tolerance = bound,
            .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(cfg),
                               unit_roundoff(ctx.dtype), dtype_name(ctx.dtype)),
            .measured = diff});
  r.expect({.quantity = "pool audit problems (running, and after freeing)", .source = "000 §6.2", .unit = "problems",
            .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact",
            .measured = double(running.problems.size() + end.problems.size())});
  r.expect({.quantity = "blocks free after freeing every sample", .source = "000 §6.2", .unit = "blocks",
            .expected = double(want_copies), .tolerance = 0, .why = exact,
            .measured = double(end.blocks_free + end.blocks_evictable)});

  r.metric_exact("blocks_shared_prompt", static_cast<std::uint64_t>(in_use));
  r.metric_exact("blocks_private_copies", static_cast<std::uint64_t>(want_copies));
  r.metric("memory_ratio", double(want_copies) / in_use);
  r.metric_exact("cow_copies", cow);
  r.metric("max_abs_diff", diff);

  Table mem{"KV blocks: shared prompt vs n private copies",
            {"", "blocks", "formula"},
            {{std::string("after prefill + fork (prompt once)"), std::int64_t{shared_after_fork}, fmt::format("⌈{}/{}⌉", P, B)},
             {std::string("after decoding, shared prompt (measured)"), std::int64_t{in_use},
              fmt::format("{} + {}·({} − {}) = {}", F, n, per_copy, F, want_shared)},
             {std::string("n private copies (formula)"), std::int64_t{want_copies}, fmt::format("{}·⌈{}/{}⌉ = {}", n, L, B, want_copies)}}};
  r.tables.push_back(std::move(mem));
  Table per{"samples", {"sample", "block table", "first sampled tokens"}, {}};
  for (int s = 0; s < n && s < 8; ++s) {
    const auto& t = tables[static_cast<std::size_t>(s)];
    std::string tt, toks;
    for (std::size_t i = 0; i < t.size() && i < 8; ++i) tt += (i ? ", " : "") + std::to_string(t[i]);
    for (int g = 0; g < std::min(G, 6); ++g) toks += (g ? " " : "") + std::to_string(seqs[static_cast<std::size_t>(s)][static_cast<std::size_t>(P + g)]);
    per.rows.push_back({std::to_string(s), "[" + tt + (t.size() > 8 ? ", ...]" : "]"), toks});
  }
  r.tables.push_back(std::move(per));
  if (!ctx.weights.empty()) r.notes.push_back(weights_note(cfg, ctx.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, 2 K/V heads, {} on {}; prompt seed {}, "
                                  "tokens sampled from softmax(logits) with seed {}",
                                  dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed + 1, ctx.seed + 2));
  r.notes.push_back("The saving is (n − 1)·F blocks: it grows with the prompt's share of each sample's sequence.");
  for (const auto& p : running.problems) r.notes.push_back("audit (running): " + p);
  for (const auto& p : end.problems) r.notes.push_back("audit (after freeing): " + p);
  return r;
}

}  // namespace

Result run_parallel_sampling(const ParallelSamplingOptions& o, const RunContext& ctx, const ParallelSamplingParts& parts) {
  require_range("--samples", o.samples, 2, kMaxSamples);
  require_range("--prompt", o.prompt, 1, kMaxPrompt);
  require_range("--new-tokens", o.new_tokens, 1, kMaxNew);
  require_range("--block-size", o.block_size, 1, kMaxBlockSize);
  return with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, parts.faults); });
}

namespace {

class ParallelSampling final : public Check {
 public:
  std::string name() const override { return "parallel-sampling"; }
  std::string source() const override { return "000 §5.2"; }
  std::string summary() const override { return "n samples of one prompt share its blocks: F + n·(⌈L/B⌉ − F) vs n·⌈L/B⌉"; }
  std::string description() const override {
    return "Prefills one prompt in a paged pool, forks n samples from it and samples new tokens for\n"
           "each; counts the blocks in use against the formula and against n private copies, the\n"
           "copy-on-write copies of the shared last prompt block, and compares each sample's logits\n"
           "with its tokens run alone through a contiguous cache.";
  }
  std::string derivation() const override {
    return "Fork shares every prompt block (ref count n). The F = ⌊P/B⌋ full prompt blocks are never\n"
           "written again: stored once. A partial last prompt block is written by every sample's\n"
           "first new token: the first n − 1 writers copy it (ref > 1), the last writes in place.\n"
           "Each sample then owns ⌈(P+G)/B⌉ − F blocks, so in use = F + n·(⌈(P+G)/B⌉ − F), against\n"
           "n·⌈(P+G)/B⌉ for n copies: (n − 1)·F blocks saved.\n"
           "Source: 000 §5.2; vLLM, arXiv 2309.06180 §4.4.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--samples", opts_.samples, "Samples of the prompt (n >= 2)")->check(IntRange(2, kMaxSamples));
    sub.add_option("--prompt", opts_.prompt, "Prompt tokens")->check(IntRange(1, kMaxPrompt));
    sub.add_option("--new-tokens", opts_.new_tokens, "Tokens sampled per sample")->check(IntRange(1, kMaxNew));
    sub.add_option("--block-size", opts_.block_size, "Positions per block (default 16)")->check(IntRange(1, kMaxBlockSize));
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  Result run(const RunContext& ctx) override { return run_parallel_sampling(opts_, ctx); }

 private:
  ParallelSamplingOptions opts_;
};

KVLAB_REGISTER_CHECK(430, ParallelSampling);

}  // namespace
}  // namespace kvlab::checks
