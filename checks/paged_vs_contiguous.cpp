// paged-vs-contiguous — 000 §5.2 (vLLM, arXiv 2309.06180 §4): paging moves the cache, not the maths.
//
// Claim: attention that gathers K/V through a block table (000 §5.2 (4)) computes the same thing
// as attention over one contiguous buffer. Two sequences (different prompts) share one pool and
// are prefilled, then decoded in lockstep, so their blocks interleave in physical memory; every
// logit is compared with the same sequence decoded through the preallocated contiguous cache
// (PreallocCache, 004 §3.1). Block sizes: 1, --block-size (16) and one larger than the sequence
// (prefill + decode + 1: a single, partly filled block).
// Expected: max |Δlogits| = 0 within the float rounding bound 2·n·u·max(1, |logit|) of
// support/model_setup.hpp (the mathematics promises equality; kvlab's fixed summation order
// usually gives the same bits); each sequence holds ⌈tokens/block size⌉ blocks (exact); the pool's
// audit is clean (exact).
//
//   kvlab paged-vs-contiguous [--prefill 8] [--decode 24] [--block-size 16] [--kv-heads 2]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/paged_vs_contiguous.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

// Largest --prefill and --decode: 3 block sizes × 4 runs × (1 + 256) forwards stay near a second.
constexpr int kMaxTokens = 256;
constexpr int kMaxBlockSize = 1024;

// The model both caches serve (seeded, or the --weights file), with the shape the claim needs.
template <class T>
MiniGPT<T> pool_model(const PagedVsContiguousOptions& o, const RunContext& ctx) {
  const int total = o.prefill + o.decode;
  ModelConfig base;
  base.n_kv_head = o.kv_heads;
  base.block_size = std::max(64, total);
  return check_model<T>(
      base, ctx, "paged-vs-contiguous",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"},
       {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (the pool keeps every position)"},
       {"block_size", [total](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= total; },
        fmt::format(">= --prefill + --decode = {} with learned positions", total)}});
}

// The two sequences (different prompts) that share the pool.
std::vector<std::vector<int>> two_sequences(const ModelConfig& cfg, int total, const RunContext& ctx) {
  return {random_tokens(ctx.seed + 1, total, cfg.vocab_size), random_tokens(ctx.seed + 2, total, cfg.vocab_size)};
}

// Logits [prefill + decode, vocab] of `ids`: prefill at once, then one token at a time.
template <class T>
void step(const MiniGPT<T>& model, std::span<const int> ids, int pos, int n, KVCache<T>& cache, Mat<T>& out) {
  out.middleRows(pos, n) = model.forward(ids.subspan(static_cast<std::size_t>(pos), static_cast<std::size_t>(n)), pos, cache);
}

template <class T>
Result run_impl(const PagedVsContiguousOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int total = o.prefill + o.decode;
  const MiniGPT<T> model = pool_model<T>(o, ctx);
  const ModelConfig& cfg = model.config();
  const auto ids = two_sequences(cfg, total, ctx);

  // The reference: each sequence alone in a preallocated contiguous cache.
  std::vector<Mat<T>> ref;
  for (const auto& seq : ids) {
    PreallocCache<T> cache(cfg.n_kv_layer(), cfg.kv_width(), total);
    Mat<T> out(total, cfg.vocab_size);
    step(model, seq, 0, o.prefill, cache, out);
    for (int p = o.prefill; p < total; ++p) step(model, seq, p, 1, cache, out);
    ref.push_back(std::move(out));
  }
  double scale = 1.0;
  for (const auto& m : ref) scale = std::max(scale, static_cast<double>(max_abs(m)));
  const double bound = rounding_bound(cfg, ctx.dtype, scale);

  Result r;
  Table detail{"paged (two sequences interleaved in one pool) vs contiguous",
               {"block size", "blocks / sequence", "A's block table (first 8)", "slots allocated", "slots used",
                "max |Δlogits|", "bound"}, {}};
  int audit_problems = 0;
  const int sizes[] = {1, o.block_size, total + 1};
  for (int bs : sizes) {
    const int per_seq = (total + bs - 1) / bs;
    PagedKVPool<T> pool(2 * per_seq, bs, cfg.n_kv_layer(), cfg.kv_width(), {}, faults);
    BlockManager& m = pool.manager();
    std::vector<std::unique_ptr<PagedKVCache<T>>> views;
    std::vector<Mat<T>> out(2, Mat<T>(total, cfg.vocab_size));
    for (int s = 0; s < 2; ++s) {
      views.push_back(pool.view(m.add_sequence()));
      step(model, ids[static_cast<std::size_t>(s)], 0, o.prefill, *views.back(), out[static_cast<std::size_t>(s)]);
    }
    for (int p = o.prefill; p < total; ++p)  // lockstep decode: the two tables interleave
      for (int s = 0; s < 2; ++s) step(model, ids[static_cast<std::size_t>(s)], p, 1, *views[static_cast<std::size_t>(s)], out[static_cast<std::size_t>(s)]);
    double diff = 0;
    for (int s = 0; s < 2; ++s)
      diff = nan_max(diff, static_cast<double>(max_abs(out[static_cast<std::size_t>(s)] - ref[static_cast<std::size_t>(s)])));
    const int held = static_cast<int>(m.block_table(views[0]->sequence()).size() + m.block_table(views[1]->sequence()).size());
    const PoolAudit audit = m.audit();
    audit_problems += static_cast<int>(audit.problems.size());
    for (const auto& p : audit.problems) r.notes.push_back(fmt::format("audit, block size {}: {}", bs, p));

    const std::string label = bs == 1 ? "1" : bs == total + 1 ? fmt::format("{} (> sequence)", bs) : std::to_string(bs);
    r.expect({.quantity = fmt::format("max |Δlogits| paged vs contiguous, block size {}", label),
              .source = "000 §5.2", .unit = "", .expected = 0, .tolerance = bound,
              .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(cfg),
                                 unit_roundoff(ctx.dtype), dtype_name(ctx.dtype)),
              .measured = diff});
    r.expect({.quantity = fmt::format("blocks held by the two sequences, block size {}", label), .source = "000 §5.2",
              .unit = "blocks", .expected = 2.0 * per_seq, .tolerance = 0,
              .why = fmt::format("2 × ⌈{}/{}⌉: integer count, exact", total, bs), .measured = double(held)});
    r.metric(fmt::format("max_abs_diff_bs{}", bs), diff);
    const auto& table = m.block_table(views[0]->sequence());
    std::string first;
    for (std::size_t i = 0; i < std::min<std::size_t>(8, table.size()); ++i) first += (i ? ", " : "") + std::to_string(table[i]);
    if (table.size() > 8) first += ", ...";
    detail.rows.push_back({label, std::int64_t{per_seq}, "[" + first + "]", std::int64_t{per_seq} * bs, std::int64_t{total},
                           diff, bound});
  }
  r.expect({.quantity = "pool audit problems, all block sizes", .source = "000 §5.2, §6.2", .unit = "problems",
            .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact", .measured = double(audit_problems)});
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("mini-GPT: {}, {} K/V heads, {} on {}, seed {}; two sequences of {} + {} tokens",
                                ctx.weights.empty() ? "2 layers, d_model 64, 8 query heads, learned positions"
                                                    : ctx.weights + " (--weights; --kv-heads does not apply)",
                                cfg.n_kv_head, dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed, o.prefill, o.decode));
  r.notes.push_back("keys()/values() of the paged view gather the blocks, in table order, into a contiguous scratch "
                    "buffer; a paged-attention kernel reads them in place, the arithmetic is the same.");
  r.notes.push_back("slots allocated − slots used ≤ block size − 1 per sequence: paging's only waste (internal, in the "
                    "last block).");
  return r;
}

// --device cuda: both caches on the device (backend/device_gpt.hpp). The reference:
// each sequence alone in a contiguous device cache. The paged one: both sequences in one pool whose
// blocks are handed out in a seeded random order, prefilled one after the other, then decoded in
// lockstep by one batched decode step per position (the paged decode-attention kernel's gather).
Result run_device(const PagedVsContiguousOptions& o, const RunContext& ctx) {
  const int total = o.prefill + o.decode;
  const MiniGPT<float> model = pool_model<float>(o, ctx);
  const ModelConfig& cfg = model.config();
  const auto ids = two_sequences(cfg, total, ctx);
  const auto ops = device_ops(ctx);
  std::vector<Mat<float>> ref;
  for (const auto& seq : ids) {
    gpu::DeviceGpt alone(model, *ops, {.max_ctx = total});
    Mat<float> out(total, cfg.vocab_size);
    out.topRows(o.prefill) = alone.forward(0, std::span(seq).first(static_cast<std::size_t>(o.prefill)));
    for (int p = o.prefill; p < total; ++p) out.row(p) = alone.forward(0, std::span(seq).subspan(static_cast<std::size_t>(p), 1));
    ref.push_back(std::move(out));
  }
  double scale = 1.0;
  for (const auto& m : ref) scale = std::max(scale, static_cast<double>(max_abs(m)));
  const double bound = rounding_bound(cfg, Dtype::f32, scale);

  Result r;
  Table detail{"paged (two sequences in one pool, shuffled blocks) vs contiguous, on the device",
               {"block size", "blocks / sequence", "max |Δlogits|", "bound"}, {}};
  std::vector<int> sizes{1, o.block_size, total + 1};
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());  // --block-size 1: once
  for (const int bs : sizes) {
    gpu::DeviceGpt pool(model, *ops, {.batch = 2, .max_ctx = total, .paged = true, .block_size = bs, .seed = ctx.seed});
    std::vector<Mat<float>> out(2, Mat<float>(total, cfg.vocab_size));
    for (int s = 0; s < 2; ++s)
      out[s].topRows(o.prefill) = pool.forward(s, std::span(ids[s]).first(static_cast<std::size_t>(o.prefill)));
    for (int p = o.prefill; p < total; ++p) {  // one batched decode step: both sequences at position p
      const int step_tokens[] = {ids[0][static_cast<std::size_t>(p)], ids[1][static_cast<std::size_t>(p)]};
      const Mat<float> lg = pool.decode(step_tokens);
      out[0].row(p) = lg.row(0);
      out[1].row(p) = lg.row(1);
    }
    const double diff = worst(max_abs_diff(out[0], ref[0]), max_abs_diff(out[1], ref[1]));
    const std::string label = bs == total + 1 ? fmt::format("{} (> sequence)", bs) : std::to_string(bs);
    r.expect({.quantity = fmt::format("max |Δlogits| paged vs contiguous on the device, block size {}", label),
              .source = "000 §5.2", .unit = "", .expected = 0, .tolerance = bound,
              .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} (float32 on the device)",
                                 reduction_length(cfg), unit_roundoff(Dtype::f32)),
              .measured = diff});
    r.metric(fmt::format("max_abs_diff_bs{}", bs), diff);
    detail.rows.push_back({label, std::int64_t{(total + bs - 1) / bs}, diff, bound});
  }
  r.tables.push_back(std::move(detail));
  r.notes.push_back(fmt::format("mini-GPT: {}, {} K/V heads, seed {}; two sequences of {} + {} tokens",
                                ctx.weights.empty() ? "2 layers, d_model 64, 8 query heads, learned positions"
                                                    : ctx.weights + " (--weights; --kv-heads does not apply)",
                                cfg.n_kv_head, ctx.seed, o.prefill, o.decode));
  r.notes.push_back(device_note(*ops));
  r.notes.push_back("On the device the pool is a fixed table per sequence (⌈(prefill + decode)/block size⌉ blocks, "
                    "shuffled by --seed); the block manager's counts and audit are CPU rows: `--device cpu`.");
  return r;
}

}  // namespace

Result run_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                               const PagedVsContiguousParts& parts) {
  require_range("--prefill", o.prefill, 1, kMaxTokens);
  require_range("--decode", o.decode, 0, kMaxTokens);
  require_range("--block-size", o.block_size, 1, kMaxBlockSize);
  require_range("--kv-heads", o.kv_heads, 1, 8);
  if (8 % o.kv_heads != 0) throw InputError(fmt::format("--kv-heads: must divide 8 query heads (got {})", o.kv_heads));
  Result r = ctx.device == Device::cuda
                 ? run_device(o, ctx)
                 : with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, parts.faults); });
  r.check = "paged-vs-contiguous";
  r.source = "000 §5.2";
  r.claim = fmt::format("Decoding through a paged KV cache (gather through the block table) gives the same logits as "
                        "the contiguous preallocated cache, for block sizes 1, {} and {}.",
                        o.block_size, o.prefill + o.decode + 1);
  return r;
}

namespace {

class PagedVsContiguous final : public Check {
 public:
  std::string name() const override { return "paged-vs-contiguous"; }
  std::string source() const override { return "000 §5.2"; }
  std::string summary() const override { return "paged decode = contiguous decode (block sizes 1, 16, > sequence)"; }
  std::string description() const override {
    return "Prefills and decodes two sequences in lockstep through one paged pool (their blocks\n"
           "interleave) and compares every logit with the same sequences decoded through the\n"
           "preallocated contiguous cache, at block sizes 1, --block-size and one above the length.";
  }
  std::string derivation() const override {
    return "Attention at position t reads K[0..t], V[0..t]. Paging stores row p in slot p mod B of\n"
           "physical block table[p / B]; the gather reads, for p = 0..t, exactly that slot, so it\n"
           "hands attention the same rows in the same order as the contiguous buffer. Same inputs,\n"
           "same summation order: equal logits (up to rounding at most). Memory: ⌈n/B⌉ blocks, at\n"
           "most B − 1 slots unused.\n"
           "Source: 000 §5.2 (block table, gather); vLLM, arXiv 2309.06180 §4.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--prefill", opts_.prefill, "Prompt tokens per sequence")->check(IntRange(1, kMaxTokens));
    sub.add_option("--decode", opts_.decode, "Tokens decoded one at a time")->check(IntRange(0, kMaxTokens));
    sub.add_option("--block-size", opts_.block_size, "The middle block size (default 16)")->check(IntRange(1, kMaxBlockSize));
    sub.add_option("--kv-heads", opts_.kv_heads, "K/V heads of 8 query heads (1, 2, 4, 8)")->check(IntRange(1, 8));
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  bool has_cuda() const override { return true; }
  std::string cuda_gap(const RunContext&) const override {
    return "the block manager's counts and audit are CPU rows";
  }
  Result run(const RunContext& ctx) override { return run_paged_vs_contiguous(opts_, ctx); }

 private:
  PagedVsContiguousOptions opts_;
};

KVLAB_REGISTER_CHECK(410, PagedVsContiguous);

}  // namespace
}  // namespace kvlab::checks
