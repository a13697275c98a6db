#include "report/plot.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "core/error.hpp"
#include "io/safe_write.hpp"

extern char** environ;

namespace kvlab {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

/// A gnuplot single-quoted string: inside one gnuplot expands nothing (no backquote command
/// substitution, no @macro, no backslash escape); the only special character is the quote itself,
/// written twice. Control characters (which would end the line) become spaces.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) ? ' ' : c;
  }
  return out + '\'';
}

/// An unlinked temporary file (it has no name to leave behind or to be raced for), close-on-exec,
/// at a descriptor >= 10; holds `text`. Throws PlotError.
int anonymous_file(const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/kvlab-plot-XXXXXX";
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) throw PlotError(fmt::format("--plot: cannot create a temporary file: {}", std::strerror(errno)));
  ::unlink(pattern.c_str());
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  if (high < 0) throw PlotError(fmt::format("--plot: {}", std::strerror(errno)));
  const char* p = text.data();
  for (std::size_t left = text.size(); left > 0;) {
    const ssize_t n = ::write(high, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(high);
      throw PlotError(fmt::format("--plot: cannot write a temporary file: {}", std::strerror(err)));
    }
    p += n, left -= static_cast<std::size_t>(n);
  }
  return high;
}

/// Everything from the start of `fd` (gnuplot's stderr, an anonymous_file).
std::string read_all(int fd) {
  std::string s;
  if (::lseek(fd, 0, SEEK_SET) != 0) return s;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);)
    if (n > 0) s.append(buf, static_cast<std::size_t>(n));
  return s;
}

/// Closes the descriptors it holds when it goes out of scope.
struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

}  // namespace

PlotTarget parse_plot_target(const std::string& value) {
  if (value == "term") return {true, {}};
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      throw InputError("--plot: the file name may not hold control characters (a newline, a tab, an escape)");
  if (!ends_with(value, ".svg") || value.size() == 4)
    throw InputError("--plot: expected 'term' (draw in the terminal) or a file name ending in .svg, got '" +
                     shown_path(value) + "'");
  return {false, value};
}

std::optional<std::string> find_gnuplot() {
  if (const char* forced = std::getenv("KVLAB_GNUPLOT"))
    return is_executable_file(forced) ? std::optional<std::string>(forced) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/gnuplot";
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string gnuplot_script(const std::vector<Plot>& plots, const PlotTarget& target) {
  std::string s = "set encoding utf8\n";
  if (target.terminal) {
    s += "set terminal dumb size 100,30\nset output\n";
  } else {
    const int height = 420 * static_cast<int>(std::max<std::size_t>(plots.size(), 1));
    // The SVG goes to gnuplot's stdout; kvlab writes the file (io/safe_write.hpp), so the user's
    // file name never reaches gnuplot.
    s += fmt::format("set terminal svg size 760,{} dynamic font 'sans,11'\nset output\n", height);
    if (plots.size() > 1) s += fmt::format("set multiplot layout {},1\n", plots.size());
  }
  s += "set termoption noenhanced\nset grid\n";
  // Twelve colours that stay apart (Okabe–Ito's, then Tol's), each with its own point shape:
  // gnuplot's own cycle repeats its colours after 8 series (spec-etau draws 11). Past 12 the
  // colours repeat, dashed.
  static constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                                             "#000000", "#882255", "#999933", "#332288", "#44AA99", "#7F7F7F"};
  constexpr int kColours = static_cast<int>(std::size(kPalette));
  for (int i = 0; i < 2 * kColours; ++i)
    s += fmt::format("set linetype {} lc rgb '{}' lw 1.5 pt {} dt {}\n", i + 1, kPalette[i % kColours], i % 13 + 1,
                     i < kColours ? 1 : 2);
  s += fmt::format("set linetype cycle {}\n", 2 * kColours);
  for (std::size_t p = 0; p < plots.size(); ++p) {
    const Plot& plot = plots[p];
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
      const auto& ser = plot.series[i];
      if (ser.x.size() != ser.y.size())
        throw std::invalid_argument(fmt::format("plot '{}', series '{}': {} x values but {} y values",
                                                plot.title, ser.title, ser.x.size(), ser.y.size()));
      s += fmt::format("$d{}_{} << EOD\n", p, i);
      for (std::size_t k = 0; k < ser.x.size(); ++k)
        if (std::isfinite(ser.x[k]) && std::isfinite(ser.y[k]))
          s += fmt::format("{:.17g} {:.17g}\n", ser.x[k], ser.y[k]);
      s += "EOD\n";
    }
    // The dumb terminal cannot rotate text and leaves a vertical y label out: there it is written
    // under the title instead.
    const bool y_in_title = target.terminal && !plot.y_label.empty();
    const std::string title = y_in_title ? quoted(plot.title) + " . \"\\n\" . " + quoted("y: " + plot.y_label)
                                         : quoted(plot.title);
    s += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\n", title, quoted(plot.x_label),
                     quoted(y_in_title ? "" : plot.y_label));
    const bool legend_ok = plot.legend.find_first_not_of("abcdefghijklmnopqrstuvwxyz ") == std::string::npos;
    // "set key default" first: a position of one plot (outside, below) must not carry over to the next.
    s += fmt::format("set key default\nset key {} box opaque\n", legend_ok ? plot.legend : "top left");
    s += plot.log_x ? "set logscale x\n" : "unset logscale x\n";
    s += plot.log_y ? "set logscale y\n" : "unset logscale y\n";
    std::string cmd = "plot ";
    int labeled = 0;
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
      const auto& ser = plot.series[i];
      const bool label = ser.style == "labeled";
      const std::string style =
          ser.style == "lines" || ser.style == "points" || label ? (label ? "points ps 1.5" : ser.style) : "linespoints";
      cmd += fmt::format("{}$d{}_{} using 1:2 with {} title {}", i ? ", " : "", p, i, style,
                         quoted(ser.title));
      // "labeled": the title written beside each point too, alternately above and below, so that
      // neighbouring points (roofline's batch 8 and 64) can each be read.
      if (label)
        cmd += fmt::format(", $d{}_{} using 1:2:({}) with labels offset char 1,{} left notitle", p, i,
                           quoted(ser.title), labeled++ % 2 == 0 ? 1 : -1);
    }
    s += plot.series.empty() ? "" : cmd + "\n";
  }
  if (!target.terminal && plots.size() > 1) s += "unset multiplot\n";
  return s;
}

std::string render_plots(const std::string& gnuplot, const std::vector<Plot>& plots,
                         const PlotTarget& target) {
  // No shell: gnuplot is started with posix_spawn, reads the script from descriptor 3
  // (/dev/fd/3), writes the drawing to a pipe on its stdout and its errors to an anonymous file.
  Fds fds;
  fds.fds.push_back(anonymous_file(gnuplot_script(plots, target)));
  fds.fds.push_back(anonymous_file(""));
  const int script = fds.fds[0], errors = fds.fds[1];
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw PlotError(fmt::format("--plot: {}", std::strerror(errno)));
  fds.fds.push_back(pipe_fds[0]);
  int write_end = pipe_fds[1];
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errors, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, script, 3);
  std::string program = gnuplot, script_arg = "/dev/fd/3";
  char* argv[] = {program.data(), script_arg.data(), nullptr};
  pid_t pid = -1;
  const int spawn_err = ::posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(write_end);
  if (spawn_err != 0)
    throw PlotError(fmt::format("--plot: cannot start {}: {}", shown_path(gnuplot), std::strerror(spawn_err)));
  std::string drawing;
  char buf[65536];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);)
    if (n > 0) drawing.append(buf, static_cast<std::size_t>(n));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::istringstream in(read_all(errors));
    std::string line, last;  // gnuplot echoes the offending line, then "script", line N: message
    while (std::getline(in, line))
      if (line.find_first_not_of(" \t^") != std::string::npos) last = line;
    throw PlotError(fmt::format("--plot: gnuplot failed ({} {}): {}",
                                WIFEXITED(status) ? "status" : "signal",
                                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                                last.empty() ? "no message" : shown_path(last)));
  }
  return drawing;
}

}  // namespace kvlab
