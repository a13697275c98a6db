// spec-residual: the residual distribution makes one rejection step exact (000 §7.3).
//
// Shows, for --pairs seeded random target/draft pairs (p, q) over --vocab tokens and the edge
// cases q(x) = 0 where p(x) > 0, p = q, disjoint supports and a one-hot (greedy) q:
//   - the document's proof, entry by entry: min(p, q) + (1 − α)·p′ = p with α = Σ min(p, q) and
//     p′ = max(0, p − q)/Σ max(0, p − q), within a float64 rounding bound derived below;
//   - the exact output law of one rejection step (draft proposes x ~ q, accept with
//     min(1, p(x)/q(x)), else draw from p′), summed in closed form over both paths, equals p
//     within its own rounding bound;
//   - the greedy-draft counterexample: V = 2, p = [0.6, 0.4], a greedy draft that always proposes
//     token 0. With q the one-hot [1, 0] the law is [0.6, 0.4]; passing the draft's soft
//     probabilities [0.8, 0.2] as q gives [0.75, 0.25], which the check reports as 0.15 away
//     from p, far beyond the bound: the closed form catches that mistake.
// Everything is closed form: no sampling, so every tolerance is a rounding bound.
// Refused (InputError, exit 2): --pairs × (--vocab + 16) over the work budget.
//
//   kvlab spec-residual [--pairs 2000] [--vocab 8] [--seed 1234]
#include "core/finite.hpp"
#include "spec_residual.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "spec/distribution.hpp"

namespace kvlab::checks::spec_residual {
namespace {

constexpr char kSource[] = "000 §7.3";
constexpr int kMaxVocabOption = 1024;
constexpr std::int64_t kMaxPairs = 1'000'000;
// Work budget: one pair costs a few passes over V plus a fixed cost worth ~16 entries; 2e7 is
// about 0.3 s of one core here.
constexpr std::int64_t kWorkPerPair = 16;
constexpr std::int64_t kWorkBudget = 20'000'000;

struct Case {
  std::string name;
  std::vector<double> p, q;
};

std::vector<Case> edge_cases(std::size_t v, Rng& rng) {
  std::vector<Case> cases;
  const std::size_t half = v / 2;
  // q(x) = 0 on the second half, where p is positive.
  std::vector<double> zq(v, 0.0);
  const auto c = spec::random_distribution(half, rng);
  std::copy(c.begin(), c.end(), zq.begin());
  cases.push_back({"q(x) = 0 where p(x) > 0", spec::random_distribution(v, rng), zq});
  auto same = spec::random_distribution(v, rng);
  cases.push_back({"p = q", same, same});
  std::vector<double> dp(v, 0.0), dq(v, 0.0);
  const auto a = spec::random_distribution(half, rng), b = spec::random_distribution(v - half, rng);
  std::copy(a.begin(), a.end(), dp.begin());
  std::copy(b.begin(), b.end(), dq.begin() + static_cast<std::ptrdiff_t>(half));
  cases.push_back({"disjoint supports", dp, dq});
  cases.push_back({"q one-hot (greedy draft)", spec::random_distribution(v, rng), spec::one_hot(v, 0)});
  cases.push_back({"p one-hot, q random", spec::one_hot(v, v - 1), spec::random_distribution(v, rng)});
  return cases;
}

// max_x |min(p, q) + (1 − α) p′ − p|, p′ from the residual under test.
double identity_error(const Case& c, const spec::ResidualFn& residual) {
  const double alpha = spec::acceptance_rate(c.p, c.q);
  const auto r = residual(c.p, c.q);
  if (r.size() != c.p.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (std::size_t x = 0; x < c.p.size(); ++x) {
    const double lhs = std::min(c.p[x], c.q[x]) + (1.0 - alpha) * r[x];
    const double e = std::abs(lhs - c.p[x]);
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

double max_abs_diff(const std::vector<double>& a, spec::Dist b) {
  double worst = 0.0;
  for (std::size_t x = 0; x < a.size(); ++x) {
    const double e = std::abs(a[x] - b[x]);
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

std::string fmt_dist(const std::vector<double>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += fmt::format("{}{:.6g}", i ? ", " : "", d[i]);
  return s + "]";
}

ResidualCase evaluate(const Case& c, const SpecResidualParts& parts) {
  return {c.name,
          spec::acceptance_rate(c.p, c.q),
          identity_error(c, parts.residual),
          max_abs_diff(spec::step_output_law(c.p, c.q, c.q, parts.accept, parts.residual), c.p),
          spec::sum_deviation(c.p),
          spec::sum_deviation(c.q),
          static_cast<int>(c.p.size())};
}

// The greedy-draft counterexample: V = 2, p = [0.6, 0.4], a greedy draft that always proposes
// token 0, its one-hot q given to the verifier (correct) or its soft probabilities (the mistake).
void greedy_counterexample(SpecResidualMeasured& m, const SpecResidualParts& parts) {
  const std::vector<double> p2{0.6, 0.4}, hot{1.0, 0.0}, soft{0.8, 0.2};
  m.greedy_one_hot = evaluate({"V = 2, greedy draft, q = one-hot [1, 0]", p2, hot}, parts);
  m.greedy_soft = evaluate({"soft q", p2, soft}, parts);
  m.law_one_hot = spec::step_output_law(p2, hot, hot, parts.accept, parts.residual);
  m.law_soft = spec::step_output_law(p2, soft, hot, parts.accept, parts.residual);
  m.greedy_soft.law_error = max_abs_diff(m.law_soft, p2);  // proposed by the one-hot draft, verified with soft q
}

void present(const SpecResidualMeasured& m, Result& r) {
  Table table{"identity and one-step law per case (random pairs: the worst, in units of its bound)",
              {"case", "α", "max |min + (1−α)p′ − p|", "identity bound", "max |law − p|", "bound"},
              {}};
  for (const ResidualCase& c : m.edges)
    table.rows.push_back({c.name, c.alpha, c.identity_error, residual_identity_bound(c), c.law_error,
                          residual_law_bound(c)});
  table.rows.push_back({fmt::format("{} random pairs (worst)", m.options.pairs), std::string("—"), m.worst_identity,
                        std::string("per pair"), m.worst_law, std::string("per pair")});
  const double ok_err = m.greedy_one_hot.law_error, ok_tol = residual_law_bound(m.greedy_one_hot);
  const double bad_err = m.greedy_soft.law_error;
  Table greedy_table{"greedy-draft counterexample: V = 2, p = [0.6, 0.4], draft always proposes 0",
                     {"q given to the verifier", "law of the emitted token", "max |law − p|", "bound",
                      "caught (beyond bound)"},
                     {}};
  greedy_table.rows.push_back({std::string("one-hot [1, 0] (correct)"), fmt_dist(m.law_one_hot), ok_err, ok_tol,
                               std::string(ok_err > ok_tol ? "yes" : "no")});
  greedy_table.rows.push_back({std::string("soft [0.8, 0.2] (mistake)"), fmt_dist(m.law_soft), bad_err, ok_tol,
                               std::string(bad_err > ok_tol ? "yes" : "no")});
  r.metric("worst_identity_abs_error", m.worst_identity);
  r.metric("worst_law_abs_error", m.worst_law);
  r.metric("worst_identity_over_bound", m.worst_identity_ratio);
  r.metric("worst_law_over_bound", m.worst_law_ratio);
  r.metric("mistaken_law_abs_error", bad_err);
  r.tables.push_back(std::move(table));
  r.tables.push_back(std::move(greedy_table));
  r.notes.push_back(fmt::format(
      "seed {}: the edge cases and then the {} random pairs come from one generator seeded with "
      "it; even pairs are independent Dirichlet(1) draws, odd pairs are built with an acceptance "
      "rate drawn uniform in [0, 1) (pair_with_acceptance). V = {}.",
      m.context.seed, m.options.pairs, m.options.vocab));
  r.notes.push_back(
      "The law of one step is summed, not sampled: P(X = x) = q(x)·min(1, p(x)/q(x)) + "
      "(Σ_y q(y)(1 − min(1, p(y)/q(y))))·p′(x). The draft's proposal distribution and the q "
      "given to the verifier must be the same distribution: a greedy draft is exact only with "
      "its one-hot q (000 §7.5), and its soft probabilities in that place bias the output.");
  r.notes.push_back(
      "Where p ≤ q everywhere (p = q, α = 1) the residual is undefined (0/0); kvlab's residual "
      "returns p there, and (1 − α) = 0 gives it no weight. Where q(x) = 0 < p(x), the token is "
      "always accepted if proposed (it never is) and reached only through the residual: no "
      "division by zero.");
}

}  // namespace

// Rounding bounds (first order in u = 2^-53; one extra u covers the second-order terms).
// identity: α's V-term sum (V − 1)u, 1 − α (u), Z = Σ max(0, p − q): V subtractions and a V-term
// sum, within V·u of Z relative to Z; it enters times m/Z ≤ 1), p′ = m/Z (u),
// (1 − α)·p′ (u), min + · (u); and in exact arithmetic (1 − α) − Z = −(Σp − 1):
//   |dev_p| + (2V + 5) u.
double residual_identity_bound(const ResidualCase& c) {
  return std::abs(c.p_sum_deviation) + (2.0 * c.vocab + 5.0) * unit_roundoff(Dtype::f64);
}
// law: accept term g(x)·min(1, p/q): 2u relative; reject mass Σ q(1 − a): 2u per term and a V-term
// sum ((V + 1)u in all), equal to Σq − α = Z + (Σq − 1) − (Σp − 1) exactly; r(x) = m/Z: (V + 2)u
// relative; product and final sum 2u: |dev_p| + |dev_q| + (2V + 8) u.
double residual_law_bound(const ResidualCase& c) {
  return std::abs(c.p_sum_deviation) + std::abs(c.q_sum_deviation) + (2.0 * c.vocab + 8.0) * unit_roundoff(Dtype::f64);
}


SpecResidualMeasured measure_spec_residual(const SpecResidualOptions& o, const RunContext& ctx,
                                           const SpecResidualParts& parts) {
  SpecResidualMeasured m{.options = o, .context = ctx};
  const auto v = static_cast<std::size_t>(o.vocab);
  Rng rng(ctx.seed);
  for (const Case& c : edge_cases(v, rng)) m.edges.push_back(evaluate(c, parts));
  for (std::int64_t i = 0; i < o.pairs; ++i) {
    Case c;
    if (i % 2 == 0) {
      c = {"random", spec::random_distribution(v, rng), spec::random_distribution(v, rng)};
    } else {
      auto [p, q] = spec::pair_with_acceptance(rng.uniform(), v, rng);
      c = {"random, built α", std::move(p), std::move(q)};
    }
    const ResidualCase e = evaluate(c, parts);
    const double id_tol = residual_identity_bound(e), law_tol = residual_law_bound(e);
    m.worst_identity_ratio = nan_max(m.worst_identity_ratio, std::isnan(e.identity_error) ? INFINITY : e.identity_error / id_tol);
    m.worst_law_ratio = nan_max(m.worst_law_ratio, std::isnan(e.law_error) ? INFINITY : e.law_error / law_tol);
    m.worst_identity = nan_max(m.worst_identity, e.identity_error);
    m.worst_law = nan_max(m.worst_law, e.law_error);
  }
  greedy_counterexample(m, parts);
  return m;
}

std::vector<Expectation> judge_spec_residual(const SpecResidualMeasured& m) {
  const double u = unit_roundoff(Dtype::f64);
  std::vector<Expectation> rows;
  for (const ResidualCase& c : m.edges) {
    rows.push_back({"min(p, q) + (1 − α)·p′ − p, max over x: " + c.name, kSource, "", 0.0, residual_identity_bound(c),
                    fmt::format("float64: |Σp − 1| + (2V + 5)·u, V = {}", m.options.vocab), c.identity_error,
                    std::nullopt, ""});
    rows.push_back({"one-step law − p, max over x: " + c.name, kSource, "", 0.0, residual_law_bound(c),
                    fmt::format("float64: |Σp − 1| + |Σq − 1| + (2V + 8)·u, V = {}", m.options.vocab), c.law_error,
                    std::nullopt, ""});
  }
  rows.push_back({fmt::format("max over {} random pairs of max |min + (1−α)p′ − p| / its bound", m.options.pairs),
                  kSource, "bounds", 0.0, 1.0,
                  "each pair against its own float64 bound |Σp − 1| + (2V + 5)·u: the ratio is at most 1",
                  m.worst_identity_ratio, std::nullopt, ""});
  rows.push_back({fmt::format("max over {} random pairs of max |law − p| / its bound", m.options.pairs), kSource,
                  "bounds", 0.0, 1.0, "each pair against its own float64 bound |Σp − 1| + |Σq − 1| + (2V + 8)·u",
                  m.worst_law_ratio, std::nullopt, ""});
  rows.push_back({"one-step law − p, max over x: " + m.greedy_one_hot.name, "000 §7.3, §7.5", "", 0.0,
                  residual_law_bound(m.greedy_one_hot), "float64: |Σp − 1| + |Σq − 1| + (2V + 8)·u, V = 2",
                  m.greedy_one_hot.law_error, std::nullopt, ""});
  // By hand: token 0 is accepted with p(0)/q(0) = 0.6/0.8 = 0.75; a rejection draws from
  // max(0, p − q) ∝ [0, 0.2], i.e. token 1: law [0.75, 0.25], 0.15 from p in each entry.
  rows.push_back({"mistaken law − p, max over x: greedy draft, soft q = [0.8, 0.2] given to the verifier",
                  "000 §7.5 (greedy-draft counterexample)", "", 0.15, residual_law_bound(m.greedy_soft) + 2.0 * u,
                  "by hand: p(0)/q(0) = 0.75 accepted, the rest goes to token 1: [0.75, 0.25]; "
                  "float64 bound of the law plus 2u for 0.75 − 0.6",
                  m.greedy_soft.law_error, std::nullopt, ""});
  return rows;
}

const CheckDef<SpecResidualOptions, SpecResidualMeasured>& spec_residual_check() {
  using O = SpecResidualOptions;
  static const CheckDef<O, SpecResidualMeasured> def{
      .spec = {.name = "spec-residual",
               .order = 200,
               .source = kSource,
               .summary = "residual p′ = max(0, p − q)/(1 − α): min(p, q) + (1 − α)·p′ = p and the one-step law "
                          "is p (closed form)",
               .claim_zh = "残差分布 p′ = max(0, p − q)/(1 − α)：min(p, q) + (1 − α)·p′ = p，一步输出分布就是 p",
               .description =
                   "For --pairs seeded random (p, q) pairs over --vocab tokens and the edge cases\n"
                   "q(x) = 0 where p(x) > 0, p = q, disjoint supports and one-hot q: the identity\n"
                   "min(p, q) + (1 − α)·p′ = p and the exact law of one rejection step, summed in closed\n"
                   "form, against p within derived float64 rounding bounds. Also a counterexample: a greedy\n"
                   "draft given its soft probabilities as q gives the law [0.75, 0.25], not [0.6, 0.4].\n"
                   "--pairs × (--vocab + 16) at most 2e7.",
               .derivation =
                   "On rejection, sample from the residual p'(x) = max(0, p(x) - q(x)) / (1 - α). The law of the token\n"
                   "emitted for one draft position is\n"
                   "  P(x) = q(x) · min(1, p(x)/q(x)) + (1 - α) · p'(x) = min(p(x), q(x)) + max(0, p(x) - q(x)) = p(x),\n"
                   "because Σ_x max(0, p - q) = 1 - Σ_x min(p, q) = 1 - α. Edge cases: q(x) = 0 with p(x) > 0 (the\n"
                   "first term is 0, the residual carries all of p(x)); p = q (α = 1, the residual is never used);\n"
                   "disjoint supports (α = 0, p' = p); a one-hot q.\n"
                   "Source: 000 §7.3.\n",
               .claim = "On a rejection the replacement is drawn from p′ = max(0, p − q)/(1 − α); then "
                        "min(p, q) + (1 − α)·p′ = p, so the token one rejection step emits has exactly the target's "
                        "law p, whatever the draft q.",
               .traits = {}},
      .options = {{"--pairs", &O::pairs, Allowed::integers(1, kMaxPairs), "Random (p, q) pairs besides the edge cases"},
                  {"--vocab", &O::vocab, Allowed::integers(2, kMaxVocabOption), "Vocabulary size V"}},
      .constraints =
          [](const O& o) {
            const double work = static_cast<double>(o.pairs) * static_cast<double>(o.vocab + kWorkPerPair);
            if (work > static_cast<double>(kWorkBudget))
              throw InputError(fmt::format(
                  "--pairs, --vocab: --pairs × (--vocab + {}) = {} × {} = {:.3g} is over the work budget of "
                  "{} (about 0.3 s of one core here); lower --pairs or --vocab",
                  kWorkPerPair, o.pairs, o.vocab + kWorkPerPair, work, kWorkBudget));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_spec_residual(o, ctx); },
      .judge = judge_spec_residual,
      .present = present};
  return def;
}

Result run_spec_residual(const SpecResidualOptions& o, const RunContext& ctx, const SpecResidualParts& parts) {
  return run_check(spec_residual_check(), o, ctx, [&parts](const SpecResidualOptions& opts, const RunContext& c) {
    return measure_spec_residual(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(spec_residual_check);

}  // namespace kvlab::checks::spec_residual
