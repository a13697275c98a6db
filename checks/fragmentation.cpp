// fragmentation — how much of the KV memory holds token states under max-length preallocation,
// exact-length contiguous allocation and paging, and how many requests each fits.
// Source: 000 §0 item 3, §5.1–5.2, §2.3; 003 part 6; vLLM (Kwon et al., SOSP'23, arXiv 2309.06180).
//
// Claim (000 §5.1–5.2): preallocating L_max per request ("maybe only 10% used") and variable-size
// contiguous chunks waste memory (utilization ~70%); pages of 16 tokens raise it to ~96% and the
// active batch 2–4× on the same GPU. 003 part 6: paging "completely eliminates" fragmentation.
//
// Simulation (lib/serve): the seeded ShareGPT-like trace (lib/serve/trace.hpp, max_len 2048),
// queued at t = 0 by default so that memory bounds the batch, served by continuous batching on a
// 7B model on an A100-80GB with --kv-tokens slots of KV memory, once per allocator
// (lib/serve/kv_memory.hpp). Utilization = ∫ stored tokens dt / ∫ held slots dt over the steps.
// Expected:
//   - bookkeeping, exact (± 0): each allocator's held slots equal its rule (max_len; prompt +
//     output; ⌈len / block⌉·block) at every step; held + free = capacity at every step and every
//     slot is free again at the end;
//   - paging's waste per sequence lies in [0, block − 1] slots (exact bound), hence its
//     utilization is at least Σ stored / Σ (stored + (block − 1)·running) (computed from the steps);
//   - max-length preallocation runs min(requests, ⌊capacity / max_len⌋) requests at most (exact,
//     and reached when every request is queued at t = 0);
//   - utilization of each allocator recomputed by the check from the rule (± 1e-12 relative),
//     ordered paged >= exact >= max-length; the course's ~70% is compared at its precision (an
//     erratum on this workload: see E13) and the vLLM paper's 20.4–38.2% is shown beside it;
//   - the largest batch each fits at final length, paged / max-length against the course's 2–4×.
//
//   kvlab fragmentation
//   kvlab fragmentation --block 1 | --block 256 | --kv-tokens 131072 | --rate 4
//   kvlab fragmentation --long --format csv          every step's memory series, for plotting
#include "fragmentation.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "report/writers.hpp"
#include "serve/simulator.hpp"
#include "support/serve_common.hpp"

namespace kvlab::checks::fragmentation {
namespace {

constexpr const char* kName = "fragmentation";
constexpr const char* kSource = "000 §5.1–5.2, §2.3; 003 part 6";
constexpr const char* kSummary =
    "KV memory utilization and batch size: max-length preallocation vs exact contiguous vs paging";
constexpr std::int64_t kMaxRequests = 2000;
// Blocks up to 512 tokens: beyond, a page approaches the whole max_len and paging turns into
// max-length preallocation (at 2048 it is exactly that).
constexpr std::int64_t kMaxBlock = 512;
// The smallest positive --rate, arrivals/s: below about 1e-300 the mean gap 1/rate overflows to inf
// (1e-320 gave inf and NaN times in the tables under a HELD verdict); 1e-9 (one arrival in 30
// years) leaves every plausible rate and a margin.
constexpr double kMinRate = 1e-9;
constexpr std::int64_t kLongRequests = 2000;
// Utilization is a ratio of two sums of positive terms over the steps, on both paths: within
// γ_(n+2) of exact each, n the steps; kvlab uses 4·n·u (u ≈ 1.1e-16, rounded up), at least 1e-12.
constexpr double kRel = 1e-12;
constexpr std::array kAllocators{serve::KvAllocator::max_length, serve::KvAllocator::exact,
                                 serve::KvAllocator::paged};

/// Serves `trace` with `kind` and counts the bookkeeping over its steps.
AllocatorRun serve_with(serve::KvAllocator kind, const std::vector<serve::Request>& trace,
                        const serve::StepTimeModel& engine, const FragmentationParts& parts,
                        const FragmentationOptions& o, std::uint64_t L) {
  const auto B = static_cast<std::uint64_t>(o.block);
  serve::SimParts sp;
  sp.make_memory = parts.make_memory;
  sp.progress = progress_bar(o.long_run, fmt::format("fragmentation, {:<24}", serve::allocator_name(kind)));
  serve::SimConfig cfg;
  cfg.policy = serve::Policy::continuous;
  cfg.max_batch = 4096;  // memory, not a batch limit, bounds the batch
  cfg.allocator = kind;
  cfg.kv_tokens = static_cast<std::uint64_t>(o.kv_tokens);
  cfg.block = B;
  cfg.max_len = L;
  AllocatorRun a{.kind = kind, .sim = serve::simulate(trace, cfg, engine, sp)};
  a.sum = serve::summarize(a.sim);
  double stored = 0, held = 0, floor_den = 0;
  for (const serve::StepRecord& s : a.sim.steps) {
    a.rule_mismatch += s.held_slots != s.held_by_rule ? 1 : 0;
    a.conservation += s.held_slots + s.free_slots != s.capacity_slots ? 1 : 0;
    a.waste_max = std::max(a.waste_max, s.waste_max);
    a.external += s.external_block ? 1 : 0;
    a.max_batch = std::max(a.max_batch, s.running);
    stored += static_cast<double>(s.stored_tokens) * s.duration_s;
    held += static_cast<double>(s.held_by_rule) * s.duration_s;
    floor_den += (static_cast<double>(s.stored_tokens) + static_cast<double>((B - 1) * s.running)) * s.duration_s;
  }
  a.conservation += a.sim.final_free_slots != a.sim.final_capacity_slots ? 1 : 0;
  a.util_rule = held > 0 ? stored / held : 0.0;
  a.util_floor = floor_den > 0 ? stored / floor_den : 0.0;
  return a;
}

double mean_length(const FragmentationMeasured& m) {
  return static_cast<double>(m.stats.prompt_total + m.stats.output_total) / static_cast<double>(m.stats.requests);
}

/// The bookkeeping rows: held slots by the rule, conservation, paging's waste bound, and the
/// max-length batch.
void bookkeeping_rows(const FragmentationMeasured& m, std::vector<Expectation>& rows) {
  const auto B = static_cast<std::uint64_t>(m.options.block), M = static_cast<std::uint64_t>(m.options.kv_tokens);
  const std::uint64_t L = m.max_len;
  const AllocatorRun &mx = m.runs[0], &pg = m.runs[2];
  std::uint64_t mismatch = 0, conservation = 0;
  for (const auto& a : m.runs) mismatch += a.rule_mismatch, conservation += a.conservation;
  rows.push_back({"steps where an allocator's held slots differ from its rule (all three)", "000 §5.1–5.2", "steps",
                  0.0, 0.0, "exact count: max_len, prompt + output, or ⌈len / block⌉·block per live request",
                  static_cast<double>(mismatch), std::nullopt, ""});
  rows.push_back({"pool conservation: steps with held + free ≠ capacity, + pools not whole at the end", "000 §5.2", "",
                  0.0, 0.0, "exact count: a freed block or range must return to the free space",
                  static_cast<double>(conservation), std::nullopt, ""});
  rows.push_back(in_interval(fmt::format("paged: largest waste of one sequence, block {}", B), "003 part 6", "slots",
                             0.0, static_cast<double>(B - 1), static_cast<double>(pg.waste_max),
                             "exact bound: a sequence's last block has 0 to block − 1 empty slots"));
  const std::uint64_t mx_fit = std::min<std::uint64_t>(m.lengths.size(), M / L);
  if (m.options.rate == 0.0)
    rows.push_back({fmt::format("max-length: largest running batch in {} slots", M), "000 §5.1", "requests",
                    static_cast<double>(mx_fit), 0.0,
                    fmt::format("exact: min(requests, ⌊{} / {}⌋), all requests queued at t = 0", M, L),
                    static_cast<double>(mx.max_batch), std::nullopt, ""});
  else
    rows.push_back(in_interval(fmt::format("max-length: largest running batch in {} slots", M), "000 §5.1", "requests",
                               1.0, static_cast<double>(mx_fit), static_cast<double>(mx.max_batch),
                               fmt::format("exact bound: 1 to min(requests, ⌊{} / {}⌋); arrivals over time may "
                                           "keep the batch below it", M, L)));
}

/// Utilization: the allocator's held slots (measured) vs the rule's (expected), the paged floor
/// and the order of the three.
void utilization_rows(const FragmentationMeasured& m, std::vector<Expectation>& rows) {
  const AllocatorRun &mx = m.runs[0], &ex = m.runs[1], &pg = m.runs[2];
  const double n_steps = static_cast<double>(std::max({mx.sim.steps.size(), ex.sim.steps.size(), pg.sim.steps.size()}));
  const double rel = std::max(kRel, 4.0 * n_steps * 1.2e-16);  // γ of two sums of n positive terms, both paths
  const std::string util_why = fmt::format(
      "the check's ∫ stored dt / ∫ held dt with held from the rule, not the allocator: double rounding "
      "of sums over the steps, ±{:.2g} relative", rel);
  rows.push_back({"utilization, max-length preallocation (stored / held KV slots)", "000 §5.1–5.2", "%",
                  mx.util_rule * 100, rel * mx.util_rule * 100, util_why, mx.sum.utilization * 100,
                  Stated::parse("70", "显存利用率 ~70%").flags("E13"),
                  fmt::format("a request holds {} slots while its cache grows from its prompt to prompt + output − 1 "
                              "(mean final length {:.0f} here): {:.1f}% of the held slots hold a token state on "
                              "this ShareGPT-like trace; the vLLM paper measures 20.4–38.2% in the systems it "
                              "compares against (E13)",
                              m.max_len, mean_length(m), mx.sum.utilization * 100)});
  rows.push_back({"utilization, exact-length contiguous (stored / held KV slots)", "000 §5.1", "%", ex.util_rule * 100,
                  rel * ex.util_rule * 100, util_why, ex.sum.utilization * 100, std::nullopt, ""});
  rows.back().document = "variable-size chunks → external fragmentation";
  rows.push_back({fmt::format("utilization, paged, block {}", m.options.block), "000 §5.2", "%", pg.util_rule * 100,
                  rel * pg.util_rule * 100, util_why, pg.sum.utilization * 100, std::nullopt, ""});
  rows.back().document = "~96% (vLLM: under 4% waste)";
  rows.push_back(in_interval(fmt::format("paged utilization in [floor {:.4g}%, 100%]: floor Σ stored / Σ (stored + "
                                         "(block − 1)·running)", pg.util_floor * 100),
                             "003 part 6", "%", pg.util_floor * 100 * (1 - rel), 100.0, pg.sum.utilization * 100,
                             "exact bound from the per-sequence waste bound (± rounding): paging's waste is the "
                             "last block only"));
  rows.push_back(yes_no(fmt::format("utilization ordered: paged {:.1f}% >= exact {:.1f}% >= max-length {:.1f}%",
                                    pg.sum.utilization * 100, ex.sum.utilization * 100, mx.sum.utilization * 100),
                        "000 §0 (3)", pg.sum.utilization >= ex.sum.utilization && ex.sum.utilization >= mx.sum.utilization,
                        "a comparison of three simulations of the same trace: yes/no (ties are legitimate, e.g. "
                        "every request max_len long)"));
}

double fit_ratio(const std::vector<std::uint64_t>& fit) {
  return fit[0] > 0 ? static_cast<double>(fit[2]) / static_cast<double>(fit[0]) : 0.0;
}

void fit_rows(const FragmentationMeasured& m, std::vector<Expectation>& rows) {
  const auto M = static_cast<std::uint64_t>(m.options.kv_tokens);
  for (std::size_t k = 0; k < 3; ++k)
    rows.push_back({fmt::format("largest batch at final length in {} slots, {}", M, serve::allocator_name(kAllocators[k])),
                    "000 §2.3", "requests", static_cast<double>(m.fit_check[k]), 0.0,
                    "exact: the check's prefix sums of the slots each request holds at its final length",
                    static_cast<double>(m.fit_library[k]), std::nullopt, ""});
  const bool ratio_ok = m.fit_check[0] > 0 && m.fit_library[0] > 0;
  const double ratio_check = ratio_ok ? fit_ratio(m.fit_check) : 0.0;
  const double ratio_lib = ratio_ok ? fit_ratio(m.fit_library) : 0.0;
  rows.push_back({"largest batch, paged / max-length", "000 §5.2", "×", ratio_check, 2.3e-16 * ratio_check,
                  "the ratio of two exact counts, one rounding", ratio_lib,
                  Stated::range("2", "4", "active batch size 翻 2-4×"),
                  fmt::format("{} / {} requests of this trace at their final lengths in {} slots; it is "
                              "max_len / mean slots per request (≈ 2048 / {:.0f}) while the trace lasts, so "
                              "it moves with max_len and the length distribution", m.fit_check[2], m.fit_check[0], M,
                              mean_length(m))});
}

Table allocator_table(const FragmentationMeasured& m) {
  const AllocatorRun &mx = m.runs[0], &ex = m.runs[1], &pg = m.runs[2];
  Table t{"allocators on the same trace (continuous batching, simulated)",
          {"quantity", "max-length", "exact contiguous", "paged", "unit"}, {}};
  auto row3 = [&](const std::string& q, double a, double b, double c, const std::string& u) { t.rows.push_back({q, a, b, c, u}); };
  auto count3 = [&](const std::string& q, std::uint64_t AllocatorRun::*field, const std::string& u) {
    row3(q, static_cast<double>(mx.*field), static_cast<double>(ex.*field), static_cast<double>(pg.*field), u);
  };
  row3("KV utilization (stored / held)", mx.sum.utilization * 100, ex.sum.utilization * 100, pg.sum.utilization * 100, "%");
  row3("mean running batch (time-weighted)", mx.sum.mean_batch, ex.sum.mean_batch, pg.sum.mean_batch, "requests");
  count3("largest running batch", &AllocatorRun::max_batch, "requests");
  row3("largest batch at final length", static_cast<double>(m.fit_check[0]), static_cast<double>(m.fit_check[1]),
       static_cast<double>(m.fit_check[2]), "requests");
  count3("steps blocked by holes (external fragmentation)", &AllocatorRun::external, "steps");
  row3("preemptions (paged: pool dry on a decode)", static_cast<double>(mx.sim.preemptions),
       static_cast<double>(ex.sim.preemptions), static_cast<double>(pg.sim.preemptions), "");
  row3("throughput", mx.sum.throughput_tok_s, ex.sum.throughput_tok_s, pg.sum.throughput_tok_s, "tok/s");
  row3("TTFT mean", mx.sum.ttft_mean_s, ex.sum.ttft_mean_s, pg.sum.ttft_mean_s, "s");
  row3("makespan", mx.sim.makespan_s, ex.sim.makespan_s, pg.sim.makespan_s, "s");
  return t;
}

Table trace_table(const FragmentationMeasured& m) {
  const FragmentationOptions& o = m.options;
  const double mean_len = mean_length(m);
  Table tr{"trace and memory", {"quantity", "value", "unit / from"}, {}};
  tr.rows.push_back({"requests", static_cast<std::int64_t>(m.stats.requests), fmt::format("seed {}", m.seed)});
  tr.rows.push_back({"arrivals", o.rate == 0 ? std::string("all at t = 0") : fmt::format("Poisson {:g}/s", o.rate), ""});
  tr.rows.push_back({"prompt mean (drawn)", m.stats.prompt_mean, "tokens; log-normal, mean 161.31, σ 1, ≤ 1024"});
  tr.rows.push_back({"output mean (drawn)", m.stats.output_mean, "tokens; log-normal, mean 337.99, σ 1, ≤ 2048 − prompt"});
  tr.rows.push_back({"final length mean / max_len", mean_len / static_cast<double>(m.max_len) * 100,
                     "% (000 §5.1: \"maybe only 10% used\")"});
  tr.rows.push_back({"KV memory", static_cast<std::int64_t>(o.kv_tokens),
                     fmt::format("token slots = {:.4g} GiB of {}'s bf16 cache",
                                 static_cast<double>(o.kv_tokens) * m.kv_bytes_per_token / kGiB, m.model.name)});
  tr.rows.push_back({"block", static_cast<std::int64_t>(o.block), "tokens per page"});
  tr.rows.push_back({"max_len", static_cast<std::int64_t>(m.max_len), "tokens (max-length reservation)"});
  return tr;
}

void present(const FragmentationMeasured& m, Result& r) {
  const AllocatorRun &mx = m.runs[0], &ex = m.runs[1], &pg = m.runs[2];
  const double mean_len = mean_length(m), L = static_cast<double>(m.max_len);
  r.tables.push_back(allocator_table(m));
  r.tables.push_back(trace_table(m));
  std::vector<std::pair<std::string, const serve::SimResult*>> plotted;
  for (const auto& a : m.runs) {
    r.tables.push_back(step_table(a.sim, serve::allocator_name(a.kind), m.options.long_run));
    plotted.emplace_back(serve::allocator_name(a.kind), &a.sim);
  }
  add_series_plots(r, plotted, m.options.long_run);
  r.notes.push_back(fmt::format(
      "Where the figures come from: max-length preallocation holds {} slots per request whose final "
      "length averages {:.0f} tokens ({:.1f}% of it, 000 §5.1's \"maybe only 10% used\"), and its cache "
      "is still growing, so {:.1f}% of the held slots hold a token state. The vLLM paper (§1, Fig. 2) "
      "measures 20.4–38.2% in the systems it compares against (reservation + internal + external "
      "fragmentation); the course's ~70% matches neither (E13). Exact-length reservation gives {:.1f}% "
      "here: it still holds the slots of tokens not yet generated.",
      m.max_len, mean_len, mean_len / L * 100, mx.sum.utilization * 100, ex.sum.utilization * 100));
  r.notes.push_back(fmt::format(
      "Paging wastes only the last block's empty slots: at most {} per sequence, {:.1f}% utilization here "
      "(the course's ~96% is vLLM's \"under 4% waste\"). Not zero, as 003 part 6's \"completely "
      "eliminates\" says (E14): the bound is block − 1 slots per sequence.",
      m.options.block - 1, pg.sum.utilization * 100));
  r.notes.push_back("What moves the figures: max_len against the real lengths (longer max_len, shorter "
                    "chats: lower max-length utilization, larger paged/max-length ratio), the block "
                    "size (paged waste ≤ block − 1 per sequence), and the load (--rate 0 keeps the "
                    "memory full; a light load leaves it mostly empty, which none of these counts as waste).");
  r.metric("utilization_max_length", mx.sum.utilization);
  r.metric("utilization_exact", ex.sum.utilization);
  r.metric("utilization_paged", pg.sum.utilization);
  r.metric_exact("paged_waste_max_slots", pg.waste_max);
  r.metric_exact("fit_max_length", m.fit_library[0]);
  r.metric_exact("fit_exact", m.fit_library[1]);
  r.metric_exact("fit_paged", m.fit_library[2]);
  r.metric("fit_ratio_paged_over_max_length",
           m.fit_check[0] > 0 && m.fit_library[0] > 0 ? fit_ratio(m.fit_library) : 0.0);
  r.metric("mean_batch_max_length", mx.sum.mean_batch);
  r.metric("mean_batch_paged", pg.sum.mean_batch);
}

}  // namespace

FragmentationMeasured measure_fragmentation(const FragmentationOptions& o, const RunContext& ctx,
                                            const FragmentationParts& parts) {
  FragmentationMeasured m{.options = o, .seed = ctx.seed};
  GpuSpec g;
  const serve::StepTimeModel engine = serve_engine(o.model, o.gpu, &m.model, &g);
  m.kv_bytes_per_token = engine.kv_bytes_per_token();
  serve::TraceSpec ts;
  ts.requests = static_cast<std::uint64_t>(o.long_run && o.requests == 200 ? kLongRequests : o.requests);
  ts.rate_per_s = o.rate;
  ts.seed = ctx.seed;
  const std::vector<serve::Request> trace = serve::generate_trace(ts);
  m.stats = serve::trace_stats(trace);
  const auto B = static_cast<std::uint64_t>(o.block), M = static_cast<std::uint64_t>(o.kv_tokens);
  const std::uint64_t L = m.max_len = ts.max_len;
  if ((L + B - 1) / B * B > M)
    throw InputError(fmt::format("--kv-tokens: must hold one {}-token request in blocks of {}: at least {} (got {})",
                                 L, B, (L + B - 1) / B * B, M));
  for (serve::KvAllocator kind : kAllocators) m.runs.push_back(serve_with(kind, trace, engine, parts, o, L));
  // Largest batch at final length: the library's count and the check's own prefix sums.
  for (const auto& q : trace) m.lengths.push_back(q.prompt_tokens + q.output_tokens);
  for (std::size_t k = 0; k < 3; ++k) {
    std::uint64_t used = 0, n = 0;
    for (std::uint64_t len : m.lengths) {
      const std::uint64_t need = k == 0 ? L : k == 1 ? len : (len + B - 1) / B * B;
      if (used + need > M) break;
      used += need, ++n;
    }
    m.fit_check.push_back(n);
    m.fit_library.push_back(parts.requests_that_fit(kAllocators[k], m.lengths, M, L, B));
  }
  return m;
}

std::vector<Expectation> judge_fragmentation(const FragmentationMeasured& m) {
  std::vector<Expectation> rows;
  bookkeeping_rows(m, rows);
  utilization_rows(m, rows);
  fit_rows(m, rows);
  return rows;
}

const CheckDef<FragmentationOptions, FragmentationMeasured>& fragmentation_check() {
  static const CheckDef<FragmentationOptions, FragmentationMeasured> def{
      .spec = {.name = kName,
               .order = 450,
               .source = kSource,
               .summary = kSummary,
               .claim_zh = "KV 显存利用率与 batch：按最大长度预分配、按实际长度连续分配、分页",
               .description =
                   "Serves one seeded ShareGPT-like trace (--requests, all queued at t = 0 unless --rate) with "
                   "continuous batching in --kv-tokens slots of KV memory, once with max-length "
                   "preallocation, once with exact-length contiguous reservations (first fit) and once paged "
                   "(--block tokens per block). Prints each allocator's utilization, batch sizes, the largest "
                   "batch each fits, and the per-step memory series (--format csv; --long: 2000 requests, "
                   "every step).",
               .derivation =
                   "A request of final length n = prompt + output holds, at cached length ℓ <= n:\n"
                   "  max-length: L_max slots, of which ℓ hold a token state;\n"
                   "  exact contiguous: n slots (reserved up front), ℓ used;\n"
                   "  paged: ⌈ℓ / b⌉·b slots, so ⌈ℓ / b⌉·b − ℓ <= b − 1 are empty.\n"
                   "Utilization = Σ ℓ / Σ held over the running requests and time. With ShareGPT-like lengths\n"
                   "(mean n ≈ 500) and L_max = 2048 the first is 20–30%, the last above 95% for b = 16. The\n"
                   "batch that fits in M slots is M / L_max against about M / (mean n rounded up to b).\n"
                   "Source: 000 §5.1–5.2, §2.3; 003 part 6; vLLM (arXiv 2309.06180 §1, §4).",
               .claim = "Preallocating the maximum length per request and variable-size contiguous chunks waste "
                        "KV memory (utilization ~70%); paging it in blocks of 16 tokens raises utilization to "
                        "~96% and the active batch 2–4× on the same GPU (000 §5.1–5.2); paging leaves at most "
                        "block − 1 empty slots per sequence.",
               .traits = {.plot = true}},
      .options = {{"--requests", &FragmentationOptions::requests, Allowed::integers(1, kMaxRequests),
                   "Requests in the trace (--long: 2000)"},
                  {"--kv-tokens", &FragmentationOptions::kv_tokens, Allowed::integers(2048, 4'000'000),
                   "KV memory in token slots"},
                  {"--block", &FragmentationOptions::block, Allowed::integers(1, kMaxBlock),
                   "Paged block size in tokens, up to 512"},
                  {"--rate", &FragmentationOptions::rate, Allowed::reals(0.0, 1000.0),
                   "Poisson arrivals/s; 0 = all queued at t = 0"},
                  {"--model", &FragmentationOptions::model, Allowed::any_value(),
                   "Catalogue model whose cache is simulated (N = 7e9)"},
                  {"--gpu", &FragmentationOptions::gpu, Allowed::any_value(), "Catalogue GPU"},
                  {"--long", &FragmentationOptions::long_run, Allowed::any_value(),
                   "2000 requests (unless --requests), every series row, progress bar"}},
      .constraints =
          [](const FragmentationOptions& o) {
            if (o.rate > 0 && o.rate < kMinRate)
              throw InputError(fmt::format("--rate: must be 0 (all queued at t = 0) or in [{:g}, 1000] (got {:g})",
                                           kMinRate, o.rate));
          },
      .measure = [](const FragmentationOptions& o, const RunContext& ctx) { return measure_fragmentation(o, ctx); },
      .judge = judge_fragmentation,
      .present = present};
  return def;
}

Result run_fragmentation(const FragmentationOptions& o, const RunContext& ctx, const FragmentationParts& parts) {
  return run_check(fragmentation_check(), o, ctx, [&parts](const FragmentationOptions& opts, const RunContext& c) {
    return measure_fragmentation(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(fragmentation_check);

}  // namespace kvlab::checks::fragmentation
