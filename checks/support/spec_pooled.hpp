// The pooled tokens-per-step row of the speculative checks (spec-real, spec-speedup): where one
// K's few steps give a bound wider than anything a step can emit, every K's steps are judged
// together.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/finite.hpp"
#include "core/martingale.hpp"
#include "report/result.hpp"

namespace kvlab::checks {

/// The steps of every K summed. Σ over all of them of τ − E[τ | drafts] is one martingale whose
/// increments lie in [−K_max, K_max] (000 §7.4; Freedman's inequality, core/martingale.hpp).
struct PooledSteps {
  std::int64_t steps = 0;
  double emitted = 0.0;    ///< tokens emitted
  double predicted = 0.0;  ///< Σ E[τ | drafts] over the steps
  double var = 0.0;        ///< Σ Var[τ | drafts] over the steps
  double max_var = 0.0;    ///< the largest Σ Var the run allows (for Freedman's grid)

  void add(std::int64_t k_steps, std::int64_t k_emitted, double k_predicted, double k_var, double k_max_var) {
    steps += k_steps;
    emitted += static_cast<double>(k_emitted);
    predicted += k_predicted;
    var += k_var;
    max_var += k_max_var;
  }
};

/// The row "`quantity`": tokens per step, measured Σ emitted / steps (NaN over no step), against
/// Σ E[τ | drafts] / steps within Freedman's radius at `false_alarm` over the steps, plus
/// `rounding` (tokens per step); attainable [1, K_max + 1]. `false_alarm_text` ends the why
/// ("0.0001/38").
inline Expectation pooled_tokens_row(std::string quantity, const PooledSteps& p, int k_max, double false_alarm,
                                     const std::string& false_alarm_text, double rounding = 0.0) {
  const double all_steps = static_cast<double>(std::max<std::int64_t>(p.steps, 1));
  Expectation e{std::move(quantity), "000 §7.4", "tokens/step", p.predicted / all_steps,
                freedman_radius(p.var, k_max, p.max_var, false_alarm) / all_steps + rounding,
                fmt::format("Freedman over all {} steps (increments in [−{}, {}], Σ Var = {:.3g}), false alarm {}",
                            p.steps, k_max, k_max, p.var, false_alarm_text),
                rate_or_nan(p.emitted, p.steps), std::nullopt, ""};
  e.attainable = {1.0, k_max + 1.0};
  return e;
}

}  // namespace kvlab::checks
