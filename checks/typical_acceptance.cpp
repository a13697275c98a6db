// typical-acceptance: Medusa's typical acceptance changes the output distribution; standard
// rejection sampling does not (000 §8.2: "这个规则不严格保证 exact sampling … 若需要 exact，可改用
// 标准 rejection sampling"; Medusa, Cai et al., arXiv:2401.10774, §2.3.1). Closed-form laws of the
// emitted token for both verifiers on the (p, q) of --contexts prompts, confirmed by --samples
// draws each against the Bretagnolle–Huber–Carol bound β (family false alarm 1e-4, Bonferroni over
// the 3 × --contexts comparisons). Typical acceptance's closed-form TV must exceed 2β so that a
// sampler test this size detects it; a setting where it does not is refused (exit 2) with the
// temperatures (and --samples) that can judge the claim.
#include "typical_acceptance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/numerics.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "spec/distribution.hpp"
#include "spec/loop.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::typical_acceptance {
namespace {

constexpr char kSource[] = "000 §8.2";
constexpr int kVocab = 8;
constexpr int kPromptLen = 3;
constexpr double kFalseAlarm = 1e-4;
constexpr std::int64_t kMaxSamples = 10'000'000;
constexpr int kMaxContexts = 16;
// Work budget: one draw costs ~0.1 µs (two categorical draws over V = 8 and a rule call);
// 2 verifiers × samples × contexts <= 4e7 is about 2 s here.
constexpr std::int64_t kWorkBudget = 20'000'000;
constexpr double u = unit_roundoff<double>();

// The last row of a full forward's logits over `prompt`, as float64.
template <class T>
std::vector<double> last_logits(const MiniGPT<T>& m, const std::vector<int>& prompt) {
  auto cache = m.make_cache(CacheKind::prealloc, static_cast<int>(prompt.size()));
  const Mat<T> lg = m.forward(prompt, 0, *cache);
  std::vector<double> row(static_cast<std::size_t>(lg.cols()));
  for (Eigen::Index c = 0; c < lg.cols(); ++c) row[static_cast<std::size_t>(c)] = lg(lg.rows() - 1, c);
  return row;
}

// p̃ at temperature t of a logit row (float64).
std::vector<double> at_temperature(const std::vector<double>& logits, double t) {
  spec::SamplerConfig s;
  s.temperature = t;
  return spec::process_logits(logits, s);
}

double tv(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] - b[i]);
  return 0.5 * s;
}

std::vector<double> empirical(const std::vector<std::int64_t>& counts, std::int64_t n) {
  std::vector<double> e(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i)
    e[i] = static_cast<double>(counts[i]) / static_cast<double>(n);
  return e;
}

std::string dist_text(const std::vector<double>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += fmt::format("{}{:.3f}", i ? ", " : "", d[i]);
  return s + "]";
}

// The smallest TV(law, p) over the contexts of Medusa's own verifier (typical_accept_rule with
// the options' ε, δ; argmax on rejection) at temperature t, and the context where it is smallest.
struct Closest {
  double tv = 2.0;
  int context = 0;
};
Closest medusa_closest(const TypicalAcceptanceOptions& o, const std::vector<std::vector<double>>& target_logits,
                       const std::vector<std::vector<double>>& draft_logits, double t) {
  const spec::AcceptRule rule = spec::typical_accept_rule({o.epsilon, o.delta});
  Closest best;
  for (std::size_t c = 0; c < target_logits.size(); ++c) {
    const auto p = at_temperature(target_logits[c], t), q = at_temperature(draft_logits[c], t);
    const double d = tv(spec::step_output_law(p, q, q, rule, spec::greedy_replacement), p);
    if (!(d >= best.tv)) best = {d, static_cast<int>(c)};
  }
  return best;
}

// The claim "typical acceptance is not exact" can only be shown where Medusa's law is more than 2β
// from p at every context (a sampler test of --samples draws tells it from exact sampling there).
// Elsewhere (low temperatures, where p is one-hot and typical acceptance emits its argmax: exact;
// high ones, where every token is typical and p ≈ q ≈ uniform) a run could only fail for want of
// power, so it is refused with the settings that can judge it: temperatures on a log grid over the
// allowed range, and the --samples that would do at this temperature. Judged with Medusa's own
// verifier, not the one under test: a verifier that is secretly exact must fail, not be refused.
void require_judgeable(const TypicalAcceptanceOptions& o, const std::vector<std::vector<double>>& target_logits,
                       const std::vector<std::vector<double>>& draft_logits, double beta, double per,
                       std::uint64_t seed) {
  const Closest here = medusa_closest(o, target_logits, draft_logits, o.temperature);
  if (here.tv > 2.0 * beta) return;
  constexpr int kPerDecade = 20, kDecades = 3;  // 0.01 .. 10
  std::vector<std::pair<double, double>> ranges;
  for (int i = 0; i <= kPerDecade * kDecades; ++i) {
    const double t = 0.01 * std::pow(10.0, static_cast<double>(i) / kPerDecade);
    if (!(medusa_closest(o, target_logits, draft_logits, t).tv > 2.0 * beta)) continue;
    if (!ranges.empty() && ranges.back().second == 0.01 * std::pow(10.0, (i - 1.0) / kPerDecade))
      ranges.back().second = t;
    else
      ranges.emplace_back(t, t);
  }
  std::string where;
  for (const auto& [lo, hi] : ranges)
    where += fmt::format("{}{}", where.empty() ? "" : " or ",
                         lo == hi ? fmt::format("{:.3g}", lo) : fmt::format("[{:.3g}, {:.3g}]", lo, hi));
  where = where.empty() ? fmt::format("no --temperature in [0.01, 10] ({} points tried) can", kPerDecade * kDecades + 1)
                        : "it can at --temperature " + where;
  // 2β(n) < tv  <=>  n > 2·(V ln 2 + ln(1/per)) / tv² (core/stats.hpp, tv_bound_bhc).
  const double l = kVocab * std::log(2.0) + std::log(1.0 / per);
  const double n_needed = std::floor(2.0 * l / (here.tv * here.tv)) + 1.0;
  std::string more;
  if (here.tv > 0 && n_needed <= static_cast<double>(kMaxSamples) &&
      2.0 * n_needed * o.contexts <= static_cast<double>(kWorkBudget))
    more = fmt::format(", or at this temperature with --samples {:.0f}", n_needed);
  throw InputError(fmt::format(
      "--temperature, --samples, --contexts, --epsilon, --delta: the claim cannot be judged at --temperature {:g} "
      "with --samples {}: Medusa's "
      "typical acceptance emits a law only {:.3g} from p (context {}), not above 2β = {:.4f}, so no run this size "
      "could tell it from exact sampling; for --seed {} --contexts {} (ε {:g}, δ {:g}) {}{}",
      o.temperature, o.samples, here.tv, here.context, 2.0 * beta, seed, o.contexts, o.epsilon,
      o.delta, where, more));
}

// The false alarm of each of the 3 × --contexts Monte Carlo comparisons, and their bound β.
double per_comparison(const TypicalAcceptanceOptions& o) { return kFalseAlarm / (3.0 * o.contexts); }
double beta_of(const TypicalAcceptanceOptions& o) { return tv_bound_bhc(kVocab, o.samples, per_comparison(o)); }

// Context c: closed forms (000 §7.3 for rejection sampling; the same two paths for typical
// acceptance) and each verifier's draws from its own stream.
TypicalContext measure_context(const TypicalAcceptanceOptions& o, std::uint64_t seed, int c, std::vector<int> prompt,
                               const std::vector<double>& t_logits, const std::vector<double>& d_logits,
                               const spec::AcceptRule& rule, const spec::ResidualFn& replacement) {
  TypicalContext tc{.prompt = std::move(prompt),
                    .p = at_temperature(t_logits, o.temperature),
                    .q = at_temperature(d_logits, o.temperature)};
  const auto& p = tc.p;
  const auto& q = tc.q;
  const auto law_rej = spec::step_output_law(p, q);
  tc.law_typical = spec::step_output_law(p, q, q, rule, replacement);
  for (std::size_t x = 0; x < p.size(); ++x) tc.rejection_law_error = nan_max(tc.rejection_law_error, std::abs(law_rej[x] - p[x]));
  tc.tv_typical_law = tv(tc.law_typical, p);
  std::vector<std::int64_t> n_rej(kVocab, 0), n_typ(kVocab, 0);
  Rng rej_rng(spec::derive_seed(seed, 1000 + 2 * static_cast<std::uint64_t>(c)));
  for (std::int64_t i = 0; i < o.samples; ++i) ++n_rej[spec::rejection_step(p, q, rej_rng).token];
  Rng typ_rng(spec::derive_seed(seed, 1001 + 2 * static_cast<std::uint64_t>(c)));
  std::int64_t accepted = 0;
  for (std::int64_t i = 0; i < o.samples; ++i) {
    const auto v = spec::verify_one(p, q, typ_rng, rule, replacement);
    ++n_typ[v.token];
    accepted += v.accepted ? 1 : 0;
  }
  const auto e_typ = empirical(n_typ, o.samples);
  tc.tv_rejection_empirical = tv(empirical(n_rej, o.samples), p);
  tc.tv_typical_empirical = tv(e_typ, p);
  tc.tv_typical_own = tv(e_typ, tc.law_typical);
  tc.typical_accepted = static_cast<double>(accepted) / static_cast<double>(o.samples);
  return tc;
}

template <class T>
TypicalAcceptanceMeasured measure_impl(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                                       const TypicalAcceptanceParts& parts) {
  const spec::AcceptRule rule = parts.rule ? parts.rule : spec::typical_accept_rule({o.epsilon, o.delta});
  const spec::ResidualFn replacement = parts.replacement ? parts.replacement : spec::ResidualFn(spec::greedy_replacement);
  const MiniGPT<T> target(small_spec_target(kVocab), ctx.seed);
  const MiniGPT<T> draft(small_spec_draft(kVocab), spec::derive_seed(ctx.seed, 1));
  // Each context's prompt and last logit rows, computed once: every temperature tried reuses them.
  std::vector<std::vector<int>> prompts;
  std::vector<std::vector<double>> target_logits, draft_logits;
  for (int c = 0; c < o.contexts; ++c) {
    prompts.push_back(random_tokens(spec::derive_seed(ctx.seed, 100 + static_cast<std::uint64_t>(c)), kPromptLen,
                                    kVocab));
    target_logits.push_back(last_logits(target, prompts.back()));
    draft_logits.push_back(last_logits(draft, prompts.back()));
  }
  require_judgeable(o, target_logits, draft_logits, beta_of(o), per_comparison(o), ctx.seed);
  TypicalAcceptanceMeasured m{.options = o, .context = ctx};
  for (int c = 0; c < o.contexts; ++c) {
    const auto i = static_cast<std::size_t>(c);
    m.contexts.push_back(measure_context(o, ctx.seed, c, prompts[i], target_logits[i], draft_logits[i], rule, replacement));
  }
  return m;
}

// The rows' figures over the contexts (a NaN anywhere is kept, and fails its row).
struct Summary {
  double max_rej_dev = 0.0, rej_tol = 0.0, max_tv_rej = 0.0, max_tv_typ_own = 0.0;
  double min_tv_typ_law = 2.0, min_tv_typ_emp = 2.0;
};

Summary summarize(const TypicalAcceptanceMeasured& m) {
  Summary s;
  for (const TypicalContext& c : m.contexts) {
    s.max_rej_dev = nan_max(s.max_rej_dev, c.rejection_law_error);
    // Per entry: q·a = min(p, q)(1 + 2u); the reject mass Σ q (1 − a) carries (V + 3)u, the
    // residual (V + 2)u relative, the final addition u: (2V + 8)u; plus |Σp − 1| + |Σq − 1|,
    // since the closed form is p only when both sum to 1 (the reject mass is then Σ max(0, p − q)).
    s.rej_tol = std::max(s.rej_tol, (2.0 * kVocab + 8.0) * u + std::abs(spec::sum_deviation(c.p)) +
                                        std::abs(spec::sum_deviation(c.q)));
    s.max_tv_rej = nan_max(s.max_tv_rej, c.tv_rejection_empirical);
    s.max_tv_typ_own = nan_max(s.max_tv_typ_own, c.tv_typical_own);
    s.min_tv_typ_law = nan_min(s.min_tv_typ_law, c.tv_typical_law);
    s.min_tv_typ_emp = nan_min(s.min_tv_typ_emp, c.tv_typical_empirical);
  }
  return s;
}

void present(const TypicalAcceptanceMeasured& m, Result& r) {
  const spec::TypicalParams tp{m.options.epsilon, m.options.delta};
  Table table{"per context: laws of the emitted token",
              {"context", "p (target)", "q (draft)", "H(p) nats", "threshold", "α = Σ min(p, q)",
               "typical law", "TV(typical law, p)", "TV(emp. rejection, p)",
               "TV(emp. typical, p)", "TV(emp. typical, its law)", "typical accepted"},
              {}};
  for (std::size_t c = 0; c < m.contexts.size(); ++c) {
    const TypicalContext& x = m.contexts[c];
    table.rows.push_back({fmt::format("{} [{}, {}, {}]", c, x.prompt[0], x.prompt[1], x.prompt[2]), dist_text(x.p),
                          dist_text(x.q), spec::entropy_nats(x.p), spec::typical_threshold(x.p, tp),
                          spec::acceptance_rate(x.p, x.q), dist_text(x.law_typical), x.tv_typical_law,
                          x.tv_rejection_empirical, x.tv_typical_empirical, x.tv_typical_own, x.typical_accepted});
    r.metric(fmt::format("tv_typical_law_context{}", c), x.tv_typical_law);
  }
  r.metric("tv_bound", beta_of(m.options));
  const Summary s = summarize(m);
  r.metric("max_abs_rejection_law_minus_p", s.max_rej_dev);
  r.metric("max_tv_rejection_empirical", s.max_tv_rej);
  r.metric("min_tv_typical_law", s.min_tv_typ_law);
  r.metric("min_tv_typical_empirical", s.min_tv_typ_emp);
  r.tables.push_back(std::move(table));
  r.notes.push_back(
      "000 §8.2 says typical acceptance \"does not strictly guarantee exact sampling\": kvlab "
      "agrees. Its law is q(x)·1[x typical] + P(reject)·1[x = argmax p]: typical tokens keep the "
      "draft's probability and rejections pile onto the target's mode.");
  r.notes.push_back(fmt::format(
      "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)) as in spec-exact; "
      "context c's prompt from SplitMix64(seed, 100 + c); each verifier and context its own "
      "stream. Entropy in nats without Medusa's +1e-5 inside the log.",
      m.context.seed));
}

}  // namespace

TypicalAcceptanceMeasured measure_typical_acceptance(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                                                     const TypicalAcceptanceParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts); });
}

std::vector<Expectation> judge_typical_acceptance(const TypicalAcceptanceMeasured& m) {
  const TypicalAcceptanceOptions& o = m.options;
  const double beta = beta_of(o);
  const Summary s = summarize(m);
  const std::string mc_why = fmt::format(
      "Bretagnolle–Huber–Carol, any n: P(TV ≥ β) ≤ 2^V e^(−2nβ²), V = {}, n = {}, false alarm {:g}/{}", kVocab,
      o.samples, kFalseAlarm, 3 * o.contexts);
  // "Above": the range (2β, 1] (or (β, 1]), written as its midpoint ± half its width.
  return {{"rejection sampling, closed-form law − p, max over tokens and contexts", "000 §7.3", "probability", 0.0,
           s.rej_tol,
           fmt::format("float64 rounding: (2V + 8)u per entry (V = {}) plus the distributions' own |Σ − 1|", kVocab),
           s.max_rej_dev, std::nullopt, ""},
          {"rejection sampling, TV(empirical, p), max over contexts", kSource, "", 0.0, beta, mc_why, s.max_tv_rej,
           std::nullopt, ""},
          {"typical acceptance, TV(closed-form law, p), min over contexts (must exceed 2β)", kSource, "",
           0.5 * (1.0 + 2.0 * beta), 0.5 * (1.0 - 2.0 * beta),
           fmt::format("the range (2β, 1], β = {:.4f}: a law this far from p is told from exact sampling by {} draws "
                       "at the stated false alarm",
                       beta, o.samples),
           s.min_tv_typ_law, std::nullopt, ""},
          {"typical acceptance, TV(empirical, p), min over contexts (must exceed β)", kSource, "",
           0.5 * (1.0 + beta), 0.5 * (1.0 - beta),
           fmt::format("the range (β, 1], β = {:.4f}: an exact sampler stays below β; ", beta) + mc_why,
           s.min_tv_typ_emp, std::nullopt, ""},
          {"typical acceptance, TV(empirical, its closed-form law), max over contexts", kSource, "", 0.0, beta, mc_why,
           s.max_tv_typ_own, std::nullopt, ""}};
}

const CheckDef<TypicalAcceptanceOptions, TypicalAcceptanceMeasured>& typical_acceptance_check() {
  using O = TypicalAcceptanceOptions;
  static const CheckDef<O, TypicalAcceptanceMeasured> def{
      .spec = {.name = "typical-acceptance",
               .order = 240,
               .source = kSource,
               .summary = "Medusa's typical acceptance is not exact (TV above the bound); rejection sampling is",
               .claim_zh = "Medusa 的 typical acceptance 不是无损的（TV 超出上界）；拒绝采样是无损的",
               .description =
                   "Next-token (p, q) from the target and draft mini-GPTs (V = 8) for --contexts prompts:\n"
                   "closed-form law of the emitted token under rejection sampling (= p) and under Medusa's\n"
                   "typical acceptance (p(x) > min(ε, δ e^(−H)), argmax on rejection), and --samples\n"
                   "Monte Carlo draws of each against the Bretagnolle–Huber–Carol bound.",
               .derivation =
                   "Rejection sampling: P(X = x) = min(p, q)(x) + (1 − α)·max(0, p − q)(x)/(1 − α) = p(x).\n"
                   "Typical acceptance: x ~ q is kept iff p(x) > τ = min(ε, δ·e^(−H(p))), else argmax p:\n"
                   "  P(X = x) = q(x)·1[p(x) > τ] + (Σ_{y: p(y) ≤ τ} q(y))·1[x = argmax p],\n"
                   "which is p only by accident (the draft's q survives on typical tokens).\n"
                   "Monte Carlo: P(TV(p̂_n, P) ≥ β) ≤ 2^V e^(−2nβ²) (Bretagnolle–Huber–Carol), so a law\n"
                   "more than 2β from p is detected by n draws. — 000 §8.2; Medusa arXiv 2401.10774 §2.3.1",
               .traits = {.dtype = true,
                          .weights_refusal = "its statistical bounds are sized for a vocabulary of 8 (M = 8 outcomes "
                                             "per context); spec-exact runs the distribution test on a file pair"}},
      .options = {{"--samples", &O::samples, Allowed::integers(1, kMaxSamples), "Draws per verifier and context"},
                  {"--contexts", &O::contexts, Allowed::integers(1, kMaxContexts), "Prompts compared"},
                  {"--temperature", &O::temperature, Allowed::reals(0.01, 10.0), "Sampling temperature"},
                  {"--epsilon", &O::epsilon, Allowed::reals(0.001, 1.0), "Medusa's posterior_threshold ε"},
                  {"--delta", &O::delta, Allowed::reals(0.001, 1.0), "Medusa's posterior_alpha δ"}},
      .constraints =
          [](const O& o) {
            const double work = 2.0 * static_cast<double>(o.samples) * o.contexts;
            if (work > static_cast<double>(kWorkBudget))
              throw InputError(fmt::format(
                  "--samples, --contexts: 2 × --samples × --contexts = {:.3g} is over the work budget of {} "
                  "draws (about 2 s here)",
                  work, kWorkBudget));
            // β < 1/2 needs n > 2 (V ln 2 + ln(1/level)); below it, exactness could not be rejected.
            const double l = kVocab * std::log(2.0) + std::log(1.0 / per_comparison(o));
            const auto min_n = static_cast<std::int64_t>(std::floor(2.0 * l)) + 1;
            if (o.samples < min_n)
              throw InputError(fmt::format(
                  "--samples: must be at least {} for --contexts {} (got {}): below, the sampling bound is "
                  "over 1/2 and no verifier could be told from an exact one",
                  min_n, o.contexts, o.samples));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_typical_acceptance(o, ctx); },
      .judge = judge_typical_acceptance,
      .present = present,
      .claim = [](const TypicalAcceptanceMeasured& m) {
        return fmt::format(
            "Medusa's typical acceptance (accept x when p(x) > min(ε, δ·e^(−H(p))), ε = {:g}, δ = {:g}; "
            "argmax on rejection) changes the output distribution, while standard rejection sampling "
            "(accept with min(1, p/q), residual on rejection) emits exactly p: closed-form laws over "
            "V = {} for {} contexts, confirmed by {} draws per verifier.",
            m.options.epsilon, m.options.delta, kVocab, m.options.contexts, m.options.samples);
      }};
  return def;
}

Result run_typical_acceptance(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                              const TypicalAcceptanceParts& parts) {
  return run_check(typical_acceptance_check(), o, ctx,
                   [&parts](const TypicalAcceptanceOptions& opts, const RunContext& c) {
                     return measure_typical_acceptance(opts, c, parts);
                   });
}

KVLAB_REGISTER_SPEC(typical_acceptance_check);

}  // namespace kvlab::checks::typical_acceptance
