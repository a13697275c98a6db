#include "spec/positional.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {
namespace {

void validate(std::span<const double> a) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a[i]) || a[i] < 0.0 || a[i] > 1.0)
      throw InputError(fmt::format(
          "acceptance probability: position {} is {}; must be a finite number in [0, 1]", i + 1,
          a[i]));
}

}  // namespace

std::vector<double> tokens_law_positional(std::span<const double> a) {
  validate(a);
  std::vector<double> law(a.size() + 1, 0.0);
  double reach = 1.0;  // a_1 ··· a_i: all of the first i accepted
  for (std::size_t i = 0; i < a.size(); ++i) {
    law[i] = reach * (1.0 - a[i]);
    reach *= a[i];
  }
  law[a.size()] = reach;
  return law;
}

double expected_tokens_positional(std::span<const double> a) {
  validate(a);
  double sum = 1.0, reach = 1.0;
  for (double x : a) sum += reach *= x;
  return sum;
}

double tokens_variance_positional(std::span<const double> a) {
  const auto law = tokens_law_positional(a);
  double mean = 0.0;
  for (std::size_t t = 0; t < law.size(); ++t) mean += law[t] * static_cast<double>(t + 1);
  double var = 0.0;
  for (std::size_t t = 0; t < law.size(); ++t) {
    const double d = static_cast<double>(t + 1) - mean;
    var += law[t] * d * d;
  }
  return var;
}

}  // namespace kvlab::spec
