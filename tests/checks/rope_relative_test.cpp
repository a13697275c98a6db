// rope-relative (checks/rope_relative.cpp): passes with apply_rope; fails with interleaved pairs
// on the key side, a key one position off, or a RoPE that ignores the key's position; and its
// judge on measurements made by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attention/gqa.hpp"
#include "checks/rope_relative.hpp"
#include "core/error.hpp"

namespace check_rope_relative_test {

using namespace kvlab;

namespace {

// RoPE with interleaved pairs (2i, 2i + 1) (the GPT-J / original RoFormer layout) instead of
// rotate-half: a rotation too, but not the one the other side uses.
void interleaved_rope(Mat<double>& x, int n_heads, int d, int pos0, double theta) {
  for (int t = 0; t < x.rows(); ++t)
    for (int i = 0; i < d / 2; ++i) {
      const double a = (pos0 + t) * std::pow(theta, -2.0 * i / d), c = std::cos(a), s = std::sin(a);
      for (int h = 0; h < n_heads; ++h) {
        double& x0 = x(t, h * d + 2 * i);
        double& x1 = x(t, h * d + 2 * i + 1);
        const double a0 = x0, b0 = x1;
        x0 = a0 * c - b0 * s;
        x1 = a0 * s + b0 * c;
      }
    }
}

}  // namespace

TEST_CASE("rope-relative passes with apply_rope and fails on a broken RoPE") {
  checks::RunContext ctx;
  checks::RopeRelativeOptions o;
  const Result good = checks::run_rope_relative(o, ctx);
  CHECK(good.passed());
  CHECK(good.metric_value("max_abs_diff_shift") < 1e-9);

  checks::RopeRelativeParts interleaved_k;
  interleaved_k.rope_k = interleaved_rope;
  CHECK_FALSE(checks::run_rope_relative(o, ctx, interleaved_k).passed());

  checks::RopeRelativeParts off_by_one_k;  // k rotated as if one position later
  off_by_one_k.rope_k = [](Mat<double>& x, int h, int d, int p, double th) { apply_rope(x, h, d, p + 1, th); };
  const Result off = checks::run_rope_relative(o, ctx, off_by_one_k);
  CHECK_FALSE(off.passed());

  checks::RopeRelativeParts absolute;  // a "RoPE" that ignores the key's position: not relative
  absolute.rope_k = [](Mat<double>& x, int h, int d, int, double th) { apply_rope(x, h, d, 0, th); };
  CHECK_FALSE(checks::run_rope_relative(o, ctx, absolute).passed());

  o.head_dim = 7;
  CHECK_THROWS_WITH_AS(checks::run_rope_relative(o, ctx), doctest::Contains("--head-dim"), InputError);
  o = {};
  o.theta = NAN;
  CHECK_THROWS_WITH_AS(checks::run_rope_relative(o, ctx), doctest::Contains("--theta"), InputError);
}

TEST_CASE("rope-relative: judge fails an identity, closed form or shift off by more than its rounding bound") {
  // One pair at t = s = 0 with ‖q‖‖k‖ = 1: every angle is 0, so each bound is a few u.
  checks::RopeRelativeMeasured m;
  m.options.head_dim = 4;
  m.pairs = {{.t = 0, .s = 0, .norms = 1}};
  m.shifts = {{.offset = 1, .diff = 0}};
  auto rows = checks::judge_rope_relative(m);
  REQUIRE(rows.size() == 3);
  for (const Expectation& e : rows) CHECK(e.holds());
  const double u = std::numeric_limits<double>::epsilon() / 2;
  CHECK(rows[0].tolerance == doctest::Approx(12 * u));  // 2(e_0 + e_0) + e_0 + 2u, e_0 = 2u

  m.identity_error = 1e-13;  // a RoPE that is not a rotation by p·θ_i
  CHECK_FALSE(checks::judge_rope_relative(m)[0].holds());
  m.identity_error = 0;
  m.closed_form_error = 1e-13;
  CHECK_FALSE(checks::judge_rope_relative(m)[1].holds());
  m.closed_form_error = 0;
  m.shifts[0].diff = 1e-13;
  CHECK_FALSE(checks::judge_rope_relative(m)[2].holds());
  // Far positions widen the bound: the same 1e-13 holds when the angle reaches 10^6 rad.
  m.pairs[0] = {.t = 1'000'000, .s = 1'000'000, .norms = 1};
  CHECK(checks::judge_rope_relative(m)[2].holds());
}

}  // namespace check_rope_relative_test
