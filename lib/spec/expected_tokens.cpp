#include "spec/expected_tokens.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {
namespace {

// alpha^n by n - 1 multiplications (n >= 1), 1 for n = 0: a fixed rounding count, the same on
// every platform (std::pow's accuracy is the library's business).
double ipow(double alpha, int n) {
  double r = 1.0;
  for (int i = 0; i < n; ++i) r *= alpha;
  return r;
}

void validate(double alpha, int k) {
  validate_alpha(alpha);
  validate_draft_tokens(k);
}

}  // namespace

void validate_alpha(double alpha) { require_finite_range("alpha", alpha, 0.0, 1.0); }

void validate_draft_tokens(int k) {
  require_range("K (draft tokens per step)", k, 0, kMaxDraftTokens);
}

double expected_tokens(double alpha, int k) {
  validate(alpha, k);
  if (alpha <= 0.5) return (1.0 - ipow(alpha, k + 1)) / (1.0 - alpha);
  double s = 1.0;  // Horner: 1 + alpha (1 + alpha (1 + ...)), K times
  for (int j = 0; j < k; ++j) s = 1.0 + alpha * s;
  return s;
}

double expected_tokens_closed_form(double alpha, int k) {
  validate(alpha, k);
  return (1.0 - ipow(alpha, k + 1)) / (1.0 - alpha);
}

double expected_tokens_by_definition(double alpha, int k) {
  validate(alpha, k);
  double sum = 0.0, alpha_j = 1.0;
  for (int j = 0; j < k; ++j) {
    sum += alpha_j * (1.0 - alpha) * (j + 1);
    alpha_j *= alpha;
  }
  return sum + alpha_j * (k + 1);
}

std::vector<double> tokens_per_step_law(double alpha, int k) {
  validate(alpha, k);
  std::vector<double> law(static_cast<std::size_t>(k) + 1);
  double alpha_j = 1.0;
  for (int j = 0; j < k; ++j) {
    law[j] = alpha_j * (1.0 - alpha);
    alpha_j *= alpha;
  }
  law[k] = alpha_j;
  return law;
}

double tokens_per_step_variance(double alpha, int k) {
  const auto law = tokens_per_step_law(alpha, k);
  const double mean = expected_tokens(alpha, k);
  double var = 0.0;
  for (std::size_t t = 0; t < law.size(); ++t) {
    const double d = static_cast<double>(t + 1) - mean;
    var += law[t] * d * d;
  }
  return var;
}

double speedup(double alpha, int k, double c) {
  validate(alpha, k);
  if (!std::isfinite(c) || c < 0.0)
    throw InputError(
        fmt::format("c (draft/target cost ratio): must be a finite number >= 0 (got {})", c));
  return expected_tokens(alpha, k) / (1.0 + k * c);
}

double alpha_for_expected_tokens(double tokens, int k) {
  require_range("K (draft tokens per step)", k, 1, kMaxDraftTokens);
  require_finite_range("tokens", tokens, 1.0, k + 1.0);
  double lo = 0.0, hi = 1.0;  // E(lo) <= tokens <= E(hi)
  while (hi - lo > 1e-15) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;  // adjacent doubles
    (expected_tokens(mid, k) < tokens ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace kvlab::spec
