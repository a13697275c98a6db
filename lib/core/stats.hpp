// Small statistics kvlab's checks share: the mean and median of a sample; exact binomial tails and the acceptance region
// of an exact binomial test, the Bernstein bound on a mean of bounded variables, the normal tail and
// the z a false-alarm probability implies.
//
// A statistical check compares an estimate with the value theory predicts and passes when the
// difference is within a bound. The bound is not picked by eye: it follows from the probability of a
// false alarm (a correct implementation reported as failing) the check accepts, split over every
// comparison the check makes (Bonferroni: m comparisons, each at probability P/m, so the chance that
// any one of them fires by accident is at most P whatever their dependence).
//
// Which bound. A normal approximation, z standard errors, is not a bound: for a proportion near 0
// or 1, or a small sample, the real tail is far heavier than the normal one (30 draws at α = 0.999:
// a single rejection, probability 3%, is 5.8 standard errors). So kvlab uses bounds that hold for
// every n and every parameter:
//   - a count of successes (the acceptance rate): the exact binomial test, i.e. the inversion of the
//     Clopper–Pearson interval (binomial_acceptance_region);
//   - a mean of variables bounded in a known range with a known variance (tokens per step):
//     Bernstein's inequality (bernstein_radius).
// The normal functions remain for descriptive columns (how many standard errors a difference is)
// and for estimates labelled as approximate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlab {

/// The arithmetic mean of `v`, summed left to right then divided by v.size() (so a caller's own
/// loop in the same order gives the same digits); 0 for an empty vector.
double mean(const std::vector<double>& v);

/// The median of `v`: the middle value of the sorted copy, or the average of the two middle values
/// (0.5·(a + b)) for an even count. Throws std::invalid_argument for an empty vector.
double median(std::vector<double> v);

/// P(|Z| > z) for a standard normal Z, z >= 0 (erfc(z / sqrt 2)). Returns 1 for z <= 0.
double normal_two_sided_tail(double z);

/// The z with P(|Z| > z) = p, for p in (0, 1]; bisection on normal_two_sided_tail to ~1e-12
/// relative. Throws std::invalid_argument for p outside (0, 1] (a programming error, not input).
double z_for_two_sided(double p);

/// The z that keeps the chance of any false alarm among `comparisons` two-sided z-tests at most
/// `family_false_alarm` (Bonferroni): z_for_two_sided(family_false_alarm / comparisons).
/// Throws std::invalid_argument for comparisons == 0 or a probability outside (0, 1].
double bonferroni_z(double family_false_alarm, std::size_t comparisons);

/// P(X <= k) for X ~ Binomial(n, p): 0 for k < 0, 1 for k >= n. Summed term by term from the tail
/// side (the side away from the mode), so a small tail keeps its relative accuracy (~1e-7 for n
/// near 1e9, limited by lgamma; ~1e-13 for n <= 1e4). Throws std::invalid_argument for n < 0 or p
/// outside [0, 1].
double binomial_cdf(std::int64_t k, std::int64_t n, double p);

/// P(X >= k) for X ~ Binomial(n, p): 1 for k <= 0, 0 for k > n. Same accuracy and errors.
double binomial_sf(std::int64_t k, std::int64_t n, double p);

/// A range of counts [lo, hi] (inclusive).
struct CountRegion {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

/// The acceptance region of the two-sided exact binomial test at level `false_alarm`: lo is the
/// smallest count with P(X <= lo) > false_alarm / 2 under p_low, hi the largest with
/// P(X >= hi) > false_alarm / 2 under p_high (X ~ Binomial(n, ·)). For any success probability
/// p in [p_low, p_high], P(X < lo) + P(X > hi) <= false_alarm, for every n and p (no
/// approximation). A count is in the region exactly when the Clopper–Pearson interval at level
/// 1 − false_alarm around it meets [p_low, p_high]; p_low < p_high widens the region to cover a
/// p that is only known to within rounding. Throws std::invalid_argument for n < 1,
/// 0 <= p_low <= p_high <= 1 violated, or false_alarm outside (0, 1].
CountRegion binomial_acceptance_region(std::int64_t n, double p_low, double p_high,
                                       double false_alarm);

/// Bernstein's inequality for the mean of n i.i.d. variables with variance `variance` and
/// |X − E X| <= b: P(|mean − E X| >= t) <= 2 exp(−n t² / (2 variance + 2 b t / 3)). Returns the t
/// at which the right side equals `false_alarm`:
///   t = b L / (3n) + sqrt((b L / (3n))² + 2 variance L / n),  L = ln(2 / false_alarm).
/// Valid for every n >= 1 (no normal approximation). Throws std::invalid_argument for n < 1, a
/// negative or non-finite variance or b, or false_alarm outside (0, 1].
double bernstein_radius(double variance, double b, std::int64_t n, double false_alarm);

/// The smallest n at which bernstein_radius(variance, b, n, false_alarm) < b: below it the bound
/// covers the whole range the mean can move (E X ± b), so no outcome could fail the comparison.
/// About 2 L (variance / b² + 1/3) (at most 8L/3, as variance <= b²). Same errors as
/// bernstein_radius; b must be > 0.
std::int64_t bernstein_min_samples(double variance, double b, double false_alarm);

}  // namespace kvlab

namespace kvlab {

/// P(X > x) for X ~ chi-square with `df` degrees of freedom (df >= 1, x >= 0): the regularized
/// upper incomplete gamma Q(df/2, x/2), by its series below df/2 + 1 and its continued fraction
/// above (Numerical Recipes §6.2), to ~1e-14 relative. Throws std::invalid_argument for df < 1 or
/// x < 0 or non-finite.
double chi_square_sf(double x, double df);

/// The x with chi_square_sf(x, df) = level, level in (0, 1) (bisection to ~1e-12 relative).
/// Throws std::invalid_argument for df < 1 or level outside (0, 1).
double chi_square_quantile_upper(double level, double df);

/// The TV distance t that the empirical law of n draws over `support` outcomes exceeds with
/// probability at most `false_alarm`, whatever the law and n: Bretagnolle–Huber–Carol,
/// P(‖p̂ − p‖₁ ≥ ε) ≤ 2^support e^(−nε²/2), TV = ‖·‖₁/2, so t = ½·√(2(support·ln 2 + ln(1/α))/n).
/// Used by the checks that compare a sampler with an exact law (spec-exact, spec-sampler,
/// typical-acceptance, tree-verify).
double tv_bound_bhc(std::int64_t support, std::int64_t n, double false_alarm);

/// Observed counts (n draws in all) against an exact law over the same cells.
struct LawFit {
  double tv = 0.0;        ///< total-variation distance of the empirical law from `law`
  double chi2 = 0.0;      ///< Pearson's statistic over the pooled cells
  double df = 0.0;        ///< pooled cells − 1 (at least 1)
  double critical = 0.0;  ///< chi-square upper quantile at `level` for df
};

/// TV and Pearson's chi-square of `counts` against `law` (same length, n = Σ counts): cells with
/// expected count < 5 are pooled, and the pool is folded into the last kept cell when its own
/// expected count is below 5 (so draws on outcomes of probability 0 reach TV, not χ²).
LawFit fit_to_law(const std::vector<std::int64_t>& counts, const std::vector<double>& law, std::int64_t n,
                  double level);

}  // namespace kvlab
