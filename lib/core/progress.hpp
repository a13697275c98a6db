// Progress of a long command on stderr: a rate and an estimate of the time left, drawn only when
// stderr is a terminal (never in a pipe, a log file or a test), and one line up front that says
// about how long the command takes.
//
// The time left is (total − done) / (done / elapsed): the work of every phase still to come is in
// `total`, so a command whose last phase reports no progress of its own (train's validation pass)
// still shows the time it will take instead of "0 s left". Work is counted in any unit the caller
// chooses (steps, windows, FLOPs): only ratios of it are used.
//
//   Progress p = Progress::on_stderr("perplexity", windows, "windows");
//   p.announce("about 40 s on the reference machine (2052 windows of 128 tokens)");
//   for (...) p.update(++done);
//   p.finish();
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace kvlab {

/// Seconds from a fixed origin, never decreasing: what Progress reads the time from (tests inject
/// their own).
using ProgressClock = std::function<double()>;

/// std::chrono::steady_clock in seconds.
ProgressClock steady_progress_clock();

/// A duration for people: "1 s" (anything under 2 s), "40 s", "3 min 20 s", "1 h 05 min",
/// "2.1 days". Negative or non-finite input reads "?".
std::string duration_text(double seconds);

class Progress {
 public:
  /// `label` starts every line ("train"); `total` is the whole command's work in `unit` (shown in
  /// the rate, e.g. "windows"; "" shows no rate of its own, the caller's detail then carries one).
  /// Draws on `out` only when `terminal` is true; otherwise every call does nothing.
  Progress(std::string label, double total, std::string unit, std::FILE* out, bool terminal,
           ProgressClock clock = steady_progress_clock());

  /// On stderr, drawn only when stderr is a terminal (isatty).
  static Progress on_stderr(std::string label, double total, std::string unit = "");

  /// Whether anything is drawn.
  bool active() const { return terminal_; }

  /// One line, up front: "LABEL: TEXT" (e.g. "about 2 min on the reference machine ...").
  void announce(const std::string& text);

  /// `done` of the total is done (cumulative, in the unit of the constructor); `detail` is shown
  /// after the bar ("loss 2.31"). Redraws at most every 0.2 s of the clock, and at the end.
  void update(double done, const std::string& detail = "");

  /// Ends the line: the bar at its last state, then a newline (nothing when nothing was drawn).
  void finish();

  /// Work per second so far (done / elapsed); empty before any work or time has passed.
  std::optional<double> rate(double done) const;
  /// Seconds left at `done`: (total − done) / rate, at least 0; empty while the rate is unknown.
  std::optional<double> seconds_left(double done) const;
  /// The line update() draws, without the carriage return (for tests).
  std::string line(double done, const std::string& detail) const;

 private:
  std::string label_, unit_;
  double total_;
  std::FILE* out_;
  bool terminal_;
  ProgressClock clock_;
  double start_, last_draw_ = -1.0;
  std::size_t drawn_width_ = 0;
  double last_done_ = 0.0;
  std::string last_detail_;
};

}  // namespace kvlab
