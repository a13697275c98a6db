#include "spec/rejection.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "spec/rejection_detail.hpp"

namespace kvlab::spec {
namespace detail {

std::size_t sample_residual(Dist p, Dist q, Rng& rng) {
  // Unnormalized max(0, p - q): Rng::categorical divides by the sum itself, so this draws from
  // residual_distribution(p, q) without a second pass. All zero means p = q (alpha = 1), where a
  // rejection can only come from rounding: draw from p, as residual_distribution defines.
  std::vector<double> w(p.size());
  bool any = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    w[i] = std::max(0.0, p[i] - q[i]);
    any = any || w[i] > 0.0;
  }
  return any ? rng.categorical(w) : rng.categorical(p);
}

Verdict accept_or_resample(Dist p, Dist q, std::size_t x, Rng& rng, const AcceptRule& rule) {
  if (rng.uniform() < rule(p, q, x)) return {x, true};
  return {sample_residual(p, q, rng), false};
}

StepOutcome verify_draft(std::span<const Dist> target, std::span<const Dist> draft,
                         std::span<const std::size_t> drafts, Rng& rng, const AcceptRule& rule) {
  const std::size_t k = drafts.size();
  for (std::size_t i = 0; i < k; ++i) {
    const Verdict v = accept_or_resample(target[i], draft[i], drafts[i], rng, rule);
    if (!v.accepted) return {i, v.token, false};
  }
  return {k, rng.categorical(target[k]), true};
}

}  // namespace detail

namespace {

void check_token(const char* field, std::size_t x, std::size_t vocab) {
  if (x >= vocab)
    throw InputError(
        fmt::format("{}: token id {} is outside the vocabulary [0, {})", field, x, vocab));
}

}  // namespace

Verdict accept_or_resample(Dist p, Dist q, std::size_t x, Rng& rng, const AcceptRule& rule) {
  validate_pair(p, q);
  check_token("x (draft token)", x, p.size());
  return detail::accept_or_resample(p, q, x, rng, rule);
}

Verdict rejection_step(Dist p, Dist q, Rng& rng, const AcceptRule& rule) {
  validate_pair(p, q);
  return detail::accept_or_resample(p, q, rng.categorical(q), rng, rule);
}

StepOutcome verify_draft(std::span<const Dist> target, std::span<const Dist> draft,
                         std::span<const std::size_t> drafts, Rng& rng, const AcceptRule& rule) {
  const std::size_t k = drafts.size();
  if (target.size() != k + 1)
    throw InputError(
        fmt::format("target: needs K + 1 = {} distributions for K = {} drafts (got {})", k + 1, k,
                    target.size()));
  if (draft.size() != k)
    throw InputError(fmt::format("draft: needs K = {} distributions (got {})", k, draft.size()));
  const std::size_t vocab = target[0].size();
  for (std::size_t i = 0; i <= k; ++i)
    if (target[i].size() != vocab || (i < k && draft[i].size() != vocab))
      throw InputError(
          fmt::format("target, draft: position {} has a vocabulary size other than {}", i, vocab));
  for (std::size_t i = 0; i < k; ++i) check_token("drafts", drafts[i], vocab);
  return detail::verify_draft(target, draft, drafts, rng, rule);
}

}  // namespace kvlab::spec
