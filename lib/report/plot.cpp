#include "report/plot.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

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

/// A gnuplot double-quoted string: backslash and double quote escaped; control characters
/// (which would end the line) become spaces.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return out + '"';
}

/// A temporary file holding `text`; removed by the destructor.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/kvlab-plot-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw PlotError("--plot: cannot create a temporary file in " + pattern);
    path_ = pattern;
    const auto* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n <= 0) {
        ::close(fd);
        throw PlotError("--plot: cannot write the temporary file " + path_);
      }
      p += n, left -= static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

PlotTarget parse_plot_target(const std::string& value) {
  if (value == "term") return {true, {}};
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\'' || c == '"' || c == '\\')
      throw InputError("--plot: the file name may not hold quotes, backslashes or control characters");
  if (!ends_with(value, ".svg") || value.size() == 4)
    throw InputError("--plot: expected 'term' (draw in the terminal) or a file name ending in .svg, got '" +
                     value + "'");
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
    s += fmt::format("set terminal svg size 760,{} dynamic font 'sans,11'\nset output {}\n", height,
                     quoted(target.svg_path));
    if (plots.size() > 1) s += fmt::format("set multiplot layout {},1\n", plots.size());
  }
  s += "set termoption noenhanced\nset grid\n";
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
    s += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\n", quoted(plot.title),
                     quoted(plot.x_label), quoted(plot.y_label));
    const bool legend_ok = plot.legend.find_first_not_of("abcdefghijklmnopqrstuvwxyz ") == std::string::npos;
    s += fmt::format("set key {} box opaque\n", legend_ok ? plot.legend : "top left");
    s += plot.log_x ? "set logscale x\n" : "unset logscale x\n";
    s += plot.log_y ? "set logscale y\n" : "unset logscale y\n";
    std::string cmd = "plot ";
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
      const auto& ser = plot.series[i];
      const std::string style = ser.style == "lines" || ser.style == "points" ? ser.style : "linespoints";
      cmd += fmt::format("{}$d{}_{} using 1:2 with {} title {}", i ? ", " : "", p, i, style,
                         quoted(ser.title));
    }
    s += plot.series.empty() ? "" : cmd + "\n";
  }
  if (!target.terminal && plots.size() > 1) s += "unset multiplot\n";
  return s;
}

std::string render_plots(const std::string& gnuplot, const std::vector<Plot>& plots,
                         const PlotTarget& target) {
  if (gnuplot.find('\'') != std::string::npos)
    throw PlotError("--plot: gnuplot's path holds a quote: " + gnuplot);
  const TempFile script(gnuplot_script(plots, target));
  const TempFile errors("");
  const std::string command =
      fmt::format("'{}' '{}' 2>'{}'", gnuplot, script.path(), errors.path());
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw PlotError("--plot: cannot start " + gnuplot);
  std::string drawing;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) drawing.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    std::ifstream in(errors.path());
    std::string line, last;  // gnuplot echoes the offending line, then "script", line N: message
    while (std::getline(in, line))
      if (line.find_first_not_of(" \t^") != std::string::npos) last = line;
    throw PlotError(fmt::format("--plot: gnuplot failed (status {}): {}",
                                WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                last.empty() ? "no message" : last));
  }
  return target.terminal ? drawing : std::string();
}

}  // namespace kvlab
