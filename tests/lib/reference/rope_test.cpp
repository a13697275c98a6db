// lib/reference/rope.hpp: the RoPE matrix and the relative score, against values worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "attention/gqa.hpp"
#include "reference/rope.hpp"

namespace reference_rope_test {

using namespace kvlab;

TEST_CASE("reference RoPE matrix: rotate-half pairs, angle p·θ^(−2i/d)") {
  // d = 4, θ = 4: pair 0 (entries 0, 2) turns by p, pair 1 (entries 1, 3) by p·4^(−1/2) = p/2.
  const double pi = std::numbers::pi;
  const Mat<double> r = reference::rope_matrix(4, pi, 4.0);
  // Pair 0 by π: cos −1, sin 0. Pair 1 by π/2: cos 0, sin 1.
  CHECK(r(0, 0) == -1.0);
  CHECK(r(2, 2) == -1.0);
  CHECK(std::abs(r(0, 2)) < 1e-15);
  CHECK(std::abs(r(1, 1)) < 1e-15);
  CHECK(r(1, 3) == -1.0);  // −sin(π/2)
  CHECK(r(3, 1) == 1.0);
  CHECK(r(0, 1) == 0.0);   // pairs do not mix
  CHECK(r(3, 0) == 0.0);
  // Position 0 is the identity; R_tᵀR_s = R_{s−t}.
  CHECK(reference::rope_matrix(4, 0.0, 10000.0) == Mat<double>::Identity(4, 4));
  const Mat<double> rel = reference::rope_matrix(8, 3.0, 100.0).transpose() * reference::rope_matrix(8, 7.0, 100.0);
  CHECK((rel - reference::rope_matrix(8, 4.0, 100.0)).cwiseAbs().maxCoeff() < 1e-14);
}

TEST_CASE("reference RoPE score: qᵀR_Δk in closed form") {
  // d = 2, θ irrelevant (one pair at angle Δ): q = (1, 0), k = (0, 1) gives qᵀR_Δk = −sin Δ.
  Vec<double> q(2), k(2);
  q << 1, 0;
  k << 0, 1;
  CHECK(reference::rope_relative_score(q, k, std::numbers::pi / 2, 10000.0) == -1.0);
  CHECK(reference::rope_relative_score(q, q, 0.0, 10000.0) == 1.0);
  // Agrees with the matrix on a d = 4 case.
  Vec<double> a(4), b(4);
  a << 1, 2, 3, 4;
  b << -1, 0.5, 2, 1;
  const double by_matrix = a.dot(reference::rope_matrix(4, 5.0, 10.0) * b);
  CHECK(reference::rope_relative_score(a, b, 5.0, 10.0) == doctest::Approx(by_matrix).epsilon(1e-14));
}

TEST_CASE("applied RoPE matrix: the library's apply_rope against the written-out R_p") {
  const auto rope = [](Mat<double>& x, int h, int d, int p, double theta) { apply_rope<double>(x, h, d, p, theta); };
  const Mat<double> applied = reference::applied_rope_matrix(rope, 8, 5, 10000.0);
  CHECK((applied - reference::rope_matrix(8, 5.0, 10000.0)).cwiseAbs().maxCoeff() < 1e-14);
  // A rope that does nothing reads as the identity.
  const auto none = [](Mat<double>&, int, int, int, double) {};
  CHECK(reference::applied_rope_matrix(none, 4, 3, 10000.0) == Mat<double>::Identity(4, 4));
}

}  // namespace reference_rope_test
