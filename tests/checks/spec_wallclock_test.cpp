// spec-wallclock's verdict on a synthetic machine (no timing of this machine): a sound one passes,
// a speculative loop with a cost the model does not count fails the prediction, and a verify step
// that costs K + 1 decode steps (no batching) makes speculative decoding slower and fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "checks/spec_wallclock.hpp"
#include "core/error.hpp"
#include "spec/expected_tokens.hpp"

namespace check_spec_wallclock_test {

using namespace kvlab;
using checks::DraftKind;

namespace {

// A machine where a target step takes 1 s, a draft step c s and a verify of K + 1 rows `verify(K)`
// s; each run emits its tokens in steps of the expected size E[τ](α) (deterministic).
struct Synthetic {
  double extra_per_step = 0.0;  // seconds per step the cost model does not count (a broken loop)
  bool unbatched_verify = false;  // the verify step runs K + 1 decode steps

  double alpha(DraftKind k) const { return k == DraftKind::int8 ? 0.9 : k == DraftKind::int4 ? 0.7 : 0.4; }
  double c(DraftKind k) const { return k == DraftKind::int8 ? 0.27 : k == DraftKind::int4 ? 0.15 : 0.45; }
  double verify(int rows) const { return unbatched_verify ? rows : 1.0 + 0.02 * (rows - 1); }

  checks::SpecWallclockParts parts() const {
    checks::SpecWallclockParts p;
    const Synthetic self = *this;
    p.build = [](const ModelConfig&, int) {};
    p.time_baseline = [](int n) { return static_cast<double>(n); };
    p.time_spec = [self](DraftKind kind, int k, int n) {
      const double a = self.alpha(kind), tau = spec::expected_tokens(a, k);
      checks::SpecTiming t;
      t.steps = static_cast<std::int64_t>(std::ceil(n / tau));
      t.emitted = static_cast<std::int64_t>(std::llround(tau * static_cast<double>(t.steps)));
      // α = accepted / evaluated: per step, E[accepted] = τ − 1 and E[evaluated] = E[accepted] + P(reject).
      const double accepted = tau - 1.0, evaluated = accepted + (1.0 - std::pow(a, k));
      t.accepted = static_cast<std::int64_t>(std::llround(1000 * accepted));
      t.evaluated = static_cast<std::int64_t>(std::llround(1000 * evaluated));
      const double f = k + std::pow(a, k);
      t.draft_forwards = static_cast<std::int64_t>(std::llround(f * static_cast<double>(t.steps)));
      t.seconds = static_cast<double>(t.steps) * (self.verify(k + 1) + f * self.c(kind) + self.extra_per_step);
      return t;
    };
    p.time_target = [self](int rows) { return self.verify(rows); };
    p.time_draft = [self](DraftKind kind) { return self.c(kind); };
    p.target_bytes = [] { return 100e6; };
    p.draft_bytes = [self](DraftKind kind) { return 100e6 * self.c(kind); };
    return p;
  }
};

}  // namespace

TEST_CASE("spec-wallclock: holds on a sound synthetic machine; a loop with uncounted cost or an unbatched verify fails") {
  checks::SpecWallclockOptions o;
  o.new_tokens = 240;  // steps large enough that the rounding of steps stays under 1%
  o.repeats = 2;
  const checks::RunContext ctx;
  const Synthetic sound;
  const Result good = checks::run_spec_wallclock(o, ctx, sound.parts());
  CHECK(good.passed());
  // int8 at α 0.9, c 0.27: the best K, predicted and measured well above 1.
  CHECK(good.metric_value("speedup_measured_best") > 1.5);
  CHECK(good.metric_value("speedup_measured_best") ==
        doctest::Approx(good.metric_value("speedup_predicted_at_best")).epsilon(0.02));
  CHECK(good.metric_value("c") == doctest::Approx(0.27));
  CHECK(good.metric_value("alpha") == doctest::Approx(0.9).epsilon(0.01));
  for (const char* key : {"best_k", "verify_cost", "speedup_measured_best_int4", "speedup_measured_best_layer_skip"})
    CHECK_NOTHROW(good.metric_value(key));
  REQUIRE(good.tables.size() >= 1);
  CHECK(good.tables[0].rows.size() == 3 * o.ks.size());  // one row per draft kind and K
  CHECK_FALSE(good.plots.empty());

  // A busy machine: the second repeat of every speculative run takes three times as long. The
  // spread of the repeats is then too wide for the comparison to mean anything, and it fails.
  auto busy = sound.parts();
  auto calls = std::make_shared<int>(0);
  busy.time_spec = [inner = sound.parts().time_spec, calls, n_rows = 3 * o.ks.size()](DraftKind kind, int k, int n) {
    checks::SpecTiming t = inner(kind, k, n);
    if ((*calls)++ >= static_cast<int>(n_rows)) t.seconds *= 3.0;
    return t;
  };
  const Result noisy = checks::run_spec_wallclock(o, ctx, busy);
  CHECK_FALSE(noisy.passed());
  CHECK_FALSE(noisy.expectations[2].holds());
  CHECK(noisy.expectations[3].holds());  // the plain decodings were not disturbed

  // The plain decoding of one repeat disturbed (twice as long): fails on its own spread.
  auto jumpy = sound.parts();
  auto base_calls = std::make_shared<int>(0);
  jumpy.time_baseline = [base_calls](int n) { return static_cast<double>(n) * ((*base_calls)++ == 1 ? 2.0 : 1.0); };
  const Result disturbed = checks::run_spec_wallclock(o, ctx, jumpy);
  CHECK_FALSE(disturbed.passed());
  CHECK_FALSE(disturbed.expectations[3].holds());

  Synthetic slow_loop;  // one more target step per speculative step, which τ̄/(verify + f·c) does not count
  slow_loop.extra_per_step = 1.0;
  const Result slow = checks::run_spec_wallclock(o, ctx, slow_loop.parts());
  CHECK_FALSE(slow.passed());
  CHECK_FALSE(slow.expectations[1].holds());

  Synthetic unbatched;  // verify = K + 1 decode steps: speculative decoding only adds work
  unbatched.unbatched_verify = true;
  const Result worse = checks::run_spec_wallclock(o, ctx, unbatched.parts());
  CHECK_FALSE(worse.passed());
  CHECK_FALSE(worse.expectations[0].holds());
  CHECK(worse.metric_value("speedup_measured_best") < 1.0);
}

TEST_CASE("spec-wallclock: with one repeat the hygiene rows, which could not fail, are left out and the notes say so") {
  checks::SpecWallclockOptions o;
  o.new_tokens = 240;
  o.repeats = 1;
  const checks::RunContext ctx;
  const Synthetic sound;
  const Result one = checks::run_spec_wallclock(o, ctx, sound.parts());
  CHECK(one.passed());
  REQUIRE(one.expectations.size() == 3);  // the two claims, and the plain decodings (one per K) compared
  CHECK(one.expectations[2].quantity.find("plain decodings") != std::string::npos);
  const auto said = [&](const std::string& words) {
    return std::any_of(one.notes.begin(), one.notes.end(), [&](const std::string& n) { return n.find(words) != std::string::npos; });
  };
  CHECK(said("one repeat: the spread of the repeats is not judged, only that of the 4 plain decodings"));
  CHECK_FALSE(said("nothing here tells a quiet machine from a busy one"));
  CHECK(one.expectations[0].quantity.find("best of 1 repeat on each side") != std::string::npos);

  o.ks = {4};  // one plain decoding: nothing to compare it with either
  const Result single = checks::run_spec_wallclock(o, ctx, sound.parts());
  CHECK(single.expectations.size() == 2);
  CHECK(std::any_of(single.notes.begin(), single.notes.end(),
                    [](const std::string& n) { return n.find("nothing here tells a quiet machine") != std::string::npos; }));

  o.repeats = 2;  // two repeats: both rows are back
  CHECK(checks::run_spec_wallclock(o, ctx, sound.parts()).expectations.size() == 4);
}

TEST_CASE("spec-wallclock --long-context: the window draft's rows, bytes and metrics, shown beside the judged rows") {
  checks::SpecWallclockOptions o;
  o.new_tokens = 240;
  o.repeats = 2;
  o.long_context = true;
  const checks::RunContext ctx;
  const Synthetic sound;  // the long-context target and its window draft: α 0.4, c 0.45 (as layer-skip's)
  const Result r = checks::run_spec_wallclock(o, ctx, sound.parts(), sound.parts());
  CHECK(r.passed());  // the judged rows are the main case's; the long-context rows are shown
  REQUIRE(r.tables.size() >= 3);
  CHECK(r.tables[0].rows.size() == 4 * o.ks.size());  // int8, int4, layer-skip and window, per K
  CHECK(r.metric_value("c_window") == doctest::Approx(0.45));
  CHECK(r.metric_value("alpha_window") == doctest::Approx(0.4).epsilon(0.02));
  CHECK(r.metric_value("speedup_measured_best_window") ==
        doctest::Approx(r.metric_value("speedup_predicted_at_best_window")).epsilon(0.02));
  // At 4096 + 8 + 120 positions, 4 layers of 2 x 256 floats: 34.6 MB of K/V per target step; 2.1 MB
  // through the window of 4 + 252.
  CHECK(r.metric_value("long_context_kv_bytes_per_step") == doctest::Approx(4.0 * 4 * 2 * 256 * (4096 + 124 + 1)));
  CHECK(r.metric_value("long_context_kv_bytes_per_draft_step") == doctest::Approx(4.0 * 4 * 2 * 256 * 256));
  CHECK(r.metric_value("long_context_weight_bytes") == doctest::Approx(100e6));
  // Without --long-context none of it: the default run is unchanged.
  o.long_context = false;
  const Result plain = checks::run_spec_wallclock(o, ctx, sound.parts());
  CHECK(plain.tables[0].rows.size() == 3 * o.ks.size());
  CHECK_THROWS(plain.metric_value("c_window"));
}

TEST_CASE("spec-wallclock --quick keeps a --k, --d-model or --new-tokens the user gave; its own are K 2 and 4, d 512, 24 tokens") {
  const checks::RunContext ctx;
  const Synthetic sound;
  checks::SpecWallclockOptions o;
  o.quick = true;
  o.ks = {1, 3};
  const Result given = checks::run_spec_wallclock(o, ctx, sound.parts());
  REQUIRE(given.tables.size() >= 1);
  CHECK(given.tables[0].rows.size() == 3 * 2);  // K 1 and 3 for each draft kind
  CHECK(std::get<std::int64_t>(given.tables[0].rows[0][1]) == 1);
  o.ks = checks::SpecWallclockOptions{}.ks;
  const Result own = checks::run_spec_wallclock(o, ctx, sound.parts());
  CHECK(std::get<std::int64_t>(own.tables[0].rows[0][1]) == 2);
  // --d-model and --new-tokens given with --quick are kept; left at their defaults, --quick's own.
  auto parts = sound.parts();
  auto width = std::make_shared<int>(0);
  parts.build = [width](const ModelConfig& c, int) { *width = c.d_model; };
  checks::run_spec_wallclock(o, ctx, parts);
  CHECK(*width == 512);
  o.d_model = 256;
  checks::run_spec_wallclock(o, ctx, parts);
  CHECK(*width == 256);
  const auto measured = checks::measure_spec_wallclock(o, ctx, parts);
  CHECK(measured.options.new_tokens == 24);
  o.new_tokens = 40;
  CHECK(checks::measure_spec_wallclock(o, ctx, parts).options.new_tokens == 40);
}

TEST_CASE("spec-wallclock: bad options are InputErrors naming the option") {
  const checks::RunContext ctx;
  const Synthetic sound;
  checks::SpecWallclockOptions o;
  o.ks = {0};
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts()), doctest::Contains("--k"), InputError);
  o = {};
  o.ks.clear();
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts()), doctest::Contains("--k"), InputError);
  o = {};
  o.skip_layers = o.layers;
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts()), doctest::Contains("--skip-layers"), InputError);
  o = {};
  o.d_model = 800;
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts()), doctest::Contains("--d-model"), InputError);
  o = {};
  o.long_context = true;
  o.context = 512, o.sink = 4, o.recent = 508;  // the window covers the context: the draft is the target
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts(), sound.parts()), doctest::Contains("--recent"),
                       InputError);
  o.context = 100;
  CHECK_THROWS_WITH_AS(checks::run_spec_wallclock(o, ctx, sound.parts(), sound.parts()), doctest::Contains("--context"),
                       InputError);
  o = {};
  o.long_context = true;
  CHECK_THROWS_AS(checks::run_spec_wallclock(o, ctx, sound.parts()), std::invalid_argument);  // no long-context parts
}

TEST_CASE("spec-wallclock judge: each row fails on its wrong number, and on a NaN") {
  // A hand-made measurement: int8 at K = 4, 1.6x measured against 1.55x predicted, repeats 1.58-1.62;
  // layer-skip slower than the target alone; two plain decodings 5% apart.
  checks::SpecWallclockMeasured m;
  checks::SpecWallclockRow int8{DraftKind::int8, 4};
  int8.speedups = {1.58, 1.62}, int8.predicted = 1.55, int8.measured = 1.6, int8.lo = 1.58, int8.hi = 1.62;
  checks::SpecWallclockRow skip{DraftKind::layer_skip, 4};
  skip.speedups = {0.4, 0.41}, skip.predicted = 0.4, skip.measured = 0.41, skip.lo = 0.4, skip.hi = 0.41;
  m.rows = {skip, int8};
  m.plain = {1.0, 1.05};
  auto holds = [](const checks::SpecWallclockMeasured& x) {
    std::vector<bool> h;
    for (const Expectation& e : checks::judge_spec_wallclock(x)) h.push_back(e.holds());
    return h;
  };
  CHECK(holds(m) == std::vector<bool>{true, true, true, true});
  auto with = [&m](auto change) { checks::SpecWallclockMeasured x = m; change(x); return x; };
  // Slower than the target alone at every K: the claim fails.
  CHECK_FALSE(holds(with([](auto& x) { x.rows[1].measured = 0.9, x.rows[1].predicted = 0.9; }))[0]);
  // Measured far from the prediction: the second row fails.
  CHECK_FALSE(holds(with([](auto& x) { x.rows[1].predicted = 2.5; }))[1]);
  // Repeats that disagree, plain decodings that disagree: the hygiene rows fail.
  CHECK_FALSE(holds(with([](auto& x) { x.rows[1].lo = 0.5, x.rows[1].hi = 1.6; }))[2]);
  CHECK_FALSE(holds(with([](auto& x) { x.plain = {1.0, 1.4}; }))[3]);
  // NaN anywhere a row reads it fails that row; a NaN speedup is never the best.
  CHECK_FALSE(holds(with([](auto& x) { x.rows[1].predicted = std::nan(""); }))[1]);
  CHECK_FALSE(holds(with([](auto& x) { x.plain = {1.0, std::nan("")}; }))[3]);
  CHECK_FALSE(holds(with([](auto& x) { x.plain = {std::nan(""), 1.0}; }))[3]);
  const auto nan_best = holds(with([](auto& x) { x.rows[1].measured = std::nan(""); }));
  CHECK_FALSE(nan_best[0]);  // the best is then layer-skip at 0.41x
  const auto all_nan = holds(with([](auto& x) { x.rows[0].measured = x.rows[1].measured = std::nan(""); }));
  CHECK_FALSE(all_nan[0]);
  CHECK_FALSE(all_nan[1]);
}

}  // namespace check_spec_wallclock_test
