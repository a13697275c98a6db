// The exactness test on any pair (support/spec_exactness.hpp).
#include "support/spec_exactness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/sequence_model.hpp"
#include "reference/sequence_law.hpp"
#include "spec/monte_carlo.hpp"

namespace kvlab::checks {
namespace {

// Enumeration: at most 2^20 outcomes (V = 256 with 2 tokens: 65,536); up to 4096 (V = 8 with 3
// tokens: 512) every outcome is its own cell, above that cells are pooled (see below).
constexpr std::int64_t kMaxOutcomes = std::int64_t{1} << 20;
constexpr std::int64_t kFineOutcomes = 4096;

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
std::size_t index_of(const std::vector<int>& s, int vocab) {
  std::size_t i = 0;
  for (int t : s) i = i * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(t);
  return i;
}

// The exact law of the N new tokens under the target with `ts`, by enumeration
// (reference/sequence_law.hpp). The cache follows the prefix: rolled back to all of `seq` but its
// last token, one forward of that token gives p̃(· | seq) (the cached forward equals the full one
// up to rounding: incremental-vs-full).
template <class T>
std::vector<double> exact_law(const MiniGPT<T>& target, const std::vector<int>& prompt, int new_tokens,
                              const spec::SamplerConfig& ts) {
  const int vocab = target.config().vocab_size;
  auto cache = target.make_cache(CacheKind::prealloc, static_cast<int>(prompt.size()) + new_tokens);
  if (prompt.size() > 1) target.forward(std::span<const int>(prompt).first(prompt.size() - 1), 0, *cache);
  return reference::sequence_law(vocab, new_tokens, prompt, [&](const std::vector<int>& seq) {
    const int len = static_cast<int>(seq.size());
    cache->truncate(len - 1);
    const Mat<T> lg = target.forward(std::span<const int>(seq).last(1), len - 1, *cache);
    std::vector<double> row(static_cast<std::size_t>(vocab));
    for (int c = 0; c < vocab; ++c) row[static_cast<std::size_t>(c)] = static_cast<double>(lg(lg.rows() - 1, c));
    return spec::process_logits(row, ts);
  });
}

}  // namespace

double ExactnessMeasured::tv_bound() const { return tv_bound_bhc(cells, options.samples, false_alarm / comparisons()); }

template <class T>
ExactnessMeasured measure_exactness(const MiniGPT<T>& target, const MiniGPT<T>& draft, const std::vector<int>& prompt,
                                    const ExactnessOptions& o, std::uint64_t seed, double false_alarm,
                                    bool with_direct, const spec::SpecFaults& faults,
                                    const std::function<void(std::int64_t)>& on_sample) {
  const int vocab = target.config().vocab_size;
  ExactnessMeasured m{.options = o, .outcomes = outcomes(vocab, o.new_tokens), .false_alarm = false_alarm,
                      .with_direct = with_direct};
  if (m.outcomes < 0)
    throw InputError(fmt::format("--new-tokens: {} tokens over vocab_size {} is more than {} outcomes to enumerate; "
                                 "use fewer tokens", o.new_tokens, vocab, kMaxOutcomes));
  spec::SamplerConfig ts;
  ts.temperature = o.temperature;
  const std::vector<double> law = exact_law(target, prompt, o.new_tokens, ts);
  // The cells the samples are judged on: every outcome when there are few (V = 8: the random
  // pair); otherwise each outcome expected at least 5 times is its own cell and the rest one pooled
  // cell, a partition fixed from the exact law before any draw. TV over a partition is at most the
  // TV over the outcomes, and the Bretagnolle–Huber–Carol bound holds for any fixed partition with
  // M = its number of cells (M = the cells of positive probability: a correct sampler never draws
  // the others).
  m.coarse = m.outcomes > kFineOutcomes;
  const reference::Cells partition =
      m.coarse ? reference::pool_rare_outcomes(law, o.samples) : reference::one_cell_per_outcome(law);
  for (double p : law) m.cells += p > 0.0 ? 1 : 0;
  if (m.coarse) m.cells = static_cast<std::int64_t>(partition.law.size());
  if (m.tv_bound() >= 1.0)
    throw InputError(fmt::format("{}: {} is too few for {} cells: the TV bound {:.3g} covers TV's whole range "
                                 "and the check could not fail", o.samples_flag, o.samples, m.cells, m.tv_bound()));
  // K = 1 puts the bonus token inside the N >= 2 emitted tokens; K = --k exercises rollback to a
  // non-empty accepted prefix (with K >= N the bonus falls in the overshoot and is cut).
  const struct {
    std::string name;
    int kind;  // 0 direct, 1 spec soft draft, 2 spec greedy draft
    int k;
    std::string key;
  } samplers[] = {{"direct sampling from the target", 0, 0, "direct"},
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
    ExactnessSampler out{.name = s.name, .key = s.key, .direct = s.kind == 0};
    std::vector<std::int64_t> counts(partition.law.size(), 0);
    spec::SpecConfig sc;
    sc.k = std::max(1, s.k);
    sc.max_new_tokens = o.new_tokens;
    sc.target_sampler = ts;
    sc.draft_sampler = ts;
    if (s.kind == 2) sc.draft_sampler.temperature = 0.0;
    for (std::int64_t i = 0; i < o.samples; ++i) {
      std::vector<int> tokens;
      if (s.kind == 0) {
        tokens = spec::autoregressive_decode(target, prompt, o.new_tokens, ts, rng);
      } else {
        target_seq.truncate(0);
        draft_seq.truncate(0);
        auto run = spec::speculative_decode<T>(target_seq, draft_seq, prompt, sc, rng, faults);
        tokens = std::move(run.tokens);
        out.stats += run.stats;
      }
      ++counts[static_cast<std::size_t>(partition.cell_of[index_of(tokens, vocab)])];
      if (on_sample) on_sample(++drawn);
    }
    out.fit = fit_to_law(counts, partition.law, o.samples, false_alarm / m.comparisons());
    m.samplers.push_back(std::move(out));
  }
  return m;
}

template ExactnessMeasured measure_exactness<float>(const MiniGPT<float>&, const MiniGPT<float>&,
                                                    const std::vector<int>&, const ExactnessOptions&, std::uint64_t,
                                                    double, bool, const spec::SpecFaults&,
                                                    const std::function<void(std::int64_t)>&);
template ExactnessMeasured measure_exactness<double>(const MiniGPT<double>&, const MiniGPT<double>&,
                                                     const std::vector<int>&, const ExactnessOptions&, std::uint64_t,
                                                     double, bool, const spec::SpecFaults&,
                                                     const std::function<void(std::int64_t)>&);

std::vector<Expectation> judge_exactness(const ExactnessMeasured& m, const std::string& source) {
  const double per = m.false_alarm / m.comparisons();
  const std::string cells_said =
      m.coarse ? fmt::format("M = {} cells (outcomes expected >= 5 times, the rest pooled; of {} outcomes)", m.cells,
                             m.outcomes)
               : fmt::format("M = {} outcomes", m.cells);
  std::vector<Expectation> rows;
  for (const ExactnessSampler& s : m.samplers) {
    rows.push_back({"TV(empirical, exact target law): " + s.name, source, "", 0.0, m.tv_bound(),
                    fmt::format("Bretagnolle–Huber–Carol, any n: P(TV ≥ t) ≤ 2^M e^(−2nt²), {}, n = {}, false alarm "
                                "{:g}/{}",
                                cells_said, m.options.samples, m.false_alarm, m.comparisons()),
                    s.fit.tv, std::nullopt, ""});
    rows.push_back({"Pearson χ² against the exact law: " + s.name, source, "", 0.0, s.fit.critical,
                    fmt::format("χ²({:g}) upper quantile at {:.3g} (asymptotic; cells with expected "
                                "count < 5 pooled)",
                                s.fit.df, per),
                    s.fit.chi2, std::nullopt, ""});
  }
  return rows;
}

void present_exactness(const ExactnessMeasured& m, Result& r) {
  const double nd = static_cast<double>(m.options.samples);
  Table table{"samplers against the exact target law",
              {"sampler", "TV", "TV bound", "χ²", "df", "χ² critical", "α observed", "tokens/step",
               "draft fwd / seq", "target fwd / seq"},
              {}};
  for (const ExactnessSampler& s : m.samplers) {
    const LawFit& f = s.fit;
    if (s.direct)
      table.rows.push_back({s.name, f.tv, m.tv_bound(), f.chi2, f.df, f.critical, std::string("—"),
                            std::string("—"), std::string("—"), std::string("—")});
    else
      table.rows.push_back({s.name, f.tv, m.tv_bound(), f.chi2, f.df, f.critical, s.stats.alpha_observed(),
                            s.stats.tokens_per_step(), static_cast<double>(s.stats.draft_forwards) / nd,
                            static_cast<double>(s.stats.target_forwards) / nd});
    r.metric("tv_" + s.key, f.tv);
    r.metric("chi2_" + s.key, f.chi2);
    if (!s.direct) r.metric("alpha_observed_" + s.key, s.stats.alpha_observed());
  }
  r.metric("tv_bound", m.tv_bound());
  r.tables.push_back(std::move(table));
  const double per = m.false_alarm / m.comparisons();
  const double doc_n = 2.0 * (static_cast<double>(m.cells) * std::log(2.0) + std::log(1.0 / per)) / (4.0 * 0.01 * 0.01);
  r.notes.push_back(fmt::format(
      "Sanity [e] asks for TV < 0.01. With {} {} the bound used here reaches 0.01 only from "
      "about {} {:.0f}; at n = {} a correct sampler's TV is typically ~{:.2g}, so the "
      "document's fixed 0.01 is not part of the verdict.",
      m.cells, m.coarse ? "cells" : "outcomes", m.options.samples_flag, std::ceil(doc_n), m.options.samples,
      std::sqrt(static_cast<double>(m.cells) / (2.0 * std::acos(-1.0) * nd))));
}

}  // namespace kvlab::checks
