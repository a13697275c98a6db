#include "spec/distribution.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {

void validate_distribution(const std::string& field, Dist p, double tolerance) {
  if (p.empty() || p.size() > kMaxVocab)
    throw InputError(
        fmt::format("{}: must have 1 to {} entries (got {})", field, kMaxVocab, p.size()));
  double sum = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i]))
      throw InputError(
          fmt::format("{}: entry {} is {}; probabilities must be finite", field, i, p[i]));
    if (p[i] < 0.0)
      throw InputError(
          fmt::format("{}: entry {} is negative ({}); probabilities must be >= 0", field, i, p[i]));
    sum += p[i];
  }
  if (!(std::abs(sum - 1.0) <= tolerance))
    throw InputError(
        fmt::format("{}: sums to {:.17g}; must be 1 within {:g}", field, sum, tolerance));
}

void validate_pair(Dist p, Dist q, double tolerance) {
  validate_distribution("p (target distribution)", p, tolerance);
  validate_distribution("q (draft distribution)", q, tolerance);
  if (p.size() != q.size())
    throw InputError(
        fmt::format("p, q (target and draft distributions): must cover the same vocabulary (got {} "
                    "and {} entries)",
                    p.size(), q.size()));
}

double sum_deviation(Dist p) {
  double sum = 0.0;
  for (double x : p) sum += x;
  return sum - 1.0;
}

std::vector<double> random_distribution(std::size_t size, Rng& rng) {
  require_range("size", static_cast<long long>(size), 1, static_cast<long long>(kMaxVocab));
  std::vector<double> p(size);
  double sum = 0.0;
  for (auto& x : p) {
    // Exp(1) by inversion; 1 - u lies in (0, 1], and the redraw (probability 2^-53) keeps every
    // entry > 0.
    do x = -std::log(1.0 - rng.uniform());
    while (x == 0.0);
    sum += x;
  }
  for (auto& x : p) x /= sum;
  return p;
}

std::vector<double> one_hot(std::size_t size, std::size_t index) {
  require_range("size", static_cast<long long>(size), 1, static_cast<long long>(kMaxVocab));
  require_range("index", static_cast<long long>(index), 0, static_cast<long long>(size) - 1);
  std::vector<double> p(size, 0.0);
  p[index] = 1.0;
  return p;
}

std::pair<std::vector<double>, std::vector<double>> pair_with_acceptance(double alpha,
                                                                         std::size_t vocab,
                                                                         Rng& rng) {
  require_finite_range("alpha", alpha, 0.0, 1.0);
  require_range("vocab", static_cast<long long>(vocab), 2, static_cast<long long>(kMaxVocab));
  const std::size_t half = vocab / 2;
  const auto m = random_distribution(vocab, rng);
  const auto a = random_distribution(half, rng);          // on tokens [0, half)
  const auto b = random_distribution(vocab - half, rng);  // on tokens [half, vocab)
  const double rest = 1.0 - alpha;
  std::vector<double> p(vocab), q(vocab);
  for (std::size_t i = 0; i < vocab; ++i) {
    const double shared = alpha * m[i];
    p[i] = i < half ? shared + rest * a[i] : shared;
    q[i] = i < half ? shared : shared + rest * b[i - half];
  }
  return {std::move(p), std::move(q)};
}

}  // namespace kvlab::spec
