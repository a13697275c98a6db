// core/progress: the time-left arithmetic on an injected clock, and silence off a terminal.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "core/progress.hpp"

namespace core_progress_test {

namespace {

// A clock the test moves by hand.
struct FakeClock {
  double now = 1000.0;
  kvlab::ProgressClock fn() {
    return [this] { return now; };
  }
};

// What `write` printed to a temporary FILE*.
template <class F>
std::string captured(F write) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  write(f);
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  std::fclose(f);
  return s;
}

}  // namespace

TEST_CASE("progress: rate and time left from the work done and the clock") {
  FakeClock clock;
  const kvlab::Progress p("perplexity", 100, "windows", nullptr, false, clock.fn());
  CHECK_FALSE(p.rate(0).has_value());         // no work yet: no rate, no estimate
  CHECK_FALSE(p.seconds_left(10).has_value());  // no time yet
  clock.now += 20;
  CHECK(*p.rate(10) == doctest::Approx(0.5));
  CHECK(*p.seconds_left(10) == doctest::Approx(180.0));  // 90 windows at 0.5 per second
  clock.now += 180;
  CHECK(*p.seconds_left(100) == 0.0);
  CHECK(*p.seconds_left(120) == 0.0);  // never negative
}

TEST_CASE("progress: a phase after the counted steps keeps the time left above 0 (train --steps 200)") {
  // 200 training steps of 3 work units each, then a validation pass of 90 units that reports no
  // progress of its own: after the last step the time left is the validation's, not 0.
  FakeClock clock;
  const double step = 3.0, validation = 90.0;
  kvlab::Progress p("train", 200 * step + validation, "", nullptr, false, clock.fn());
  clock.now += 100;  // 200 steps in 100 s: 6 units per second
  CHECK(*p.seconds_left(200 * step) == doctest::Approx(15.0));
  CHECK(p.line(200 * step, "").find("about 15 s left") != std::string::npos);
  clock.now += 15;
  CHECK(p.line(200 * step + validation, "").find("done in 1 min 55 s") != std::string::npos);
}

TEST_CASE("progress: the line shows the rate in the caller's unit and the caller's detail") {
  FakeClock clock;
  const kvlab::Progress p("perplexity", 100, "windows", nullptr, false, clock.fn());
  CHECK(p.line(0, "").find("time left: after the first step") != std::string::npos);
  clock.now += 4;
  const std::string s = p.line(50, "f64");
  CHECK(s.rfind("perplexity [############            ]  50%", 0) == 0);
  CHECK(s.find("12.5 windows/s") != std::string::npos);
  CHECK(s.find("f64") != std::string::npos);
  CHECK(s.find("about 4 s left") != std::string::npos);
}

TEST_CASE("progress: nothing at all is written when the stream is not a terminal") {
  FakeClock clock;
  const std::string off = captured([&](std::FILE* f) {
    kvlab::Progress p("train", 10, "steps", f, false, clock.fn());
    CHECK_FALSE(p.active());
    p.announce("about 2 min");
    for (int i = 1; i <= 10; ++i) clock.now += 1, p.update(i, "loss 2.0");
    p.finish();
  });
  CHECK(off.empty());
  const std::string on = captured([&](std::FILE* f) {
    kvlab::Progress p("train", 10, "steps", f, true, clock.fn());
    p.announce("about 2 min");
    for (int i = 1; i <= 10; ++i) clock.now += 1, p.update(i, "loss 2.0");
    p.finish();
  });
  CHECK(on.rfind("train: about 2 min\n", 0) == 0);
  CHECK(on.find("\rtrain [") != std::string::npos);
  CHECK(on.find("1 steps/s") != std::string::npos);
  CHECK(on.back() == '\n');
}

TEST_CASE("progress: redraws at most every 0.2 s of the clock, and always at the end") {
  FakeClock clock;
  const std::string s = captured([&](std::FILE* f) {
    kvlab::Progress p("bench", 1000, "", f, true, clock.fn());
    for (int i = 1; i <= 1000; ++i) clock.now += 0.001, p.update(i);  // 1 s in all
    p.finish();
  });
  std::size_t draws = 0;
  for (char c : s) draws += c == '\r';
  CHECK(draws >= 5);
  CHECK(draws <= 8);  // ~5 throttled draws, the last step and finish()
}

TEST_CASE("progress: durations for people") {
  CHECK(kvlab::duration_text(0.3) == "1 s");
  CHECK(kvlab::duration_text(40) == "40 s");
  CHECK(kvlab::duration_text(200) == "3 min 20 s");
  CHECK(kvlab::duration_text(3900) == "1 h 05 min");
  CHECK(kvlab::duration_text(-1) == "?");
}

}  // namespace core_progress_test
