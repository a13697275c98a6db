#include "spec/acceptance.hpp"

#include <algorithm>
#include <cmath>

namespace kvlab::spec {

double acceptance_rate(Dist p, Dist q) {
  validate_pair(p, q);
  double alpha = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) alpha += std::min(p[i], q[i]);
  return std::min(alpha, 1.0);  // p = q normalized to rounding can sum to 1 + 2e-16
}

double tv_distance(Dist p, Dist q) {
  validate_pair(p, q);
  double l1 = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) l1 += std::abs(p[i] - q[i]);
  return std::min(0.5 * l1, 1.0);  // disjoint supports can sum to 1 + 2e-16
}

double acceptance_rate_from_tv(Dist p, Dist q) { return 1.0 - tv_distance(p, q); }

std::vector<double> residual_distribution(Dist p, Dist q) {
  validate_pair(p, q);
  std::vector<double> r(p.size());
  double z = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    r[i] = std::max(0.0, p[i] - q[i]);
    z += r[i];
  }
  if (z == 0.0) return {p.begin(), p.end()};  // alpha = 1: rejection has probability 0
  for (auto& x : r) x /= z;
  return r;
}

double exact_accept_probability(Dist p, Dist q, std::size_t x) {
  if (p[x] <= 0.0) return 0.0;
  if (p[x] >= q[x]) return 1.0;
  return p[x] / q[x];
}

}  // namespace kvlab::spec
