// spec-exact: speculative decoding samples exactly from the target (000 §7.6, §7.3; sanity [e] of
// 000 §A.2: "spec decode output vs direct target sampling: TV < 0.01").
//
// Two mini-GPTs over a vocabulary of 8 (target: 2 layers, d_model 16; draft: 1 layer, d_model 8,
// its own seed), a fixed 3-token prompt, --new-tokens tokens per sequence. The exact law of the
// V^N sequences under the target's processed distribution p̃ (temperature --temperature) is
// computed by enumeration. Then --samples sequences each from
//   - direct sampling from the target (the reference),
//   - the speculative loop with a soft draft (same temperature), K = 1 (the bonus token lands
//     inside the N tokens) and K = --k (rollback to a non-empty prefix),
//   - the speculative loop with a greedy draft (one-hot q: exact too, 000 §7.5),
// and for each: TV(empirical, exact) below the Bretagnolle–Huber–Carol bound
// P(‖p̂ − p‖₁ ≥ ε) ≤ 2^M exp(−n ε²/2) (every n, M outcomes), and Pearson's chi-square (cells with
// expected count < 5 pooled) below its critical value; false alarm 1e-4 over all 8 comparisons
// (Bonferroni; the chi-square level is asymptotic). The biased sampler (a greedy draft
// whose soft probabilities are given to the verifier) fails both (unit test).
// Refused (InputError, exit 2): runs too small for the TV bound to be below its range (1), and
// --samples × (--new-tokens + --k) over the work budget.
// On a file pair (--weights target, --draft-weights draft) the same test runs on the
// files' vocabulary (V^N ≤ 2^20 outcomes; prompt "The" for a byte model), with the unlikely
// outcomes pooled into one cell fixed before sampling (spec_exactness_rows); spec-real runs it on
// the trained pair at temperature 1.
//
//   kvlab spec-exact [--samples 5000] [--new-tokens 2] [--k 2] [--temperature 0.1] [--seed 1234]
//   kvlab spec-exact --weights data/weights/target.safetensors --draft-weights data/weights/draft.safetensors
#include "spec_exact.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "model/sequence_model.hpp"
#include "model/work.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"
#include "framework/options.hpp"
#include "reference/sequence_law.hpp"

namespace kvlab::checks {
namespace {

constexpr char kSource[] = "000 §7.6, §7.3, §A.2 [e]";
constexpr int kVocab = 8;
constexpr double kFalseAlarm = 1e-4;
constexpr int kComparisons = 8;  // 4 samplers × (TV, chi-square)
constexpr std::int64_t kMaxSamples = 2'000'000;
// Work budget: one sequence costs about (new_tokens + k) tiny forwards (~5 µs each here);
// samples × (new_tokens + k) <= 3e6 is ~1.5 s per sampler at most.
constexpr std::int64_t kWorkBudget = 3'000'000;
// Enumeration: at most 2^20 outcomes (V = 256 with 2 tokens: 65,536); up to 4096 (V = 8 with 3
// tokens: 512) every outcome is its own cell, above that cells are pooled (see below).
constexpr std::int64_t kMaxOutcomes = std::int64_t{1} << 20;
constexpr std::int64_t kFineOutcomes = 4096;
const std::vector<int> kPrompt{1, 5, 2};

ModelConfig target_config() { return small_spec_target(kVocab); }

ModelConfig draft_config() { return small_spec_draft(kVocab); }

// Outcomes V^n, or -1 above kMaxOutcomes.
std::int64_t outcomes(int vocab, int n) {
  std::int64_t m = 1;
  for (int i = 0; i < n; ++i) {
    m *= vocab;
    if (m > kMaxOutcomes) return -1;
  }
  return m;
}

// Sequence → index in [0, V^N), first token most significant.
std::size_t index_of(const std::vector<int>& s, std::size_t from, int vocab) {
  std::size_t i = 0;
  for (std::size_t j = from; j < s.size(); ++j) i = i * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(s[j]);
  return i;
}

}  // namespace

std::vector<int> spec_exact_text_prompt() { return {'T', 'h', 'e'}; }

template <class T>
void spec_exactness_rows(Result& r, const MiniGPT<T>& target, const MiniGPT<T>& draft, const std::vector<int>& prompt,
                         const SpecExactOptions& o, std::uint64_t seed, double false_alarm, bool with_direct,
                         const std::string& source, const spec::SpecFaults& faults,
                         const std::function<void(std::int64_t)>& on_sample) {
  const int vocab = target.config().vocab_size;
  const std::int64_t m = outcomes(vocab, o.new_tokens);
  if (m < 0)
    throw InputError(fmt::format("--new-tokens: {} tokens over vocab_size {} is more than {} outcomes to enumerate; "
                                 "use fewer tokens", o.new_tokens, vocab, kMaxOutcomes));
  spec::SamplerConfig ts;
  ts.temperature = o.temperature;

  // The exact law of the N new tokens under the target with `ts`, by enumeration
  // (reference/sequence_law.hpp). The cache follows the prefix: rolled back to all of `seq` but its
  // last token, one forward of that token gives p̃(· | seq) (the cached forward equals the full one
  // up to rounding: incremental-vs-full).
  auto cache = target.make_cache(CacheKind::prealloc, static_cast<int>(prompt.size()) + o.new_tokens);
  if (prompt.size() > 1) target.forward(std::span<const int>(prompt).first(prompt.size() - 1), 0, *cache);
  const std::vector<double> law =
      reference::sequence_law(vocab, o.new_tokens, prompt, [&](const std::vector<int>& seq) {
        const int len = static_cast<int>(seq.size());
        cache->truncate(len - 1);
        const Mat<T> lg = target.forward(std::span<const int>(seq).last(1), len - 1, *cache);
        std::vector<double> row(static_cast<std::size_t>(vocab));
        for (int c = 0; c < vocab; ++c) row[static_cast<std::size_t>(c)] = static_cast<double>(lg(lg.rows() - 1, c));
        return spec::process_logits(row, ts);
      });

  // The cells the samples are judged on: every outcome when there are few (V = 8: the random
  // pair); otherwise each outcome expected at least 5 times is its own cell and the rest one pooled
  // cell, a partition fixed from the exact law before any draw. TV over a partition is at most the
  // TV over the outcomes, and the Bretagnolle–Huber–Carol bound holds for any fixed partition with
  // M = its number of cells.
  const double nd = static_cast<double>(o.samples);
  std::int64_t support = 0;
  for (double p : law) support += p > 0.0 ? 1 : 0;
  const bool coarse = m > kFineOutcomes;
  const reference::Cells partition =
      coarse ? reference::pool_rare_outcomes(law, o.samples) : reference::one_cell_per_outcome(law);
  const std::vector<std::int64_t>& cell_of = partition.cell_of;
  const std::vector<double>& cell_law = partition.law;
  const std::int64_t cells = coarse ? static_cast<std::int64_t>(cell_law.size()) : support;
  const int comparisons = with_direct ? kComparisons : kComparisons - 2;
  const double per = false_alarm / comparisons;
  // M = the cells of positive probability (the others are never drawn by a correct sampler).
  const double tv_bound = tv_bound_bhc(cells, o.samples, per);
  if (tv_bound >= 1.0)
    throw InputError(fmt::format("--samples: {} is too few for {} cells: the TV bound {:.3g} covers TV's whole range "
                                 "and the check could not fail", o.samples, cells, tv_bound));

  Table table{"samplers against the exact target law",
              {"sampler", "TV", "TV bound", "χ²", "df", "χ² critical", "α observed", "tokens/step",
               "draft fwd / seq", "target fwd / seq"},
              {}};
  struct Sampler {
    std::string name;
    int kind;  // 0 direct, 1 spec soft draft, 2 spec greedy draft
    int k;
    std::string key;
  };
  // K = 1 puts the bonus token inside the N >= 2 emitted tokens; K = --k exercises rollback to a
  // non-empty accepted prefix (with K >= N the bonus falls in the overshoot and is cut).
  const Sampler samplers[] = {
      {"direct sampling from the target", 0, 0, "direct"},
      {fmt::format("speculative, soft draft (T = {}), K = 1", o.temperature), 1, 1, "spec_soft_k1"},
      {fmt::format("speculative, soft draft (T = {}), K = {}", o.temperature, o.k), 1, o.k, "spec_soft"},
      {fmt::format("speculative, greedy draft (one-hot q), K = {}", o.k), 2, o.k, "spec_greedy"}};
  std::uint64_t stream = 10;
  std::int64_t drawn = 0;  // sequences over every sampler, for on_sample
  // Every sample prefills the same prompt: run it once per model and copy its K/V (the same bits).
  const std::span<const int> head(prompt.data(), prompt.empty() ? 0 : prompt.size() - 1);
  const int max_len = static_cast<int>(prompt.size()) + o.new_tokens + std::max(1, o.k);
  PrefilledSequenceModel<T> target_seq(target, head, max_len), draft_seq(draft, head, max_len);
  for (const auto& s : samplers) {
    Rng rng(spec::derive_seed(seed, stream++));
    if (s.kind == 0 && !with_direct) continue;
    std::vector<std::int64_t> counts(static_cast<std::size_t>(cells), 0);
    spec::SpecStats total;
    spec::SpecConfig sc;
    sc.k = std::max(1, s.k);
    sc.max_new_tokens = o.new_tokens;
    sc.target_sampler = ts;
    sc.draft_sampler = ts;
    if (s.kind == 2) sc.draft_sampler.temperature = 0.0;
    for (std::int64_t i = 0; i < o.samples; ++i) {
      std::vector<int> out;
      if (s.kind == 0) {
        out = spec::autoregressive_decode(target, prompt, o.new_tokens, ts, rng);
      } else {
        target_seq.truncate(0);
        draft_seq.truncate(0);
        auto run = spec::speculative_decode<T>(target_seq, draft_seq, prompt, sc, rng, faults);
        out = std::move(run.tokens);
        total += run.stats;
      }
      ++counts[static_cast<std::size_t>(cell_of[index_of(out, 0, vocab)])];
      if (on_sample) on_sample(++drawn);
    }
    const LawFit f = fit_to_law(counts, cell_law, o.samples, per);
    const std::string cells_said =
        coarse ? fmt::format("M = {} cells (outcomes expected >= 5 times, the rest pooled; of {} outcomes)", cells, m)
               : fmt::format("M = {} outcomes", cells);
    r.expect({"TV(empirical, exact target law): " + s.name, source, "", 0.0, tv_bound,
              fmt::format("Bretagnolle–Huber–Carol, any n: P(TV ≥ t) ≤ 2^M e^(−2nt²), {}, n = {}, false alarm "
                          "{:g}/{}",
                          cells_said, o.samples, false_alarm, comparisons),
              f.tv, std::nullopt, ""});
    r.expect({"Pearson χ² against the exact law: " + s.name, source, "", 0.0, f.critical,
              fmt::format("χ²({:g}) upper quantile at {:.3g} (asymptotic; cells with expected "
                          "count < 5 pooled)",
                          f.df, per),
              f.chi2, std::nullopt, ""});
    if (s.kind == 0)
      table.rows.push_back({s.name, f.tv, tv_bound, f.chi2, f.df, f.critical, std::string("—"),
                            std::string("—"), std::string("—"), std::string("—")});
    else
      table.rows.push_back({s.name, f.tv, tv_bound, f.chi2, f.df, f.critical,
                            total.alpha_observed(), total.tokens_per_step(),
                            static_cast<double>(total.draft_forwards) / nd,
                            static_cast<double>(total.target_forwards) / nd});
    r.metric("tv_" + s.key, f.tv);
    r.metric("chi2_" + s.key, f.chi2);
    if (s.kind != 0) r.metric("alpha_observed_" + s.key, total.alpha_observed());
  }
  r.metric("tv_bound", tv_bound);
  r.tables.push_back(std::move(table));
  const double doc_n = 2.0 * (static_cast<double>(cells) * std::log(2.0) + std::log(1.0 / per)) /
                       (4.0 * 0.01 * 0.01);
  r.notes.push_back(fmt::format(
      "Sanity [e] asks for TV < 0.01. With {} {} the bound used here reaches 0.01 only from "
      "about --samples {:.0f}; at n = {} a correct sampler's TV is typically ~{:.2g}, so the "
      "document's fixed 0.01 is not part of the verdict.",
      cells, coarse ? "cells" : "outcomes", std::ceil(doc_n), o.samples, std::sqrt(static_cast<double>(cells) / (2.0 * std::acos(-1.0) * nd))));
}

template void spec_exactness_rows<float>(Result&, const MiniGPT<float>&, const MiniGPT<float>&, const std::vector<int>&,
                                         const SpecExactOptions&, std::uint64_t, double, bool, const std::string&,
                                         const spec::SpecFaults&, const std::function<void(std::int64_t)>&);
template void spec_exactness_rows<double>(Result&, const MiniGPT<double>&, const MiniGPT<double>&,
                                          const std::vector<int>&, const SpecExactOptions&, std::uint64_t, double,
                                          bool, const std::string&, const spec::SpecFaults&,
                                          const std::function<void(std::int64_t)>&);

namespace {

template <class T>
Result run_impl(const SpecExactOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  const auto [target, draft] = check_pair<T>(target_config(), draft_config(), spec::derive_seed(ctx.seed, 1), ctx,
                                             "spec-exact");
  const int vocab = target.config().vocab_size;
  // The random pair's prompt [1, 5, 2]; a byte-level file pair's "The" (vocab 256: text).
  std::vector<int> prompt = ctx.weights.empty() || vocab != 256 ? kPrompt : spec_exact_text_prompt();
  for (int& t : prompt) t %= vocab;
  const int block = std::min(target.config().block_size, draft.config().block_size);
  if (static_cast<int>(prompt.size()) + o.new_tokens + o.k > block)
    throw InputError(fmt::format("--new-tokens, --k: prompt {} + {} + {} exceeds the pair's block_size {}",
                                 prompt.size(), o.new_tokens, o.k, block));

  Result r;
  r.check = "spec-exact";
  r.source = kSource;
  r.claim = fmt::format(
      "Speculative decoding samples exactly from the target: over {} sequences of {} tokens "
      "(V = {}), the empirical law of the loop's output matches the target's exact law as closely "
      "as direct sampling does (TV below the sampling bound, chi-square not rejecting).",
      o.samples, o.new_tokens, vocab);
  // On a file pair (seconds to minutes) and a terminal: how long, up front, then a progress line.
  Progress progress = ctx.weights.empty() ? Progress("spec-exact", 0, "", nullptr, false)
                                          : Progress::on_stderr("spec-exact", 4.0 * o.samples, "sequences");
  {
    const double len = static_cast<double>(prompt.size()) + o.new_tokens + o.k;
    // Short forwards run at half the rate of a window's: counted twice (as spec-real's estimate).
    progress.announce(fmt::format(
        "about {} on the reference machine (4 samplers × {} sequences of {} tokens on the file pair)",
        duration_text(model_seconds(2.0 * 4.0 * static_cast<double>(o.samples) *
                                    (forward_flops(target.config(), len) + forward_flops(draft.config(), len)))),
        o.samples, o.new_tokens));
  }
  spec_exactness_rows(r, target, draft, prompt, o, ctx.seed, kFalseAlarm, true, kSource, faults,
                      [&progress](std::int64_t n) { progress.update(static_cast<double>(n)); });
  progress.finish();
  if (ctx.weights.empty())
    r.notes.push_back(fmt::format(
        "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)), each sampler its own "
        "stream. Prompt [1, 5, 2]; the exact law is Π p̃(x_i | prefix) over all {}^{} sequences, "
        "one cached forward per prefix.",
        ctx.seed, kVocab, o.new_tokens));
  else
    r.notes.push_back(pair_note(target.config(), draft.config(), ctx) +
                      fmt::format(". Prompt {}; the exact law is Π p̃(x_i | prefix) over all {}^{} sequences; "
                                  "seed {}, each sampler its own stream.",
                                  vocab == 256 ? "\"The\" (bytes)" : "[1, 5, 2] mod vocab", vocab, o.new_tokens,
                                  ctx.seed));
  return r;
}

}  // namespace

Result run_spec_exact(const SpecExactOptions& o, const RunContext& ctx,
                      const spec::SpecFaults& faults) {
  require_range("--samples", o.samples, 1, kMaxSamples);
  require_range("--new-tokens", o.new_tokens, 1, 3);
  require_range("--k", o.k, 1, 4);
  require_finite_range("--temperature", o.temperature, 0.01, 10.0);
  const double work = static_cast<double>(o.samples) * (o.new_tokens + o.k);
  if (work > static_cast<double>(kWorkBudget))
    throw InputError(fmt::format(
        "--samples, --new-tokens, --k: --samples × (--new-tokens + --k) = {:.3g} is over the work "
        "budget of {} (about 1.5 s per sampler here)",
        work, kWorkBudget));
  // The TV bound must be below 1 (TV's whole range) for the comparison to be able to fail.
  const double per = kFalseAlarm / kComparisons;
  const double l = static_cast<double>(outcomes(kVocab, o.new_tokens)) * std::log(2.0) + std::log(1.0 / per);
  const auto min_n = static_cast<std::int64_t>(std::floor(l / 2.0)) + 1;  // 0.5 sqrt(2L/n) < 1
  if (ctx.weights.empty() && o.samples < min_n)
    throw InputError(fmt::format(
        "--samples: must be at least {} for --new-tokens {} (got {}): below, the TV bound covers "
        "TV's whole range and the check could not fail",
        min_n, o.new_tokens, o.samples));
  return with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, faults); });
}

namespace {

class SpecExactCheck final : public Check {
 public:
  std::string name() const override { return "spec-exact"; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "speculative decoding's output law = the target's (V = 8): TV bound and chi-square";
  }
  std::string derivation() const override {
    return "A step emits accepted drafts, then one residual or bonus token. By spec-residual the first token\n"
           "emitted has the target's law p(· | prefix); given it, the next emitted token is again either an\n"
           "accepted draft or a residual sample at the next position, with law p(· | prefix, x) by the same\n"
           "argument, and the bonus token is sampled from the target directly. By induction over positions,\n"
           "the generated sequence has exactly the target's law, whatever the draft.\n"
           "The check enumerates that law for short sequences on a small vocabulary and compares the loop's\n"
           "observed frequencies with it: TV below a bound derived from the sample size, and a chi-square\n"
           "test that does not reject.\n"
           "Source: 000 §7.6, sanity [e].\n";
  }
  std::string description() const override {
    return "Target and draft mini-GPTs over V = 8: the exact law of --new-tokens tokens by\n"
           "enumeration, against --samples sequences from direct sampling, the loop with a soft\n"
           "draft and the loop with a greedy draft: TV below the Bretagnolle–Huber–Carol bound\n"
           "and Pearson's chi-square below its critical value (family false alarm 1e-4).\n"
           "--samples × (--new-tokens + --k) at most 3e6. --weights T --draft-weights D: the same\n"
           "test on a file pair (e.g. the trained pair of data/weights), unlikely outcomes pooled.";
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  bool uses_draft_weights() const override { return true; }
  void bind(OptionSet& sub) override {
    sub.add_option("--samples", opts_.samples, "Sequences per sampler (default 5000)")
        ->check(IntRange(1, kMaxSamples));
    sub.add_option("--new-tokens", opts_.new_tokens, "Tokens per sequence, 1-3 (default 2)")
        ->check(IntRange(1, 3));
    sub.add_option("--k", opts_.k, "Draft tokens per step, 1-4 (default 2)")->check(IntRange(1, 4));
    sub.add_option("--temperature", opts_.temperature, "Sampling temperature (default 0.1)")
        ->check(FiniteRange(0.01, 10.0));
  }
  Result run(const RunContext& ctx) override { return run_spec_exact(opts_, ctx); }

 private:
  SpecExactOptions opts_;
};

}  // namespace

KVLAB_REGISTER_CHECK(220, SpecExactCheck);

}  // namespace kvlab::checks
