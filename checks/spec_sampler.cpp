// spec-sampler: with temperature, top-k and top-p on the target, speculative decoding emits exactly
// the processed target distribution p̃, whatever the draft's own sampler; a greedy (one-hot) draft
// is still exact, but α drops (000 §7.5; Leviathan et al. 2023, arXiv:2211.17192, §2.3 and
// Appendix A.5 on sampling settings).
//
// Two mini-GPTs over V = 8 (target: 2 layers, d_model 16; draft: 1 layer, d_model 8, its own
// seed), prompt [1, 5, 2]. The target samples with --temperature, --top-k, --top-p (p̃); five
// draft samplers: greedy (one-hot q̃), temperature 0.05, the target's temperature without the
// cuts, temperature 1, and the target's full sampler. Judged:
//   - closed form (spec/step_law): the law of the token one step emits at the first position,
//     with the verifier using p̃ for acceptance and residual, equals p̃ for every draft sampler
//     (float64 rounding bound). Using the raw softmax p instead of p̃ gives p, not p̃ (unit test);
//   - the real loop (K = 2, 2 tokens per sequence, --samples sequences per draft sampler): the
//     empirical law of the V² sequences against the exact law under p̃ (enumeration): TV below the
//     Bretagnolle–Huber–Carol bound and Pearson's χ² below its critical value;
//   - α observed in the loop against the exact α of the positions it verified (Σ min(p̃, q̃) of
//     each), Freedman's martingale bound;
// family false alarm 1e-4, Bonferroni over the 15 statistical rows. Shown: α at the first
// position and in the loop for each draft sampler (the greedy draft's is the lowest or near it).
// Refused (InputError, exit 2): --samples too small for the TV bound to be below 1.
//
//   kvlab spec-sampler [--samples 1200] [--temperature 0.1] [--top-k 6] [--top-p 0.9] [--seed 1234]
#include "spec_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/martingale.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/monte_carlo.hpp"
#include "spec/step_law.hpp"
#include "support/model_setup.hpp"
#include "framework/options.hpp"
#include "reference/sequence_law.hpp"

namespace kvlab::checks {
namespace {

constexpr char kSource[] = "000 §7.5";
constexpr int kVocab = 8;
constexpr int kNewTokens = 2;
constexpr int kDraftK = 2;
constexpr double kFalseAlarm = 1e-4;
constexpr int kDrafts = 5;
constexpr int kStatRows = 3 * kDrafts;  // TV, χ², α per draft sampler
constexpr std::int64_t kMaxSamples = 20'000;  // ~24 µs a sequence: ≤ 2.5 s for the five samplers here
const std::vector<int> kPrompt{1, 5, 2};

ModelConfig target_config() { return small_spec_target(kVocab); }

ModelConfig draft_config() { return small_spec_draft(kVocab); }

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

template <class T>
Result run_impl(const SpecSamplerOptions& o, const RunContext& ctx, const SpecSamplerParts& parts) {
  const MiniGPT<T> target(target_config(), ctx.seed);
  const MiniGPT<T> draft(draft_config(), spec::derive_seed(ctx.seed, 1));
  spec::SamplerConfig ts;
  ts.temperature = o.temperature;
  ts.top_k = o.top_k;
  ts.top_p = o.top_p;
  spec::SamplerConfig raw;  // temperature 1, no cuts: the unprocessed softmax

  struct DraftSampler {
    std::string name, key;
    spec::SamplerConfig s;
  };
  spec::SamplerConfig greedy, cold, same_t, hot;
  greedy.temperature = 0.0;
  cold.temperature = 0.05;
  same_t.temperature = o.temperature;
  hot.temperature = 1.0;
  const DraftSampler drafts[kDrafts] = {
      {"greedy (one-hot q̃)", "greedy", greedy},
      {"temperature 0.05", "t005", cold},
      {fmt::format("temperature {:g} (target's, no cuts)", o.temperature), "t_same", same_t},
      {"temperature 1", "t1", hot},
      {"the target's sampler", "same", ts}};

  Result r;
  r.check = "spec-sampler";
  r.source = kSource;
  r.claim = fmt::format(
      "With temperature {:g}, top-k {}, top-p {:g} on the target, speculative decoding that "
      "accepts and resamples with the processed p̃ emits exactly p̃, whatever valid q̃ the draft "
      "proposes from; a greedy draft stays exact, but α drops.",
      o.temperature, o.top_k, o.top_p);

  // ---- closed form at the first position ----
  const auto t_logits = last_logits(target, kPrompt);
  const auto d_logits = last_logits(draft, kPrompt);
  const auto p_tilde = spec::process_logits(t_logits, ts);
  const auto p_raw = spec::process_logits(t_logits, raw);
  const auto p_verifier = parts.verifier_target(t_logits, ts);
  std::int64_t kept = 0;
  for (double x : p_tilde) kept += x > 0.0 ? 1 : 0;
  const double u = unit_roundoff(Dtype::f64);
  Table first{"first position after the prompt: p̃, and each draft's q̃, α and one-step law",
              {"draft sampler", "α = Σ min(p̃, q̃)", "max |law − p̃|", "bound"},
              {}};
  std::vector<double> alpha_first(kDrafts);
  for (int i = 0; i < kDrafts; ++i) {
    const auto& d = drafts[i];
    const auto q = spec::process_logits(d_logits, d.s);
    const auto law = spec::step_output_law(p_verifier, q, q);
    double worst = 0.0;
    for (std::size_t x = 0; x < law.size(); ++x) {
      const double e = std::abs(law[x] - p_tilde[x]);
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
    // spec-residual's identity bound |Σp − 1| + (2V + 5)u, plus |Σq − 1| + V·u: the reject mass
    // here is Σ_x q(x)(1 − a(x)), a V-term sum, rather than 1 − α.
    const double bound = std::abs(spec::sum_deviation(p_tilde)) + std::abs(spec::sum_deviation(q)) +
                         (3.0 * kVocab + 5.0) * u;
    alpha_first[static_cast<std::size_t>(i)] = spec::acceptance_rate(p_tilde, q);
    r.expect({fmt::format("one-step law − p̃ (closed form, max over x), draft {}", d.name), kSource,
              "", 0.0, bound,
              "float64: |Σp̃ − 1| + |Σq̃ − 1| + (3V + 5)·u (spec-residual's identity bound plus the "
              "V-term reject sum)",
              worst, std::nullopt, ""});
    first.rows.push_back({d.name, alpha_first[static_cast<std::size_t>(i)], worst, bound});
  }
  Table dists{"first position: the target's p (raw softmax) and p̃, token by token",
              {"token", "p (raw)", "p̃ (processed)"},
              {}};
  for (int x = 0; x < kVocab; ++x)
    dists.rows.push_back({std::int64_t{x}, p_raw[static_cast<std::size_t>(x)], p_tilde[static_cast<std::size_t>(x)]});

  // ---- the real loop ----
  const auto law = exact_law(target, ts);
  std::int64_t support = 0;
  for (double p : law) support += p > 0.0 ? 1 : 0;
  const double per = kFalseAlarm / kStatRows;
  const double tvb = tv_bound_bhc(support, o.samples, per);
  Table loop{"the loop (K = 2, 2 tokens) against the exact law under p̃",
             {"draft sampler", "TV", "TV bound", "χ²", "df", "χ² critical", "α observed",
              "α exact (verified)", "α bound", "tokens/step"},
             {}};
  std::uint64_t stream = 10;
  for (int i = 0; i < kDrafts; ++i) {
    const auto& d = drafts[i];
    Rng rng(spec::derive_seed(ctx.seed, stream++));
    std::vector<std::int64_t> counts(law.size(), 0);
    spec::SpecConfig sc;
    sc.k = kDraftK;
    sc.max_new_tokens = kNewTokens;
    sc.target_sampler = ts;
    sc.draft_sampler = d.s;
    double sum_a = 0.0, var_a = 0.0;
    sc.on_step = [&](const spec::StepTrace& s) {
      const std::size_t verified = std::min(s.accepted + 1, s.drafts.size());
      for (std::size_t j = 0; j < verified; ++j) {
        const double a = spec::acceptance_rate(s.target[j], s.draft[j]);
        sum_a += a, var_a += a * (1.0 - a);
      }
    };
    spec::SpecStats total;
    for (std::int64_t n = 0; n < o.samples; ++n) {
      const auto run = spec::speculative_decode(target, draft, kPrompt, sc, rng, parts.faults);
      ++counts[static_cast<std::size_t>(run.tokens[0] * kVocab + run.tokens[1])];
      total += run.stats;
    }
    const LawFit f = fit_to_law(counts, law, o.samples, per);
    r.expect({"TV(empirical, exact law under p̃): draft " + d.name, kSource, "", 0.0, tvb,
              fmt::format("Bretagnolle–Huber–Carol, any n: P(TV ≥ t) ≤ 2^M e^(−2nt²), M = {} "
                          "sequences, n = {}, false alarm {:g}/{}",
                          support, o.samples, kFalseAlarm, kStatRows),
              f.tv, std::nullopt, ""});
    r.expect({"Pearson χ² against the exact law under p̃: draft " + d.name, kSource, "", 0.0,
              f.critical,
              fmt::format("χ²({:g}) upper quantile at {:.3g} (asymptotic; cells with expected "
                          "count < 5 pooled)",
                          f.df, per),
              f.chi2, std::nullopt, ""});
    // Verified positions per sequence ≤ tokens emitted ≤ 2 + K.
    const double max_var = static_cast<double>(o.samples) * (kNewTokens + kDraftK) / 4.0;
    const double ev = static_cast<double>(std::max<std::int64_t>(total.evaluated, 1));
    const double ta = freedman_radius(var_a, 1.0, max_var, per) / ev;
    const double a_obs = static_cast<double>(total.accepted) / ev, a_exact = sum_a / ev;
    r.expect({"α observed vs exact α of the verified positions: draft " + d.name, "000 §7.2, §7.5",
              "", a_exact, ta,
              fmt::format("Freedman (accepted − Σ a is a martingale, increments in [−1, 1], "
                          "Σ a(1 − a) = {:.3g}), false alarm {:g}/{}; ± = t / {} verified",
                          var_a, kFalseAlarm, kStatRows, total.evaluated),
              a_obs, std::nullopt, ""});
    loop.rows.push_back({d.name, f.tv, tvb, f.chi2, f.df, f.critical, a_obs, a_exact, ta,
                         static_cast<double>(total.emitted) / static_cast<double>(std::max<std::int64_t>(total.steps, 1))});
    r.metric("tv_" + d.key, f.tv);
    r.metric("alpha_observed_" + d.key, a_obs);
    r.metric("alpha_exact_" + d.key, a_exact);
    r.metric("alpha_first_" + d.key, alpha_first[static_cast<std::size_t>(i)]);
  }
  r.metric("tv_bound", tvb);
  r.metric_exact("target_tokens_kept_first", static_cast<std::uint64_t>(kept));
  r.tables.push_back(std::move(first));
  r.tables.push_back(std::move(dists));
  r.tables.push_back(std::move(loop));
  const auto lowest = std::min_element(alpha_first.begin(), alpha_first.end()) - alpha_first.begin();
  r.notes.push_back(fmt::format(
      "At the first position the target keeps {} of {} tokens after temperature {:g}, top-k {}, "
      "top-p {:g}. α there: greedy draft {:.4f}, the target's own sampler {:.4f}; the lowest is "
      "the {} draft. A greedy draft proposes its argmax with q̃ = 1, accepted with p̃(argmax), so "
      "α = p̃(argmax q) ≤ max p̃: exact, but every rejection costs a resample.",
      kept, kVocab, o.temperature, o.top_k, o.top_p, alpha_first[0], alpha_first[4],
      drafts[lowest].name));
  r.notes.push_back(fmt::format(
      "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)), each draft sampler its "
      "own stream; prompt [1, 5, 2]; the exact law is p̃(x₁)·p̃(x₂ | x₁) over all {} sequences, "
      "each prefix through a fresh full forward.",
      ctx.seed, kVocab * kVocab));
  return r;
}

}  // namespace

Result run_spec_sampler(const SpecSamplerOptions& o, const RunContext& ctx,
                        const SpecSamplerParts& parts) {
  require_range("--samples", o.samples, 1, kMaxSamples);
  require_finite_range("--temperature", o.temperature, 0.01, 10.0);
  require_range("--top-k", o.top_k, 0, kVocab);
  require_finite_range("--top-p", o.top_p, 0.01, 1.0);
  // The TV bound must be below 1 for the comparison to be able to fail; the support is at most V².
  const double per = kFalseAlarm / kStatRows;
  if (tv_bound_bhc(kVocab * kVocab, o.samples, per) >= 1.0) {
    const double l = kVocab * kVocab * std::log(2.0) + std::log(1.0 / per);
    const auto min_n = static_cast<std::int64_t>(std::floor(l / 2.0)) + 1;
    throw InputError(fmt::format(
        "--samples: must be at least {} (got {}): below, the TV bound covers TV's whole range and "
        "the check could not fail",
        min_n, o.samples));
  }
  return with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, parts); });
}

namespace {

class SpecSamplerCheck final : public Check {
 public:
  std::string name() const override { return "spec-sampler"; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "temperature/top-k/top-p on the target: the output is p̃ for any draft sampler; a "
           "greedy draft lowers α";
  }
  std::string description() const override {
    return "Target and draft mini-GPTs over V = 8, the target sampling with --temperature,\n"
           "--top-k, --top-p (p̃), five draft samplers (greedy, T 0.05, the target's T, T 1, the\n"
           "target's sampler): the one-step law in closed form equals p̃; the loop's 2-token\n"
           "sequences (K = 2, --samples each) match the exact law under p̃ (TV bound, χ²); α\n"
           "observed matches the exact α of the verified positions (Freedman bound).";
  }
  std::string derivation() const override {
    return "Rejection sampling never looks at how p̃ was made: for any target law p̃ and any\n"
           "proposal q̃, accept x ~ q̃ with min(1, p̃(x)/q̃(x)), else resample from\n"
           "max(0, p̃ − q̃)/(1 − α): P(X = x) = min(p̃, q̃) + max(0, p̃ − q̃) = p̃(x). So the\n"
           "verifier must use the processed p̃ (temperature, top-k, top-p) in both places; a\n"
           "greedy draft is the one-hot q̃ = δ_argmax, still a valid proposal, with\n"
           "α = Σ min(p̃, δ) = p̃(argmax q): usually below Σ min(p̃, q̃) of a matched sampler.\n"
           "Source: 000 §7.5 (and §7.2–7.3).";
  }
  bool uses_dtype() const override { return true; }
  void bind(OptionSet& sub) override {
    sub.add_option("--samples", opts_.samples, "Sequences per draft sampler (default 1200)")
        ->check(IntRange(1, kMaxSamples));
    sub.add_option("--temperature", opts_.temperature, "Target's temperature (default 0.1)")
        ->check(FiniteRange(0.01, 10.0));
    sub.add_option("--top-k", opts_.top_k, "Target's top-k, 0 = off (default 6)")
        ->check(IntRange(0, kVocab));
    sub.add_option("--top-p", opts_.top_p, "Target's top-p, 1 = off (default 0.9)")
        ->check(FiniteRange(0.01, 1.0));
  }
  std::string weights_refusal() const override {
    return "it enumerates the sampled law over a vocabulary of 8, where top-k/top-p cut-offs and its "
           "bounds are sized; spec-exact runs the distribution test on a file pair";
  }
  Result run(const RunContext& ctx) override { return run_spec_sampler(opts_, ctx); }

 private:
  SpecSamplerOptions opts_;
};

}  // namespace

KVLAB_REGISTER_CHECK(225, SpecSamplerCheck);

}  // namespace kvlab::checks
