// A deviation bound for sums of martingale differences whose conditional variances are known
// as the run goes (Freedman 1975, Theorem 1.6, in its Bernstein form), for the checks that compare
// what a decoding loop did with what the distributions it drew from predict, step by step.
//
// Setting. D_1, D_2, ... with E[D_i | past] = 0 and |D_i| <= b, and W_n = Σ_{i<=n} Var(D_i | past)
// the predictable variation (computed by the caller from the exact distributions). Freedman:
//   P(∃n: S_n >= t and W_n <= σ²) <= exp(−t² / (2(σ² + b t / 3))).
// W_n is random, so σ² cannot be fixed from it after the fact. kvlab stitches: the grid
// σ_k² = W_max / 2^(L − k), k = 0 .. L, with L = ceil(log2(W_max / b²)) (below b² the b t / 3 term
// dominates anyway), each at false alarm P / (L + 1); the realized W_n picks the smallest σ_k² >= W_n.
// The union over the grid and the two signs keeps P(|S_n| >= t) <= P, for every n (also a random
// number of steps), with no normal approximation. W_max must bound W_n surely.
#pragma once

#include <cstdint>

namespace kvlab {

/// The radius t with P(|S_n| >= t) <= false_alarm for the martingale above: `variation` is the
/// realized W_n (>= 0), `b` the bound on |D_i| (> 0), `max_variation` a sure upper bound on W_n
/// (>= variation). Units: those of S_n. Throws std::invalid_argument on a negative or non-finite
/// argument, b <= 0, variation > max_variation or false_alarm outside (0, 1].
double freedman_radius(double variation, double b, double max_variation, double false_alarm);

/// The number of grid points L + 1 the stitching above uses (for the `why` text).
int freedman_grid_points(double b, double max_variation);

}  // namespace kvlab
