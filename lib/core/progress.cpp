#include "core/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace kvlab {

ProgressClock steady_progress_clock() {
  return [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 1) return "1 s";  // "about 1 s" reads better than "about < 1 s"
  if (seconds < 100) return fmt::format("{:.0f} s", seconds);
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  if (s < 2 * 86400) return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
  return fmt::format("{:.1f} days", seconds / 86400);
}

Progress::Progress(std::string label, double total, std::string unit, std::FILE* out, bool terminal,
                   ProgressClock clock)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      out_(out),
      terminal_(terminal && out != nullptr),
      clock_(std::move(clock)),
      start_(clock_()) {}

Progress Progress::on_stderr(std::string label, double total, std::string unit) {
  return Progress(std::move(label), total, std::move(unit), stderr, isatty(STDERR_FILENO) == 1);
}

void Progress::announce(const std::string& text) {
  if (!terminal_) return;
  std::fprintf(out_, "%s: %s\n", label_.c_str(), text.c_str());
  std::fflush(out_);
}

std::optional<double> Progress::rate(double done) const {
  const double elapsed = clock_() - start_;
  if (!(done > 0) || !(elapsed > 0)) return std::nullopt;
  return done / elapsed;
}

std::optional<double> Progress::seconds_left(double done) const {
  const auto r = rate(done);
  if (!r) return std::nullopt;
  return std::max(0.0, (total_ - done) / *r);
}

std::string Progress::line(double done, const std::string& detail) const {
  constexpr int kBar = 24;
  const double f = total_ > 0 ? std::clamp(done / total_, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(f * kBar);
  std::string s = fmt::format("{} [{}{}] {:3.0f}%", label_, std::string(static_cast<std::size_t>(filled), '#'),
                              std::string(static_cast<std::size_t>(kBar - filled), ' '), 100.0 * f);
  const auto r = rate(done);
  if (!unit_.empty() && r) s += fmt::format("  {:.3g} {}/s", *r, unit_);
  if (!detail.empty()) s += "  " + detail;
  if (done >= total_)
    s += fmt::format("  done in {}", duration_text(clock_() - start_));
  else if (const auto left = seconds_left(done))
    s += fmt::format("  about {} left", duration_text(*left));
  else
    s += "  (time left: after the first step)";
  return s;
}

void Progress::update(double done, const std::string& detail) {
  if (!terminal_) return;
  last_done_ = done;
  last_detail_ = detail;
  const double now = clock_();
  if (last_draw_ >= 0 && now - last_draw_ < 0.2 && done < total_) return;
  last_draw_ = now;
  std::string s = line(done, detail);
  const std::size_t width = s.size();
  if (width < drawn_width_) s += std::string(drawn_width_ - width, ' ');  // wipe the longer line before
  drawn_width_ = width;
  std::fprintf(out_, "\r%s", s.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (!terminal_ || last_draw_ < 0) return;
  last_draw_ = -1.0;  // draw the last state whatever the throttle says
  update(last_done_, last_detail_);
  std::fprintf(out_, "\n");
  std::fflush(out_);
  last_draw_ = -1.0;
}

}  // namespace kvlab
