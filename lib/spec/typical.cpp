#include "spec/typical.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {

void validate_typical(const TypicalParams& t) {
  if (!std::isfinite(t.epsilon) || t.epsilon <= 0.0 || t.epsilon > 1.0)
    throw InputError(fmt::format("epsilon: must be a finite number in (0, 1] (got {})", t.epsilon));
  if (!std::isfinite(t.delta) || t.delta <= 0.0 || t.delta > 1.0)
    throw InputError(fmt::format("delta: must be a finite number in (0, 1] (got {})", t.delta));
}

double entropy_nats(Dist p) {
  double h = 0.0;
  for (double x : p)
    if (x > 0.0) h -= x * std::log(x);
  return h;
}

double typical_threshold(Dist p, const TypicalParams& t) {
  return std::min(t.epsilon, t.delta * std::exp(-entropy_nats(p)));
}

AcceptRule typical_accept_rule(const TypicalParams& t) {
  validate_typical(t);
  return [t](Dist p, Dist /*q*/, std::size_t x) {
    return p[x] > typical_threshold(p, t) ? 1.0 : 0.0;
  };
}

std::vector<double> greedy_replacement(Dist p, Dist /*q*/) {
  std::vector<double> out(p.size(), 0.0);
  if (p.empty()) return out;
  out[static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin())] = 1.0;
  return out;
}

Verdict verify_one(Dist p, Dist q, Rng& rng, const AcceptRule& rule, const ResidualFn& replacement) {
  validate_pair(p, q);
  const std::size_t x = rng.categorical(q);
  if (rng.uniform() < rule(p, q, x)) return {x, true};
  const std::vector<double> r = replacement(p, q);
  if (r.size() != p.size())
    throw InputError(fmt::format("replacement: returned {} entries for a vocabulary of {}",
                                 r.size(), p.size()));
  return {rng.categorical(r), false};
}

}  // namespace kvlab::spec
