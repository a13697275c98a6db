// typical-acceptance: Medusa's typical acceptance changes the output distribution; standard
// rejection sampling does not (000 §8.2: "这个规则不严格保证 exact sampling … 若需要 exact，可改用
// 标准 rejection sampling"; Medusa, Cai et al., arXiv:2401.10774, §2.3.1).
//
// For --contexts seeded 3-token prompts, the target and draft mini-GPTs of spec-exact (V = 8)
// give the next-token distributions p (target) and q (draft) at --temperature. A draft token
// x ~ q is verified two ways:
//   - rejection sampling: accept with min(1, p(x)/q(x)), else draw from max(0, p − q)/Σ;
//   - typical acceptance: accept when p(x) > min(ε, δ·exp(−H(p))) (ε = 0.09, δ = 0.3, the
//     reference implementation's posterior_threshold and posterior_alpha; H in nats), else emit
//     the target's argmax (Medusa's greedy first token).
// Exact laws, no noise: the law of the emitted token is computed in closed form for each verifier
// (spec/step_law.hpp: accept path + reject path). Rejection sampling's law equals p within a
// float64 rounding bound (derived below); typical acceptance's is TV(law, p) away from p.
// Monte Carlo confirms both with --samples draws per verifier and context: the empirical law of
// rejection sampling is within the Bretagnolle–Huber–Carol bound β of p (TV ≤ β with
// P(TV ≥ β) ≤ 2^V e^(−2nβ²)), typical acceptance's is within β of its own closed-form law and
// more than β away from p (it is not exact). Family false alarm 1e-4, Bonferroni over the
// 3 × --contexts Monte Carlo comparisons. Typical acceptance's closed-form TV must exceed 2β,
// so that a sampler test of this size detects it (TV(emp, p) ≥ TV(law, p) − TV(emp, law) > β).
// Refused (InputError, exit 2): --samples too small for β < 1/2 (typical acceptance could then
// never be told from exact sampling), --samples × --contexts over the work budget, and a setting
// where Medusa's closed-form law is within 2β of p at some context: the claim cannot be judged
// there (at --temperature 0.01 p is one-hot and typical acceptance emits its argmax, which is p),
// and the message names the temperatures (and --samples) at which it can.
//
//   kvlab typical-acceptance [--samples 20000] [--contexts 4] [--temperature 0.1]
//                            [--epsilon 0.09] [--delta 0.3] [--seed 1234] [--dtype f64|f32]
#include "core/finite.hpp"
#include "typical_acceptance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "spec/acceptance.hpp"
#include "spec/distribution.hpp"
#include "spec/loop.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"
#include "framework/options.hpp"
#include "core/numerics.hpp"

namespace kvlab::checks {
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

ModelConfig target_config() { return small_spec_target(kVocab); }

ModelConfig draft_config() { return small_spec_draft(kVocab); }

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

template <class T>
Result run_impl(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                const TypicalAcceptanceParts& parts) {
  const spec::TypicalParams tp{o.epsilon, o.delta};
  const spec::AcceptRule typical_rule = parts.rule ? parts.rule : spec::typical_accept_rule(tp);
  const spec::ResidualFn typical_repl =
      parts.replacement ? parts.replacement : spec::ResidualFn(spec::greedy_replacement);
  const MiniGPT<T> target(target_config(), ctx.seed);
  const MiniGPT<T> draft(draft_config(), spec::derive_seed(ctx.seed, 1));

  const int comparisons = 3 * o.contexts;
  const double per = kFalseAlarm / comparisons;
  const double beta = tv_bound_bhc(kVocab, o.samples, per);

  // Each context's prompt and last logit rows, computed once: every temperature below reuses them.
  std::vector<std::vector<int>> prompts;
  std::vector<std::vector<double>> target_logits, draft_logits;
  for (int c = 0; c < o.contexts; ++c) {
    prompts.push_back(random_tokens(spec::derive_seed(ctx.seed, 100 + static_cast<std::uint64_t>(c)), kPromptLen,
                                    kVocab));
    target_logits.push_back(last_logits(target, prompts.back()));
    draft_logits.push_back(last_logits(draft, prompts.back()));
  }
  require_judgeable(o, target_logits, draft_logits, beta, per, ctx.seed);

  Result r;
  r.check = "typical-acceptance";
  r.source = kSource;
  r.claim = fmt::format(
      "Medusa's typical acceptance (accept x when p(x) > min(ε, δ·e^(−H(p))), ε = {:g}, δ = {:g}; "
      "argmax on rejection) changes the output distribution, while standard rejection sampling "
      "(accept with min(1, p/q), residual on rejection) emits exactly p: closed-form laws over "
      "V = {} for {} contexts, confirmed by {} draws per verifier.",
      o.epsilon, o.delta, kVocab, o.contexts, o.samples);

  Table table{"per context: laws of the emitted token",
              {"context", "p (target)", "q (draft)", "H(p) nats", "threshold", "α = Σ min(p, q)",
               "typical law", "TV(typical law, p)", "TV(emp. rejection, p)",
               "TV(emp. typical, p)", "TV(emp. typical, its law)", "typical accepted"},
              {}};

  double max_rej_dev = 0.0, rej_tol = 0.0;
  double max_tv_rej = 0.0, max_tv_typ_own = 0.0;
  double min_tv_typ_law = 2.0, min_tv_typ_emp = 2.0;
  for (int c = 0; c < o.contexts; ++c) {
    const auto& prompt = prompts[static_cast<std::size_t>(c)];
    const auto p = at_temperature(target_logits[static_cast<std::size_t>(c)], o.temperature);
    const auto q = at_temperature(draft_logits[static_cast<std::size_t>(c)], o.temperature);

    // Closed forms (000 §7.3 for rejection sampling; the same two paths for typical acceptance).
    const auto law_rej = spec::step_output_law(p, q);
    const auto law_typ = spec::step_output_law(p, q, q, typical_rule, typical_repl);
    for (std::size_t x = 0; x < p.size(); ++x)
      max_rej_dev = nan_max(max_rej_dev, std::abs(law_rej[x] - p[x]));
    // Per entry: q·a = min(p, q)(1 + 2u); the reject mass Σ q (1 − a) carries (V + 3)u, the
    // residual (V + 2)u relative, the final addition u: (2V + 8)u; plus |Σp − 1| + |Σq − 1|,
    // since the closed form is p only when both sum to 1 (the reject mass is then Σ max(0, p − q)).
    rej_tol = std::max(rej_tol, (2.0 * kVocab + 8.0) * u + std::abs(spec::sum_deviation(p)) +
                                    std::abs(spec::sum_deviation(q)));
    const double tv_typ_law = tv(law_typ, p);
    min_tv_typ_law = std::min(min_tv_typ_law, tv_typ_law);

    // Monte Carlo: each verifier its own stream.
    std::vector<std::int64_t> n_rej(kVocab, 0), n_typ(kVocab, 0);
    std::int64_t typ_accepted = 0;
    {
      Rng rng(spec::derive_seed(ctx.seed, 1000 + 2 * static_cast<std::uint64_t>(c)));
      for (std::int64_t i = 0; i < o.samples; ++i) ++n_rej[spec::rejection_step(p, q, rng).token];
    }
    {
      Rng rng(spec::derive_seed(ctx.seed, 1001 + 2 * static_cast<std::uint64_t>(c)));
      for (std::int64_t i = 0; i < o.samples; ++i) {
        const auto v = spec::verify_one(p, q, rng, typical_rule, typical_repl);
        ++n_typ[v.token];
        typ_accepted += v.accepted ? 1 : 0;
      }
    }
    const auto e_rej = empirical(n_rej, o.samples), e_typ = empirical(n_typ, o.samples);
    const double tv_rej = tv(e_rej, p), tv_typ = tv(e_typ, p), tv_typ_own = tv(e_typ, law_typ);
    max_tv_rej = std::max(max_tv_rej, tv_rej);
    max_tv_typ_own = std::max(max_tv_typ_own, tv_typ_own);
    min_tv_typ_emp = std::min(min_tv_typ_emp, tv_typ);
    table.rows.push_back({fmt::format("{} [{}, {}, {}]", c, prompt[0], prompt[1], prompt[2]),
                          dist_text(p), dist_text(q), spec::entropy_nats(p),
                          spec::typical_threshold(p, tp), spec::acceptance_rate(p, q),
                          dist_text(law_typ), tv_typ_law, tv_rej, tv_typ, tv_typ_own,
                          static_cast<double>(typ_accepted) / static_cast<double>(o.samples)});
    r.metric(fmt::format("tv_typical_law_context{}", c), tv_typ_law);
  }

  const std::string mc_why = fmt::format(
      "Bretagnolle–Huber–Carol, any n: P(TV ≥ β) ≤ 2^V e^(−2nβ²), V = {}, n = {}, false alarm "
      "{:g}/{}",
      kVocab, o.samples, kFalseAlarm, comparisons);
  r.expect({"rejection sampling, closed-form law − p, max over tokens and contexts", "000 §7.3",
            "probability", 0.0, rej_tol,
            fmt::format("float64 rounding: (2V + 8)u per entry (V = {}) plus the distributions' "
                        "own |Σ − 1|",
                        kVocab),
            max_rej_dev, std::nullopt, ""});
  r.expect({"rejection sampling, TV(empirical, p), max over contexts", kSource, "", 0.0, beta,
            mc_why, max_tv_rej, std::nullopt, ""});
  // "Above": the range (2β, 1], written as its midpoint ± half its width.
  r.expect({"typical acceptance, TV(closed-form law, p), min over contexts (must exceed 2β)",
            kSource, "", 0.5 * (1.0 + 2.0 * beta), 0.5 * (1.0 - 2.0 * beta),
            fmt::format("the range (2β, 1], β = {:.4f}: a law this far from p is told from exact "
                        "sampling by {} draws at the stated false alarm",
                        beta, o.samples),
            min_tv_typ_law, std::nullopt, ""});
  r.expect({"typical acceptance, TV(empirical, p), min over contexts (must exceed β)", kSource, "",
            0.5 * (1.0 + beta), 0.5 * (1.0 - beta),
            fmt::format("the range (β, 1], β = {:.4f}: an exact sampler stays below β; ", beta) + mc_why,
            min_tv_typ_emp, std::nullopt, ""});
  r.expect({"typical acceptance, TV(empirical, its closed-form law), max over contexts", kSource,
            "", 0.0, beta, mc_why, max_tv_typ_own, std::nullopt, ""});

  r.metric("tv_bound", beta);
  r.metric("max_abs_rejection_law_minus_p", max_rej_dev);
  r.metric("max_tv_rejection_empirical", max_tv_rej);
  r.metric("min_tv_typical_law", min_tv_typ_law);
  r.metric("min_tv_typical_empirical", min_tv_typ_emp);
  r.tables.push_back(std::move(table));
  r.notes.push_back(
      "000 §8.2 says typical acceptance \"does not strictly guarantee exact sampling\": kvlab "
      "agrees. Its law is q(x)·1[x typical] + P(reject)·1[x = argmax p]: typical tokens keep the "
      "draft's probability and rejections pile onto the target's mode.");
  r.notes.push_back(fmt::format(
      "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)) as in spec-exact; "
      "context c's prompt from SplitMix64(seed, 100 + c); each verifier and context its own "
      "stream. Entropy in nats without Medusa's +1e-5 inside the log.",
      ctx.seed));
  return r;
}

}  // namespace

Result run_typical_acceptance(const TypicalAcceptanceOptions& o, const RunContext& ctx,
                              const TypicalAcceptanceParts& parts) {
  require_range("--samples", o.samples, 1, kMaxSamples);
  require_range("--contexts", o.contexts, 1, kMaxContexts);
  require_finite_range("--temperature", o.temperature, 0.01, 10.0);
  require_finite_range("--epsilon", o.epsilon, 0.001, 1.0);
  require_finite_range("--delta", o.delta, 0.001, 1.0);
  const double work = 2.0 * static_cast<double>(o.samples) * o.contexts;
  if (work > static_cast<double>(kWorkBudget))
    throw InputError(fmt::format(
        "--samples, --contexts: 2 × --samples × --contexts = {:.3g} is over the work budget of {} "
        "draws (about 2 s here)",
        work, kWorkBudget));
  // β < 1/2 needs n > 2 (V ln 2 + ln(1/level)); below it, exactness could not be rejected.
  const double level = kFalseAlarm / (3.0 * o.contexts);
  const double l = kVocab * std::log(2.0) + std::log(1.0 / level);
  const auto min_n = static_cast<std::int64_t>(std::floor(2.0 * l)) + 1;
  if (o.samples < min_n)
    throw InputError(fmt::format(
        "--samples: must be at least {} for --contexts {} (got {}): below, the sampling bound is "
        "over 1/2 and no verifier could be told from an exact one",
        min_n, o.contexts, o.samples));
  return with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, parts); });
}

namespace {

class TypicalAcceptanceCheck final : public Check {
 public:
  std::string name() const override { return "typical-acceptance"; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "Medusa's typical acceptance is not exact (TV above the bound); rejection sampling is";
  }
  std::string description() const override {
    return "Next-token (p, q) from the target and draft mini-GPTs (V = 8) for --contexts prompts:\n"
           "closed-form law of the emitted token under rejection sampling (= p) and under Medusa's\n"
           "typical acceptance (p(x) > min(ε, δ e^(−H)), argmax on rejection), and --samples\n"
           "Monte Carlo draws of each against the Bretagnolle–Huber–Carol bound.";
  }
  std::string derivation() const override {
    return "Rejection sampling: P(X = x) = min(p, q)(x) + (1 − α)·max(0, p − q)(x)/(1 − α) = p(x).\n"
           "Typical acceptance: x ~ q is kept iff p(x) > τ = min(ε, δ·e^(−H(p))), else argmax p:\n"
           "  P(X = x) = q(x)·1[p(x) > τ] + (Σ_{y: p(y) ≤ τ} q(y))·1[x = argmax p],\n"
           "which is p only by accident (the draft's q survives on typical tokens).\n"
           "Monte Carlo: P(TV(p̂_n, P) ≥ β) ≤ 2^V e^(−2nβ²) (Bretagnolle–Huber–Carol), so a law\n"
           "more than 2β from p is detected by n draws. — 000 §8.2; Medusa arXiv 2401.10774 §2.3.1";
  }
  bool uses_dtype() const override { return true; }
  void bind(OptionSet& sub) override {
    sub.add_option("--samples", opts_.samples, "Draws per verifier and context (default 20000)")
        ->check(IntRange(1, kMaxSamples));
    sub.add_option("--contexts", opts_.contexts, "Prompts compared, 1-16 (default 4)")
        ->check(IntRange(1, kMaxContexts));
    sub.add_option("--temperature", opts_.temperature, "Sampling temperature (default 0.1)")
        ->check(FiniteRange(0.01, 10.0));
    sub.add_option("--epsilon", opts_.epsilon, "Medusa's posterior_threshold ε (default 0.09)")
        ->check(FiniteRange(0.001, 1.0));
    sub.add_option("--delta", opts_.delta, "Medusa's posterior_alpha δ (default 0.3)")
        ->check(FiniteRange(0.001, 1.0));
  }
  std::string weights_refusal() const override {
    return "its statistical bounds are sized for a vocabulary of 8 (M = 8 outcomes per context); "
           "spec-exact runs the distribution test on a file pair";
  }
  Result run(const RunContext& ctx) override { return run_typical_acceptance(opts_, ctx); }

 private:
  TypicalAcceptanceOptions opts_;
};

}  // namespace

KVLAB_REGISTER_CHECK(240, TypicalAcceptanceCheck);

}  // namespace kvlab::checks
