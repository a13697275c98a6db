// spec-alpha: the acceptance rate of speculative sampling, formula against the real sampler.
//
// Shows (000 §7.2; sanity check [d] of 000 §A.2): for seeded random target/draft pairs (p, q) over
// a small vocabulary and the edge cases p = q, disjoint supports, a one-hot (greedy) draft, and a
// draft with q(x) = 0 where p(x) > 0,
//   - alpha = sum_x min(p, q) equals 1 - TV(p, q) to float64 rounding;
//   - the fraction of draft tokens the rejection sampler accepts over --samples draws matches
//     alpha within z standard errors, z from a stated false-alarm probability (Bonferroni over
//     the pairs);
//   - the document's own criterion, "100k samples, alpha within 1%", on the headline pair, and what
//     that 1% is worth in standard errors on every pair.
//
//   kvlab spec-alpha [--samples 100000] [--vocab 8] [--alpha-target 0.7] [--seed 1234]
#include "spec_alpha.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "spec/distribution.hpp"
#include "spec/monte_carlo.hpp"
#include "support/options.hpp"

namespace kvlab::checks {
namespace {

constexpr char kSource[] = "000 §7.2, §A.2 [d]";
constexpr int kMaxVocabOption = 1024;  // a linear-scan draw costs O(V); 1024 keeps 100k draws fast
constexpr double kFalseAlarm = 1e-4;   // family-wise: P(any correct pair reported as failing)
constexpr double kDocumentRelative = 0.01;  // sanity [d]: "alpha within 1%"

struct Case {
  std::string name;
  std::vector<double> p;  // [V] target
  std::vector<double> q;  // [V] draft
};

// The pairs, all drawn from one generator seeded with the run's seed, in a fixed order.
std::vector<Case> make_cases(const SpecAlphaOptions& o, Rng& rng) {
  const auto v = static_cast<std::size_t>(o.vocab);
  const std::size_t half = v / 2;
  std::vector<Case> cases;
  auto [hp, hq] = spec::pair_with_acceptance(o.alpha_target, v, rng);
  cases.push_back({fmt::format("headline, built with α = {}", o.alpha_target), hp, hq});
  for (int i = 1; i <= 3; ++i)
    cases.push_back({fmt::format("random pair {}", i), spec::random_distribution(v, rng),
                     spec::random_distribution(v, rng)});
  auto same = spec::random_distribution(v, rng);
  cases.push_back({"p = q", same, same});
  // Disjoint supports: p on the first half of the tokens, q on the second half.
  std::vector<double> dp(v, 0.0), dq(v, 0.0);
  const auto a = spec::random_distribution(half, rng), b = spec::random_distribution(v - half, rng);
  std::copy(a.begin(), a.end(), dp.begin());
  std::copy(b.begin(), b.end(), dq.begin() + static_cast<std::ptrdiff_t>(half));
  cases.push_back({"disjoint supports", dp, dq});
  cases.push_back(
      {"q one-hot (greedy draft)", spec::random_distribution(v, rng), spec::one_hot(v, 0)});
  // q(x) = 0 on the second half, where p is positive: those tokens can only come from the residual.
  std::vector<double> zq(v, 0.0);
  const auto c = spec::random_distribution(half, rng);
  std::copy(c.begin(), c.end(), zq.begin());
  cases.push_back({"q(x) = 0 where p(x) > 0", spec::random_distribution(v, rng), zq});
  return cases;
}

}  // namespace

Result run_spec_alpha(const SpecAlphaOptions& o, const RunContext& ctx,
                      const SpecAlphaParts& parts) {
  spec::validate_samples("--samples", o.samples);
  require_range("--vocab", o.vocab, 2, kMaxVocabOption);
  require_finite_range("--alpha-target", o.alpha_target, 0.0, 1.0);

  Result r;
  r.check = "spec-alpha";
  r.source = kSource;
  r.claim =
      "The draft token is accepted with probability α = Σ min(p, q) = 1 − TV(p, q); a rejection "
      "sampler's acceptance rate over 100k draws matches it within 1%.";

  Rng pair_rng(ctx.seed);
  const auto cases = make_cases(o, pair_rng);
  const double u = unit_roundoff(Dtype::f64);
  const double v = o.vocab;
  const double n = static_cast<double>(o.samples);
  const double z = bonferroni_z(kFalseAlarm, cases.size());

  Table table{"acceptance rate per pair (α_MC: rejection sampler over n draws)",
              {"pair", "α = Σ min", "1 − TV", "α_MC", "SE", "|Δ|/SE", "1% of α in SE", "P(miss 1%)",
               "within 1%"},
              {}};
  double identity_max = 0.0, deviation_max = 0.0;
  double head_alpha = 0.0, head_mc = 0.0, head_se = 0.0;  // case 0, the headline pair
  std::size_t weakest = cases.size();  // the pair where the document's 1% is fewest SEs
  double weakest_se_units = 0.0;
  std::vector<Expectation> mc_rows;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const double alpha = parts.alpha(c.p, c.q);
    const double alpha_tv = spec::acceptance_rate_from_tv(c.p, c.q);
    Rng rng(spec::derive_seed(ctx.seed, i));
    const auto est = spec::estimate_acceptance_rate(c.p, c.q, o.samples, rng, parts.accept);
    const double mc = est.alpha();

    identity_max = std::max(identity_max, std::abs(alpha - alpha_tv));
    const double dev_p = spec::sum_deviation(c.p), dev_q = spec::sum_deviation(c.q);
    deviation_max = std::max(deviation_max, std::abs(0.5 * (dev_p + dev_q)));

    // Standard error of a mean of n Bernoulli(alpha) acceptances, at the value theory predicts
    // (the null hypothesis; clamped so that a broken formula outside [0, 1] still yields a number).
    const double a = std::clamp(alpha, 0.0, 1.0);
    const double se = std::sqrt(a * (1.0 - a) / n);
    // What the sampler's acceptance probability can differ from the computed sum min(p, q) by in
    // float64: the categorical draw normalizes q by its stored sum (|sum q - 1|), the V-term sum
    // rounds up to (V - 1) u, p(x)/q(x) rounds by u relative and the uniform lives on a 2^-53 grid
    // (2u in all). Beside z SE it only matters where SE = 0 (alpha = 0 or 1).
    const double rounding = std::abs(dev_q) + (2.0 * v + 1.0) * u;
    const double diff = std::abs(mc - alpha);
    if (i == 0) head_alpha = alpha, head_mc = mc, head_se = se;

    Expectation e;
    e.quantity = "α_MC vs Σ min(p, q): " + c.name;
    e.source = kSource;
    e.unit = "";
    e.expected = alpha;
    e.measured = mc;
    e.tolerance = z * se + rounding;
    e.why = se > 0.0 ? fmt::format(
                           "z·SE: z = {:.2f} (Bonferroni, {} pairs, P_FA {:g}), "
                           "SE = √(α(1−α)/n) = {:.3g}; + rounding {:.1g}",
                           z, cases.size(), kFalseAlarm, se, rounding)
                     : fmt::format("SE = 0 (α = {}: the sampler is deterministic); rounding {:.1g}",
                                   a, rounding);
    mc_rows.push_back(std::move(e));

    // The document's fixed 1%, relative to alpha, measured in standard errors: how often a
    // correct sampler would miss it (normal approximation).
    const double one_pct = kDocumentRelative * a;
    const bool within = diff <= one_pct;
    Cell in_se = std::string("—"), miss = std::string("0 (exact)");
    if (se > 0.0) {
      in_se = one_pct / se;
      miss = normal_two_sided_tail(one_pct / se);
      if (weakest == cases.size() || one_pct / se < weakest_se_units)
        weakest = i, weakest_se_units = one_pct / se;
    }
    table.rows.push_back({c.name, alpha, alpha_tv, mc, se,
                          se > 0.0 ? Cell{diff / se} : Cell{std::string("—")}, in_se, miss,
                          std::string(within ? "yes" : "no")});
  }

  // 1 - TV(p, q) = sum min(p, q) holds exactly when sum p = sum q = 1: in general the difference is
  // d = (sum p + sum q)/2 - 1. In float64: sum min rounds by <= (V - 1) u, the halved L1 sum by
  // <= V u, the subtraction from 1 by u, and d (known up to ~(V + 1) u from its own float64 sum)
  // is at most the largest |d| seen: bound (3V + 2) u + max |d|.
  const double identity_tol = (3.0 * v + 2.0) * u + deviation_max;
  r.expect(
      {"Σ min(p, q) − (1 − TV(p, q)), worst of the pairs", "000 §7.2", "", 0.0, identity_tol,
       fmt::format("float64: (3V + 2)·u, V = {}, u = 2^-53, + largest |Σp + Σq − 2|/2 = {:.1g}",
                   o.vocab, deviation_max),
       identity_max, std::nullopt, ""});
  for (auto& e : mc_rows) r.expect(std::move(e));

  // Sanity [d] as the document states it, on the headline pair. It joins the verdict only where it
  // is a sound test at this n and alpha: where 1% of alpha is at least z SE, a correct sampler
  // meets it with probability >= 1 - P_FA / pairs. Below that it would fail a correct sampler by
  // chance (for small alpha, most of the time), so it is reported in a note instead, with the
  // number of draws it would need.
  const double rel = head_alpha > 0.0 ? std::abs(head_mc - head_alpha) / head_alpha
                                      : std::abs(head_mc - head_alpha);
  const double doc_in_se = head_se > 0.0 ? kDocumentRelative * head_alpha / head_se : 0.0;
  const std::string doc_quantity =
      fmt::format("|α_MC − α| / α on the headline pair, {} draws", o.samples);
  if (head_se == 0.0 || doc_in_se >= z) {
    std::string head_why = "the document's fixed criterion";
    if (head_se > 0.0)
      head_why += fmt::format(
          "; here 1% of α is {:.2f} SE (≥ z = {:.2f}): a correct sampler exceeds it with "
          "probability {:.1e}",
          doc_in_se, z, normal_two_sided_tail(doc_in_se));
    r.expect({doc_quantity, "000 §A.2 [d]", "", 0.0, kDocumentRelative, head_why, rel, std::nullopt,
              ""});
  } else {
    // n with 1% of alpha = z SE: 0.01 alpha = z sqrt(alpha (1 - alpha) / n).
    const double needed = std::ceil(z * z * (1.0 - head_alpha) /
                                    (head_alpha * kDocumentRelative * kDocumentRelative));
    r.notes.push_back(fmt::format(
        "Sanity [d] (\"within 1%\") is not part of the verdict here: at α = {:.3g} and n = {}, "
        "1% of α is {:.2f} SE (< z = {:.2f}), so a correct sampler misses it with probability "
        "{:.2g}. Measured {} = {:.3g} ({}). It becomes a sound test from --samples {:.0f}.",
        head_alpha, o.samples, doc_in_se, z, normal_two_sided_tail(doc_in_se), doc_quantity, rel,
        rel <= kDocumentRelative ? "within 1% this time" : "not within 1% this time", needed));
  }

  r.metric("alpha_theory", head_alpha);
  r.metric("alpha_mc", head_mc);
  r.metric("alpha_se", head_se);
  r.metric("relative_error", rel);
  r.metric("z_bound", z);
  r.metric("identity_max_abs_diff", identity_max);
  r.tables.push_back(std::move(table));

  r.notes.push_back(
      "Pairs: 'random' p and q are independent draws uniform on the simplex (Dirichlet(1)); the "
      "headline pair is p = αm + (1−α)a, q = αm + (1−α)b with a, b of disjoint supports, so that "
      "Σ min(p, q) = α while p(x)/q(x) takes fractional values.");
  r.notes.push_back(fmt::format(
      "seed {}: the pairs come from one generator seeded with it; pair i samples from its own "
      "stream (SplitMix64 of seed and i), so changing --samples does not change the pairs.",
      ctx.seed));
  r.notes.push_back(fmt::format(
      "Each draw is a real rejection step: x ~ q, accept with probability min(1, p(x)/q(x)), "
      "else a replacement from p' = max(0, p − q)/(1 − α). {} draws per pair, V = {}.",
      o.samples, o.vocab));
  std::string weakest_text;
  if (weakest < cases.size())
    weakest_text = fmt::format(
        " On '{}' 1% of α is {:.2f} SE: a correct sampler misses it with probability {:.2g}.",
        cases[weakest].name, weakest_se_units, normal_two_sided_tail(weakest_se_units));
  r.notes.push_back(fmt::format(
      "The document's \"within 1%\" is read as relative to α (as an absolute 0.01 it is looser). "
      "It does not scale with α or n: the smaller α, the fewer standard errors 1% of α is "
      "(column 1% of α in SE).{} kvlab's bound z·SE adapts to α and n and holds every correct "
      "pair with probability ≥ 1 − {:g} together.",
      weakest_text, kFalseAlarm));
  r.notes.push_back(
      "003 part 5 names the target q and the draft p, so its min(1, q/p) is this min(1, p/q): "
      "accept in proportion to target over draft.");
  if (ctx.dtype != Dtype::f64)
    r.notes.push_back(
        "--dtype f32 does not apply here: the check has no model arithmetic and "
        "computes probabilities in float64.");
  return r;
}

namespace {

class SpecAlphaCheck final : public Check {
 public:
  std::string name() const override { return "spec-alpha"; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "acceptance rate α = Σ min(p, q) = 1 − TV against a 100k-draw rejection sampler";
  }
  std::string description() const override {
    return "For seeded random target/draft pairs (p, q) and the edge cases p = q, disjoint "
           "supports,\n"
           "one-hot q and q(x) = 0 where p(x) > 0: α by formula, 1 − TV(p, q), and the acceptance\n"
           "rate of the real rejection sampler over --samples draws, within z standard errors\n"
           "(Bonferroni over the pairs, family false-alarm 1e-4). Also the document's sanity [d],\n"
           "'100k samples, α within 1%', and what that 1% is in standard errors on each pair.";
  }
  void bind(CLI::App& sub) override {
    sub.add_option("--samples", opts_.samples, "Rejection-sampling draws per pair (default 100000)")
        ->check(IntRange(1, spec::kMaxSamples));
    sub.add_option("--vocab", opts_.vocab, "Vocabulary size V of the pairs (default 8)")
        ->check(IntRange(2, kMaxVocabOption));
    sub.add_option("--alpha-target", opts_.alpha_target,
                   "Acceptance rate of the headline pair (default 0.7)")
        ->check(FiniteRange(0.0, 1.0));
  }
  Result run(const RunContext& ctx) override { return run_spec_alpha(opts_, ctx); }

 private:
  SpecAlphaOptions opts_;
};

}  // namespace

KVLAB_REGISTER_CHECK(60, SpecAlphaCheck);

}  // namespace kvlab::checks
