#include "spec/step_law.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {

std::vector<double> step_output_law(Dist p, Dist q, Dist proposal, const AcceptRule& rule,
                                    const ResidualFn& residual) {
  validate_pair(p, q);
  validate_distribution("proposal (draft's sampling distribution)", proposal);
  if (proposal.size() != p.size())
    throw InputError(fmt::format(
        "proposal (draft's sampling distribution): vocabulary size {} differs from p's {}",
        proposal.size(), p.size()));
  const std::size_t v = p.size();
  std::vector<double> law(v, 0.0);
  double reject = 0.0;  // Σ_y g(y) (1 − a(y)), index order
  for (std::size_t x = 0; x < v; ++x) {
    const double a = rule(p, q, x);
    law[x] = proposal[x] * a;
    reject += proposal[x] * (1.0 - a);
  }
  const std::vector<double> r = residual(p, q);
  if (r.size() != v)
    throw InputError(fmt::format("residual: returned {} entries for a vocabulary of {}", r.size(), v));
  for (std::size_t x = 0; x < v; ++x) law[x] += reject * r[x];
  return law;
}

std::vector<double> step_output_law(Dist p, Dist q) { return step_output_law(p, q, q); }

}  // namespace kvlab::spec
