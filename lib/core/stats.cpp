#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <stdexcept>

namespace kvlab {

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median: empty");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double normal_two_sided_tail(double z) {
  if (!(z > 0.0)) return 1.0;
  return std::erfc(z / std::numbers::sqrt2);
}

double z_for_two_sided(double p) {
  if (!(p > 0.0 && p <= 1.0)) throw std::invalid_argument("z_for_two_sided: p must be in (0, 1]");
  // The tail is decreasing in z; erfc(40 / sqrt 2) underflows to ~1e-350, below any p we accept
  // (p is a double > 0 so at least ~5e-324: take the upper end where the tail is 0).
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_two_sided_tail(mid) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double bonferroni_z(double family_false_alarm, std::size_t comparisons) {
  if (comparisons == 0) throw std::invalid_argument("bonferroni_z: no comparisons");
  return z_for_two_sided(family_false_alarm / static_cast<double>(comparisons));
}

// ---- binomial tails ------------------------------------------------------------------------------

namespace {

void check_binomial(const char* who, std::int64_t n, double p) {
  if (n < 0 || !(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument(std::string(who) + ": needs n >= 0 and p in [0, 1]");
}

void check_false_alarm(const char* who, double false_alarm) {
  if (!(false_alarm > 0.0 && false_alarm <= 1.0))
    throw std::invalid_argument(std::string(who) + ": false_alarm must be in (0, 1]");
}

// log P(X = k), 0 < p < 1, 0 <= k <= n. lgamma of arguments up to ~1e9 is good to a few ulp of
// values up to ~2e10, i.e. ~1e-6 absolute in the log at worst: a relative error of the tail that
// does not matter for a test at a stated level.
double log_pmf(std::int64_t k, std::int64_t n, double p) {
  const double kd = static_cast<double>(k), nd = static_cast<double>(n);
  return std::lgamma(nd + 1.0) - std::lgamma(kd + 1.0) - std::lgamma(nd - kd + 1.0) +
         kd * std::log(p) + (nd - kd) * std::log1p(-p);
}

// Relative size of the neglected remainder at which a tail sum stops.
constexpr double kTailCut = 1e-17;

// sum_{j <= k} P(X = j) for k < (n + 1) p: walking down from k the ratio
// P(X = j - 1) / P(X = j) = j (1 - p) / ((n - j + 1) p) is below 1 and keeps falling, so what is
// left after a term t with ratio r is at most t r / (1 - r).
double lower_sum(std::int64_t k, std::int64_t n, double p) {
  double term = std::exp(log_pmf(k, n, p));
  double sum = term;
  const double odds = (1.0 - p) / p;
  for (std::int64_t j = k; j > 0 && term > 0.0; --j) {
    const double r = static_cast<double>(j) / static_cast<double>(n - j + 1) * odds;
    term *= r;
    sum += term;
    if (r < 1.0 && term * r / (1.0 - r) <= kTailCut * sum) break;
  }
  return sum;
}

// sum_{j >= k} P(X = j) for k > (n + 1) p - 1, the mirror image of lower_sum.
double upper_sum(std::int64_t k, std::int64_t n, double p) {
  double term = std::exp(log_pmf(k, n, p));
  double sum = term;
  const double odds = p / (1.0 - p);
  for (std::int64_t j = k; j < n && term > 0.0; ++j) {
    const double r = static_cast<double>(n - j) / static_cast<double>(j + 1) * odds;
    term *= r;
    sum += term;
    if (r < 1.0 && term * r / (1.0 - r) <= kTailCut * sum) break;
  }
  return sum;
}

double clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

}  // namespace

double binomial_cdf(std::int64_t k, std::int64_t n, double p) {
  check_binomial("binomial_cdf", n, p);
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p == 0.0) return 1.0;
  if (p == 1.0) return 0.0;
  const double mean_side = (static_cast<double>(n) + 1.0) * p;
  if (static_cast<double>(k) < mean_side) return clamp01(lower_sum(k, n, p));
  return clamp01(1.0 - upper_sum(k + 1, n, p));
}

double binomial_sf(std::int64_t k, std::int64_t n, double p) {
  check_binomial("binomial_sf", n, p);
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (p == 0.0) return 0.0;
  if (p == 1.0) return 1.0;
  const double mean_side = (static_cast<double>(n) + 1.0) * p - 1.0;
  if (static_cast<double>(k) > mean_side) return clamp01(upper_sum(k, n, p));
  return clamp01(1.0 - lower_sum(k - 1, n, p));
}

CountRegion binomial_acceptance_region(std::int64_t n, double p_low, double p_high,
                                       double false_alarm) {
  if (n < 1 || !(p_low >= 0.0 && p_low <= p_high && p_high <= 1.0))
    throw std::invalid_argument(
        "binomial_acceptance_region: needs n >= 1 and 0 <= p_low <= p_high <= 1");
  check_false_alarm("binomial_acceptance_region", false_alarm);
  const double tail = 0.5 * false_alarm;
  CountRegion r;
  // lo: the smallest k with P(X <= k) > tail (P(X <= n) = 1 > tail, so one exists).
  std::int64_t a = 0, b = n;
  while (a < b) {
    const std::int64_t mid = a + (b - a) / 2;
    if (binomial_cdf(mid, n, p_low) > tail)
      b = mid;
    else
      a = mid + 1;
  }
  r.lo = a;
  // hi: the largest k with P(X >= k) > tail (P(X >= 0) = 1 > tail).
  a = 0, b = n;
  while (a < b) {
    const std::int64_t mid = a + (b - a + 1) / 2;
    if (binomial_sf(mid, n, p_high) > tail)
      a = mid;
    else
      b = mid - 1;
  }
  r.hi = a;
  return r;
}

// ---- Bernstein -------------------------------------------------------------------------------------

double bernstein_radius(double variance, double b, std::int64_t n, double false_alarm) {
  if (n < 1 || !(variance >= 0.0) || !std::isfinite(variance) || !(b >= 0.0) || !std::isfinite(b))
    throw std::invalid_argument(
        "bernstein_radius: needs n >= 1 and finite, non-negative variance and b");
  check_false_alarm("bernstein_radius", false_alarm);
  const double log_term = std::log(2.0 / false_alarm);
  const double nd = static_cast<double>(n);
  const double linear = b * log_term / (3.0 * nd);
  return linear + std::sqrt(linear * linear + 2.0 * variance * log_term / nd);
}

std::int64_t bernstein_min_samples(double variance, double b, double false_alarm) {
  if (!(b > 0.0)) throw std::invalid_argument("bernstein_min_samples: b must be > 0");
  (void)bernstein_radius(variance, b, 1, false_alarm);  // validates the rest
  // t(n) < b  <=>  n > 2 L (variance / b² + 1/3)  (square both sides of the closed form).
  const double log_term = std::log(2.0 / false_alarm);
  auto n = static_cast<std::int64_t>(std::floor(2.0 * log_term * (variance / (b * b) + 1.0 / 3.0))) + 1;
  n = std::max<std::int64_t>(n, 1);
  while (bernstein_radius(variance, b, n, false_alarm) >= b) ++n;  // rounding at the boundary
  while (n > 1 && bernstein_radius(variance, b, n - 1, false_alarm) < b) --n;
  return n;
}

}  // namespace kvlab

namespace kvlab {

double chi_square_sf(double x, double df) {
  if (!(df >= 1.0) || !std::isfinite(df) || !(x >= 0.0) || !std::isfinite(x))
    throw std::invalid_argument("chi_square_sf: needs df >= 1 and finite x >= 0");
  const double a = df / 2.0, z = x / 2.0;
  if (z == 0.0) return 1.0;
  const double log_prefix = a * std::log(z) - z - std::lgamma(a);
  if (z < a + 1.0) {  // series for P(a, z); Q = 1 - P
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= z / (a + n);
      sum += term;
      if (std::abs(term) < std::abs(sum) * 1e-16) break;
    }
    return std::max(0.0, 1.0 - sum * std::exp(log_prefix));
  }
  // Continued fraction for Q(a, z) (modified Lentz).
  const double tiny = 1e-300;
  double b = z + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1.0) < 1e-16) break;
  }
  return std::exp(log_prefix) * h;
}

double chi_square_quantile_upper(double level, double df) {
  if (!(df >= 1.0) || !std::isfinite(df) || !(level > 0.0 && level < 1.0))
    throw std::invalid_argument("chi_square_quantile_upper: needs df >= 1 and level in (0, 1)");
  double lo = 0.0, hi = df + 10.0;
  while (chi_square_sf(hi, df) > level) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chi_square_sf(mid, df) > level ? lo : hi) = mid;
  }
  return hi;
}

double tv_bound_bhc(std::int64_t support, std::int64_t n, double false_alarm) {
  return 0.5 * std::sqrt(2.0 * (static_cast<double>(support) * std::log(2.0) + std::log(1.0 / false_alarm)) /
                         static_cast<double>(n));
}

LawFit fit_to_law(const std::vector<std::int64_t>& counts, const std::vector<double>& law, std::int64_t n,
                  double level) {
  LawFit f;
  const double nd = static_cast<double>(n);
  double pool_e = 0.0, pool_o = 0.0;
  std::vector<std::pair<double, double>> cells;  // (expected, observed)
  for (std::size_t i = 0; i < law.size(); ++i) {
    const double o = static_cast<double>(counts[i]);
    f.tv += 0.5 * std::abs(o / nd - law[i]);
    const double e = law[i] * nd;
    if (e < 5.0) pool_e += e, pool_o += o;
    else cells.emplace_back(e, o);
  }
  if (pool_e >= 5.0 || cells.empty()) cells.emplace_back(pool_e, pool_o);
  else if (pool_e > 0.0 || pool_o > 0.0) cells.back().first += pool_e, cells.back().second += pool_o;
  for (const auto& [e, o] : cells)
    f.chi2 += e > 0.0 ? (o - e) * (o - e) / e : (o > 0.0 ? INFINITY : 0.0);
  f.df = std::max(1.0, static_cast<double>(cells.size()) - 1.0);
  f.critical = chi_square_quantile_upper(level, f.df);
  return f;
}

}  // namespace kvlab
