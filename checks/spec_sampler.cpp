// spec-sampler: with temperature, top-k and top-p on the target, speculative decoding emits exactly
// the processed p̃ whatever the draft's sampler (000 §7.5; Leviathan et al. 2023, arXiv:2211.17192,
// §2.3, Appendix A.5): the one-step law in closed form, the loop's 2-token law against the exact
// one (TV, χ²) and α observed against the exact α (Freedman), for five draft samplers.
#include "spec_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/martingale.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/monte_carlo.hpp"
#include "spec/step_law.hpp"
#include "support/model_setup.hpp"
#include "reference/sequence_law.hpp"

namespace kvlab::checks::spec_sampler {
namespace {

constexpr char kSource[] = "000 §7.5";
constexpr int kVocab = 8;
constexpr int kNewTokens = 2;
constexpr int kDraftK = 2;
constexpr double kFalseAlarm = 1e-4;
constexpr int kDrafts = 5;
constexpr int kStatRows = 3 * kDrafts;  // TV, χ², α per draft sampler
constexpr double kPer = kFalseAlarm / kStatRows;
constexpr std::int64_t kMaxSamples = 20'000;  // ~24 µs a sequence: ≤ 2.5 s for the five samplers here
const std::vector<int> kPrompt{1, 5, 2};

template <class T>
std::vector<double> last_logits(const MiniGPT<T>& m, const std::vector<int>& seq) {
  auto cache = m.make_cache(CacheKind::prealloc, static_cast<int>(seq.size()));
  const Mat<T> lg = m.forward(seq, 0, *cache);
  std::vector<double> row(kVocab);
  for (int c = 0; c < kVocab; ++c) row[static_cast<std::size_t>(c)] = lg(lg.rows() - 1, c);
  return row;
}

// The exact law of the 2 new tokens under p̃ (first token most significant), by enumeration
// (reference/sequence_law.hpp), each next-token law from a full forward of the prefix.
template <class T>
std::vector<double> exact_law(const MiniGPT<T>& m, const spec::SamplerConfig& s) {
  return reference::sequence_law(kVocab, 2, kPrompt, [&](const std::vector<int>& seq) {
    return spec::process_logits(last_logits(m, seq), s);
  });
}

spec::SamplerConfig target_sampler(const SpecSamplerOptions& o) {
  spec::SamplerConfig ts;
  ts.temperature = o.temperature;
  ts.top_k = o.top_k;
  ts.top_p = o.top_p;
  return ts;
}

spec::SamplerConfig at_temperature(double t) {
  spec::SamplerConfig s;
  s.temperature = t;
  return s;
}

// spec-residual's identity bound |Σp − 1| + (2V + 5)u, plus |Σq − 1| + V·u: the reject mass here
// is Σ_x q(x)(1 − a(x)), a V-term sum, rather than 1 − α.
double first_bound(const SpecSamplerMeasured& m, const SamplerDraft& d) {
  return std::abs(spec::sum_deviation(m.p_tilde)) + std::abs(d.q_sum_deviation) +
         (3.0 * kVocab + 5.0) * unit_roundoff(Dtype::f64);
}

double tv_bound(const SpecSamplerMeasured& m) { return tv_bound_bhc(m.support, m.options.samples, kPer); }

// Freedman's radius for α observed, over the verified positions (at most 2 + K per sequence).
double alpha_radius(const SpecSamplerMeasured& m, const SamplerDraft& d) {
  const double max_var = static_cast<double>(m.options.samples) * (kNewTokens + kDraftK) / 4.0;
  return freedman_radius(d.alpha_variation, 1.0, max_var, kPer) /
         static_cast<double>(std::max<std::int64_t>(d.evaluated, 1));
}

// The loop with draft sampler `d.s`: counts of the V² sequences and the α bookkeeping into `out`.
template <class T>
void run_loop(const MiniGPT<T>& target, const MiniGPT<T>& draft, const SpecSamplerOptions& o,
              const spec::SamplerConfig& ds, Rng& rng, const std::vector<double>& law,
              const SpecSamplerParts& parts, SamplerDraft& out) {
  std::vector<std::int64_t> counts(law.size(), 0);
  spec::SpecConfig sc;
  sc.k = kDraftK;
  sc.max_new_tokens = kNewTokens;
  sc.target_sampler = target_sampler(o);
  sc.draft_sampler = ds;
  sc.on_step = [&](const spec::StepTrace& s) {
    const std::size_t verified = std::min(s.accepted + 1, s.drafts.size());
    for (std::size_t j = 0; j < verified; ++j) {
      const double a = spec::acceptance_rate(s.target[j], s.draft[j]);
      out.alpha_exact_sum += a, out.alpha_variation += a * (1.0 - a);
    }
  };
  spec::SpecStats total;
  for (std::int64_t n = 0; n < o.samples; ++n) {
    const auto run = spec::speculative_decode(target, draft, kPrompt, sc, rng, parts.faults);
    ++counts[static_cast<std::size_t>(run.tokens[0] * kVocab + run.tokens[1])];
    total += run.stats;
  }
  out.fit = fit_to_law(counts, law, o.samples, kPer);
  out.evaluated = total.evaluated, out.accepted = total.accepted, out.steps = total.steps, out.emitted = total.emitted;
}

template <class T>
SpecSamplerMeasured measure_impl(const SpecSamplerOptions& o, const RunContext& ctx, const SpecSamplerParts& parts) {
  const MiniGPT<T> target(small_spec_target(kVocab), ctx.seed);
  const MiniGPT<T> draft(small_spec_draft(kVocab), spec::derive_seed(ctx.seed, 1));
  const spec::SamplerConfig ts = target_sampler(o);
  const struct {
    std::string name, key;
    spec::SamplerConfig s;
  } drafts[kDrafts] = {{"greedy (one-hot q̃)", "greedy", at_temperature(0.0)},
                       {"temperature 0.05", "t005", at_temperature(0.05)},
                       {fmt::format("temperature {:g} (target's, no cuts)", o.temperature), "t_same",
                        at_temperature(o.temperature)},
                       {"temperature 1", "t1", at_temperature(1.0)},
                       {"the target's sampler", "same", ts}};
  SpecSamplerMeasured m{.options = o, .context = ctx};
  const auto t_logits = last_logits(target, kPrompt), d_logits = last_logits(draft, kPrompt);
  m.p_tilde = spec::process_logits(t_logits, ts);
  m.p_raw = spec::process_logits(t_logits, spec::SamplerConfig{});  // temperature 1, no cuts
  const auto p_verifier = parts.verifier_target(t_logits, ts);
  const auto law = exact_law(target, ts);
  for (double p : law) m.support += p > 0.0 ? 1 : 0;
  std::uint64_t stream = 10;
  for (const auto& ds : drafts) {
    SamplerDraft d{.name = ds.name, .key = ds.key};
    const auto q = spec::process_logits(d_logits, ds.s);
    const auto one_step = spec::step_output_law(p_verifier, q, q);
    for (std::size_t x = 0; x < one_step.size(); ++x) {
      const double e = std::abs(one_step[x] - m.p_tilde[x]);
      d.first_law_error = std::isnan(e) ? INFINITY : std::max(d.first_law_error, e);
    }
    d.q_sum_deviation = spec::sum_deviation(q);
    d.alpha_first = spec::acceptance_rate(m.p_tilde, q);
    Rng rng(spec::derive_seed(ctx.seed, stream++));
    run_loop(target, draft, o, ds.s, rng, law, parts, d);
    m.drafts.push_back(std::move(d));
  }
  return m;
}

void present(const SpecSamplerMeasured& m, Result& r) {
  const SpecSamplerOptions& o = m.options;
  Table first{"first position after the prompt: p̃, and each draft's q̃, α and one-step law",
              {"draft sampler", "α = Σ min(p̃, q̃)", "max |law − p̃|", "bound"},
              {}};
  Table dists{"first position: the target's p (raw softmax) and p̃, token by token", {"token", "p (raw)", "p̃ (processed)"}, {}};
  Table loop{"the loop (K = 2, 2 tokens) against the exact law under p̃",
             {"draft sampler", "TV", "TV bound", "χ²", "df", "χ² critical", "α observed",
              "α exact (verified)", "α bound", "tokens/step"},
             {}};
  for (const SamplerDraft& d : m.drafts) {
    first.rows.push_back({d.name, d.alpha_first, d.first_law_error, first_bound(m, d)});
    loop.rows.push_back({d.name, d.fit.tv, tv_bound(m), d.fit.chi2, d.fit.df, d.fit.critical, d.alpha_observed(),
                         d.alpha_exact(), alpha_radius(m, d),
                         static_cast<double>(d.emitted) / static_cast<double>(std::max<std::int64_t>(d.steps, 1))});
    r.metric("tv_" + d.key, d.fit.tv);
    r.metric("alpha_observed_" + d.key, d.alpha_observed());
    r.metric("alpha_exact_" + d.key, d.alpha_exact());
    r.metric("alpha_first_" + d.key, d.alpha_first);
  }
  for (int x = 0; x < kVocab; ++x)
    dists.rows.push_back({std::int64_t{x}, m.p_raw[static_cast<std::size_t>(x)], m.p_tilde[static_cast<std::size_t>(x)]});
  std::int64_t kept = 0;
  for (double x : m.p_tilde) kept += x > 0.0 ? 1 : 0;
  r.metric("tv_bound", tv_bound(m));
  r.metric_exact("target_tokens_kept_first", static_cast<std::uint64_t>(kept));
  r.tables.push_back(std::move(first));
  r.tables.push_back(std::move(dists));
  r.tables.push_back(std::move(loop));
  const auto lowest = std::min_element(m.drafts.begin(), m.drafts.end(), [](const auto& a, const auto& b) {
    return a.alpha_first < b.alpha_first;
  });
  r.notes.push_back(fmt::format(
      "At the first position the target keeps {} of {} tokens after temperature {:g}, top-k {}, "
      "top-p {:g}. α there: greedy draft {:.4f}, the target's own sampler {:.4f}; the lowest is "
      "the {} draft. A greedy draft proposes its argmax with q̃ = 1, accepted with p̃(argmax), so "
      "α = p̃(argmax q) ≤ max p̃: exact, but every rejection costs a resample.",
      kept, kVocab, o.temperature, o.top_k, o.top_p, m.drafts[0].alpha_first, m.drafts[4].alpha_first, lowest->name));
  r.notes.push_back(fmt::format(
      "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)), each draft sampler its "
      "own stream; prompt [1, 5, 2]; the exact law is p̃(x₁)·p̃(x₂ | x₁) over all {} sequences, "
      "each prefix through a fresh full forward.",
      m.context.seed, kVocab * kVocab));
}

}  // namespace

double SamplerDraft::alpha_observed() const {
  return static_cast<double>(accepted) / static_cast<double>(std::max<std::int64_t>(evaluated, 1));
}
double SamplerDraft::alpha_exact() const {
  return alpha_exact_sum / static_cast<double>(std::max<std::int64_t>(evaluated, 1));
}

SpecSamplerMeasured measure_spec_sampler(const SpecSamplerOptions& o, const RunContext& ctx,
                                         const SpecSamplerParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts); });
}

std::vector<Expectation> judge_spec_sampler(const SpecSamplerMeasured& m) {
  std::vector<Expectation> rows;
  for (const SamplerDraft& d : m.drafts)
    rows.push_back({fmt::format("one-step law − p̃ (closed form, max over x), draft {}", d.name), kSource, "", 0.0,
                    first_bound(m, d),
                    "float64: |Σp̃ − 1| + |Σq̃ − 1| + (3V + 5)·u (spec-residual's identity bound plus the "
                    "V-term reject sum)",
                    d.first_law_error, std::nullopt, ""});
  for (const SamplerDraft& d : m.drafts) {
    rows.push_back({"TV(empirical, exact law under p̃): draft " + d.name, kSource, "", 0.0, tv_bound(m),
                    fmt::format("Bretagnolle–Huber–Carol, any n: P(TV ≥ t) ≤ 2^M e^(−2nt²), M = {} "
                                "sequences, n = {}, false alarm {:g}/{}",
                                m.support, m.options.samples, kFalseAlarm, kStatRows),
                    d.fit.tv, std::nullopt, ""});
    rows.push_back({"Pearson χ² against the exact law under p̃: draft " + d.name, kSource, "", 0.0, d.fit.critical,
                    fmt::format("χ²({:g}) upper quantile at {:.3g} (asymptotic; cells with expected "
                                "count < 5 pooled)",
                                d.fit.df, kPer),
                    d.fit.chi2, std::nullopt, ""});
    rows.push_back({"α observed vs exact α of the verified positions: draft " + d.name, "000 §7.2, §7.5", "",
                    d.alpha_exact(), alpha_radius(m, d),
                    fmt::format("Freedman (accepted − Σ a is a martingale, increments in [−1, 1], "
                                "Σ a(1 − a) = {:.3g}), false alarm {:g}/{}; ± = t / {} verified",
                                d.alpha_variation, kFalseAlarm, kStatRows, d.evaluated),
                    d.alpha_observed(), std::nullopt, ""});
  }
  return rows;
}

const CheckDef<SpecSamplerOptions, SpecSamplerMeasured>& spec_sampler_check() {
  using O = SpecSamplerOptions;
  static const CheckDef<O, SpecSamplerMeasured> def{
      .spec = {.name = "spec-sampler",
               .order = 225,
               .source = kSource,
               .summary = "temperature/top-k/top-p on the target: the output is p̃ for any draft sampler; a "
                          "greedy draft lowers α",
               .claim_zh = "目标模型上的温度/top-k/top-p：任何草稿采样器下输出都是 p̃；贪心草稿降低 α",
               .description =
                   "Target and draft mini-GPTs over V = 8, the target sampling with --temperature,\n"
                   "--top-k, --top-p (p̃), five draft samplers (greedy, T 0.05, the target's T, T 1, the\n"
                   "target's sampler): the one-step law in closed form equals p̃; the loop's 2-token\n"
                   "sequences (K = 2, --samples each) match the exact law under p̃ (TV bound, χ²); α\n"
                   "observed matches the exact α of the verified positions (Freedman bound).",
               .derivation =
                   "Rejection sampling never looks at how p̃ was made: for any target law p̃ and any\n"
                   "proposal q̃, accept x ~ q̃ with min(1, p̃(x)/q̃(x)), else resample from\n"
                   "max(0, p̃ − q̃)/(1 − α): P(X = x) = min(p̃, q̃) + max(0, p̃ − q̃) = p̃(x). So the\n"
                   "verifier must use the processed p̃ (temperature, top-k, top-p) in both places; a\n"
                   "greedy draft is the one-hot q̃ = δ_argmax, still a valid proposal, with\n"
                   "α = Σ min(p̃, δ) = p̃(argmax q): usually below Σ min(p̃, q̃) of a matched sampler.\n"
                   "Source: 000 §7.5 (and §7.2–7.3).",
               .traits = {.dtype = true,
                          .weights_refusal =
                              "it enumerates the sampled law over a vocabulary of 8, where top-k/top-p cut-offs and "
                              "its bounds are sized; spec-exact runs the distribution test on a file pair"}},
      .options = {{"--samples", &O::samples, Allowed::integers(1, kMaxSamples), "Sequences per draft sampler"},
                  {"--temperature", &O::temperature, Allowed::reals(0.01, 10.0), "Target's temperature"},
                  {"--top-k", &O::top_k, Allowed::integers(0, kVocab), "Target's top-k, 0 = off"},
                  {"--top-p", &O::top_p, Allowed::reals(0.01, 1.0), "Target's top-p, 1 = off"}},
      // The TV bound must be below 1 for the comparison to be able to fail; the support is at most V².
      .constraints =
          [](const O& o) {
            if (tv_bound_bhc(kVocab * kVocab, o.samples, kPer) < 1.0) return;
            const double l = kVocab * kVocab * std::log(2.0) + std::log(1.0 / kPer);
            throw InputError(fmt::format(
                "--samples: must be at least {} (got {}): below, the TV bound covers TV's whole range and "
                "the check could not fail",
                static_cast<std::int64_t>(std::floor(l / 2.0)) + 1, o.samples));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_spec_sampler(o, ctx); },
      .judge = judge_spec_sampler,
      .present = present,
      .claim = [](const SpecSamplerMeasured& m) {
        return fmt::format(
            "With temperature {:g}, top-k {}, top-p {:g} on the target, speculative decoding that "
            "accepts and resamples with the processed p̃ emits exactly p̃, whatever valid q̃ the draft "
            "proposes from; a greedy draft stays exact, but α drops.",
            m.options.temperature, m.options.top_k, m.options.top_p);
      }};
  return def;
}

Result run_spec_sampler(const SpecSamplerOptions& o, const RunContext& ctx, const SpecSamplerParts& parts) {
  return run_check(spec_sampler_check(), o, ctx, [&parts](const SpecSamplerOptions& opts, const RunContext& c) {
    return measure_spec_sampler(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(spec_sampler_check);

}  // namespace kvlab::checks::spec_sampler
