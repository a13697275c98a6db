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

namespace kvlab::checks::paged_vs_contiguous {
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

std::string size_label(int bs, int total) {
  return bs == 1 ? "1" : bs == total + 1 ? fmt::format("{} (> sequence)", bs) : std::to_string(bs);
}

// The reference: each sequence alone in a preallocated contiguous cache.
template <class T>
std::vector<Mat<T>> contiguous_runs(const MiniGPT<T>& model, const PagedVsContiguousOptions& o,
                                    const std::vector<std::vector<int>>& ids) {
  const ModelConfig& cfg = model.config();
  const int total = o.prefill + o.decode;
  std::vector<Mat<T>> ref;
  for (const auto& seq : ids) {
    PreallocCache<T> cache(cfg.n_kv_layer(), cfg.kv_width(), total);
    Mat<T> out(total, cfg.vocab_size);
    step(model, seq, 0, o.prefill, cache, out);
    for (int p = o.prefill; p < total; ++p) step(model, seq, p, 1, cache, out);
    ref.push_back(std::move(out));
  }
  return ref;
}

// Both sequences through one pool of block size `bs`: prefilled, then decoded in lockstep.
template <class T>
PagedRun paged_run(const MiniGPT<T>& model, const PagedVsContiguousOptions& o, const std::vector<std::vector<int>>& ids,
                   const std::vector<Mat<T>>& ref, int bs, const PagedFaults& faults,
                   std::vector<std::string>& audit_problems) {
  const ModelConfig& cfg = model.config();
  const int total = o.prefill + o.decode;
  PagedRun run{.block_size = bs, .blocks_per_sequence = (total + bs - 1) / bs};
  PagedKVPool<T> pool(2 * run.blocks_per_sequence, bs, cfg.n_kv_layer(), cfg.kv_width(), {}, faults);
  BlockManager& m = pool.manager();
  std::vector<std::unique_ptr<PagedKVCache<T>>> views;
  std::vector<Mat<T>> out(2, Mat<T>(total, cfg.vocab_size));
  for (std::size_t s = 0; s < 2; ++s) {
    views.push_back(pool.view(m.add_sequence()));
    step(model, ids[s], 0, o.prefill, *views.back(), out[s]);
  }
  for (int p = o.prefill; p < total; ++p)  // lockstep decode: the two tables interleave
    for (std::size_t s = 0; s < 2; ++s) step(model, ids[s], p, 1, *views[s], out[s]);
  for (std::size_t s = 0; s < 2; ++s) run.max_abs_diff = nan_max(run.max_abs_diff, static_cast<double>(max_abs(out[s] - ref[s])));
  run.table_a = m.block_table(views[0]->sequence());
  run.blocks_held = static_cast<int>(run.table_a.size() + m.block_table(views[1]->sequence()).size());
  for (const auto& p : m.audit().problems) audit_problems.push_back(fmt::format("block size {}: {}", bs, p));
  return run;
}

template <class T>
PagedVsContiguousMeasured measure_cpu(const PagedVsContiguousOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int total = o.prefill + o.decode;
  const MiniGPT<T> model = pool_model<T>(o, ctx);
  PagedVsContiguousMeasured m{.options = o, .context = ctx, .config = model.config()};
  const auto ids = two_sequences(m.config, total, ctx);
  const std::vector<Mat<T>> ref = contiguous_runs(model, o, ids);
  for (const auto& r : ref) m.logit_scale = std::max(m.logit_scale, static_cast<double>(max_abs(r)));
  for (int bs : {1, o.block_size, total + 1}) m.runs.push_back(paged_run(model, o, ids, ref, bs, faults, m.audit_problems));
  return m;
}

// --device cuda: both caches on the device (model/device_gpt.hpp). The reference:
// each sequence alone in a contiguous device cache. The paged one: both sequences in one pool whose
// blocks are handed out in a seeded random order, prefilled one after the other, then decoded in
// lockstep by one batched decode step per position (the paged decode-attention kernel's gather).
PagedVsContiguousMeasured measure_device(const PagedVsContiguousOptions& o, const RunContext& ctx) {
  const int total = o.prefill + o.decode;
  const MiniGPT<float> model = pool_model<float>(o, ctx);
  PagedVsContiguousMeasured m{.options = o, .context = ctx, .config = model.config()};
  const ModelConfig& cfg = m.config;
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
  for (const auto& r : ref) m.logit_scale = std::max(m.logit_scale, static_cast<double>(max_abs(r)));
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
    m.runs.push_back({.block_size = bs, .blocks_per_sequence = (total + bs - 1) / bs,
                      .max_abs_diff = worst(max_abs_diff(out[0], ref[0]), max_abs_diff(out[1], ref[1]))});
  }
  m.device_note = device_note(*ops);
  return m;
}

std::string model_note(const PagedVsContiguousMeasured& m) {
  const RunContext& ctx = m.context;
  const std::string model = ctx.weights.empty() ? "2 layers, d_model 64, 8 query heads, learned positions"
                                                : ctx.weights + " (--weights; --kv-heads does not apply)";
  if (ctx.device == Device::cuda)
    return fmt::format("mini-GPT: {}, {} K/V heads, seed {}; two sequences of {} + {} tokens", model,
                       m.config.n_kv_head, ctx.seed, m.options.prefill, m.options.decode);
  return fmt::format("mini-GPT: {}, {} K/V heads, {} on {}, seed {}; two sequences of {} + {} tokens", model,
                     m.config.n_kv_head, dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed, m.options.prefill,
                     m.options.decode);
}

Dtype judged_dtype(const PagedVsContiguousMeasured& m) {
  return m.context.device == Device::cuda ? Dtype::f32 : m.context.dtype;
}

void present(const PagedVsContiguousMeasured& m, Result& r) {
  const bool device = m.context.device == Device::cuda;
  const int total = m.options.prefill + m.options.decode;
  const double bound = rounding_bound(m.config, judged_dtype(m), m.logit_scale);
  for (const auto& p : m.audit_problems) r.notes.push_back("audit, " + p);
  Table detail = device ? Table{"paged (two sequences in one pool, shuffled blocks) vs contiguous, on the device",
                                {"block size", "blocks / sequence", "max |Δlogits|", "bound"}, {}}
                        : Table{"paged (two sequences interleaved in one pool) vs contiguous",
                                {"block size", "blocks / sequence", "A's block table (first 8)", "slots allocated",
                                 "slots used", "max |Δlogits|", "bound"}, {}};
  for (const PagedRun& run : m.runs) {
    r.metric(fmt::format("max_abs_diff_bs{}", run.block_size), run.max_abs_diff);
    const std::string label = size_label(run.block_size, total);
    if (device) {
      detail.rows.push_back({label, std::int64_t{run.blocks_per_sequence}, run.max_abs_diff, bound});
      continue;
    }
    std::string first;
    for (std::size_t i = 0; i < std::min<std::size_t>(8, run.table_a.size()); ++i) first += (i ? ", " : "") + std::to_string(run.table_a[i]);
    if (run.table_a.size() > 8) first += ", ...";
    detail.rows.push_back({label, std::int64_t{run.blocks_per_sequence}, "[" + first + "]",
                           std::int64_t{run.blocks_per_sequence} * run.block_size, std::int64_t{total}, run.max_abs_diff,
                           bound});
  }
  r.tables.push_back(std::move(detail));
  r.notes.push_back(model_note(m));
  if (device) {
    r.notes.push_back(m.device_note);
    r.notes.push_back("On the device the pool is a fixed table per sequence (⌈(prefill + decode)/block size⌉ blocks, "
                      "shuffled by --seed); the block manager's counts and audit are CPU rows: `--device cpu`.");
    return;
  }
  r.notes.push_back("keys()/values() of the paged view gather the blocks, in table order, into a contiguous scratch "
                    "buffer; a paged-attention kernel reads them in place, the arithmetic is the same.");
  r.notes.push_back("slots allocated − slots used ≤ block size − 1 per sequence: paging's only waste (internal, in the "
                    "last block).");
}

}  // namespace

PagedVsContiguousMeasured measure_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                                                     const PagedVsContiguousParts& parts) {
  if (ctx.device == Device::cuda) return measure_device(o, ctx);
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_cpu<T>(o, ctx, parts.faults); });
}

std::vector<Expectation> judge_paged_vs_contiguous(const PagedVsContiguousMeasured& m) {
  const bool device = m.context.device == Device::cuda;
  const int total = m.options.prefill + m.options.decode;
  const Dtype dtype = judged_dtype(m);
  const std::string why =
      device ? fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} (float32 on the device)",
                           reduction_length(m.config), unit_roundoff(Dtype::f32))
             : fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(m.config),
                           unit_roundoff(dtype), dtype_name(dtype));
  std::vector<Expectation> rows;
  for (const PagedRun& run : m.runs) {
    const std::string label = size_label(run.block_size, total);
    rows.push_back({.quantity = fmt::format("max |Δlogits| paged vs contiguous{}, block size {}", device ? " on the device" : "", label),
                    .source = "000 §5.2", .unit = "", .expected = 0, .tolerance = rounding_bound(m.config, dtype, m.logit_scale),
                    .why = why, .measured = run.max_abs_diff});
    if (device) continue;
    rows.push_back({.quantity = fmt::format("blocks held by the two sequences, block size {}", label), .source = "000 §5.2",
                    .unit = "blocks", .expected = 2.0 * run.blocks_per_sequence, .tolerance = 0,
                    .why = fmt::format("2 × ⌈{}/{}⌉: integer count, exact", total, run.block_size),
                    .measured = double(run.blocks_held)});
  }
  if (!device)
    rows.push_back({.quantity = "pool audit problems, all block sizes", .source = "000 §5.2, §6.2", .unit = "problems",
                    .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact",
                    .measured = double(m.audit_problems.size())});
  return rows;
}

const CheckDef<PagedVsContiguousOptions, PagedVsContiguousMeasured>& paged_vs_contiguous_check() {
  using O = PagedVsContiguousOptions;
  static const CheckDef<O, PagedVsContiguousMeasured> def{
      .spec = {.name = "paged-vs-contiguous",
               .order = 410,
               .source = "000 §5.2",
               .summary = "paged decode = contiguous decode (block sizes 1, 16, > sequence)",
               .claim_zh = "分页解码与连续缓存解码一致（块大小 1、16、大于序列）",
               .description =
                   "Prefills and decodes two sequences in lockstep through one paged pool (their blocks\n"
                   "interleave) and compares every logit with the same sequences decoded through the\n"
                   "preallocated contiguous cache, at block sizes 1, --block-size and one above the length.",
               .derivation =
                   "Attention at position t reads K[0..t], V[0..t]. Paging stores row p in slot p mod B of\n"
                   "physical block table[p / B]; the gather reads, for p = 0..t, exactly that slot, so it\n"
                   "hands attention the same rows in the same order as the contiguous buffer. Same inputs,\n"
                   "same summation order: equal logits (up to rounding at most). Memory: ⌈n/B⌉ blocks, at\n"
                   "most B − 1 slots unused.\n"
                   "Source: 000 §5.2 (block table, gather); vLLM, arXiv 2309.06180 §4.",
               .traits = {.dtype = true, .weights = true, .cuda = true}},
      .options = {{"--prefill", &O::prefill, Allowed::integers(1, kMaxTokens), "Prompt tokens per sequence"},
                  {"--decode", &O::decode, Allowed::integers(0, kMaxTokens), "Tokens decoded one at a time"},
                  {"--block-size", &O::block_size, Allowed::integers(1, kMaxBlockSize), "The middle block size"},
                  {"--kv-heads", &O::kv_heads, Allowed::integers(1, 8), "K/V heads of 8 query heads (1, 2, 4, 8)"}},
      .constraints =
          [](const O& o) {
            if (8 % o.kv_heads != 0) throw InputError(fmt::format("--kv-heads: must divide 8 query heads (got {})", o.kv_heads));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_paged_vs_contiguous(o, ctx); },
      .judge = judge_paged_vs_contiguous,
      .present = present,
      .claim =
          [](const PagedVsContiguousMeasured& m) {
            return fmt::format("Decoding through a paged KV cache (gather through the block table) gives the same logits "
                               "as the contiguous preallocated cache, for block sizes 1, {} and {}.",
                               m.options.block_size, m.options.prefill + m.options.decode + 1);
          },
      .cuda_gap = [](const O&, const RunContext&) { return std::string("the block manager's counts and audit are CPU rows"); }};
  return def;
}

Result run_paged_vs_contiguous(const PagedVsContiguousOptions& o, const RunContext& ctx,
                               const PagedVsContiguousParts& parts) {
  return run_check(paged_vs_contiguous_check(), o, ctx, [&parts](const PagedVsContiguousOptions& opts, const RunContext& c) {
    return measure_paged_vs_contiguous(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(paged_vs_contiguous_check);

}  // namespace kvlab::checks::paged_vs_contiguous
