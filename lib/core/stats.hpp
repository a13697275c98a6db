// Small statistics kvlab's Monte Carlo checks share: the normal tail, the z a false-alarm
// probability implies, and the Bonferroni split of that probability over several comparisons.
//
// A statistical check compares an estimate with the value theory predicts and passes when the
// difference is within z standard errors. z is not picked by eye: it follows from the probability
// of a false alarm (a correct implementation reported as failing) the check accepts, split over
// every comparison the check makes (Bonferroni: m comparisons, each at probability P/m, so the
// chance that any one of them fires by accident is at most P whatever their dependence).
#pragma once

#include <cstddef>

namespace kvlab {

/// P(|Z| > z) for a standard normal Z, z >= 0 (erfc(z / sqrt 2)). Returns 1 for z <= 0.
double normal_two_sided_tail(double z);

/// The z with P(|Z| > z) = p, for p in (0, 1]; bisection on normal_two_sided_tail to ~1e-12
/// relative. Throws std::invalid_argument for p outside (0, 1] (a programming error, not input).
double z_for_two_sided(double p);

/// The z that keeps the chance of any false alarm among `comparisons` two-sided z-tests at most
/// `family_false_alarm` (Bonferroni): z_for_two_sided(family_false_alarm / comparisons).
/// Throws std::invalid_argument for comparisons == 0 or a probability outside (0, 1].
double bonferroni_z(double family_false_alarm, std::size_t comparisons);

}  // namespace kvlab
