// report/plot: --plot targets, the gnuplot script, and rendering when gnuplot is installed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "report/plot.hpp"
#include "test_util.hpp"

namespace kvlab {
namespace {

Plot two_series() {
  return Plot{"a test plot", "x (units)", "y (units)", false, true,
              {{"line", {1, 2, 3}, {1, 4, 9}, "lines"}, {"dot", {2}, {5}, "points"}}};
}

/// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_.empty() ? ::unsetenv(name_) : ::setenv(name_, old_.c_str(), 1); }
  const char* name_;
  std::string old_;
};

TEST_CASE("plot: --plot takes 'term' or a .svg path, and names itself otherwise") {
  CHECK(parse_plot_target("term").terminal);
  CHECK(parse_plot_target("out/roof.svg").svg_path == "out/roof.svg");
  for (const char* bad : {"", "roof.png", ".svg", "it's.svg", "a\nb.svg", "TERM"})
    CHECK(test::input_error([&] { parse_plot_target(bad); }).find("--plot") != std::string::npos);
}

TEST_CASE("plot: the script carries every finite point inline and the axes") {
  Plot p = two_series();
  p.series[0].y[1] = std::numeric_limits<double>::quiet_NaN();  // skipped, not written as "nan"
  const std::string s = gnuplot_script({p}, parse_plot_target("term"));
  CHECK(s.find("set terminal dumb") != std::string::npos);
  CHECK(s.find("1 1\n") != std::string::npos);
  CHECK(s.find("3 9\n") != std::string::npos);
  CHECK(s.find("nan") == std::string::npos);
  CHECK(s.find("set logscale y") != std::string::npos);
  CHECK(s.find("with points title \"dot\"") != std::string::npos);
  const std::string svg = gnuplot_script({p, p}, parse_plot_target("a.svg"));
  CHECK(svg.find("set multiplot layout 2,1") != std::string::npos);
  Plot ragged = two_series();
  ragged.series[0].y.pop_back();
  CHECK_THROWS_AS(gnuplot_script({ragged}, parse_plot_target("term")), std::invalid_argument);
}

TEST_CASE("plot: titles cannot break out of gnuplot's string syntax") {
  Plot p = two_series();
  p.title = "a \"quoted\" \\ title\nwith a newline";
  const std::string s = gnuplot_script({p}, parse_plot_target("term"));
  CHECK(s.find("set title \"a \\\"quoted\\\" \\\\ title with a newline\"") != std::string::npos);
}

TEST_CASE("plot: KVLAB_GNUPLOT overrides the search; a missing file means not installed") {
  {
    ScopedEnv env("KVLAB_GNUPLOT", "/nonexistent/gnuplot");
    CHECK_FALSE(find_gnuplot().has_value());
  }
  ScopedEnv env("KVLAB_GNUPLOT", "/bin/false");  // "gnuplot" that fails: a PlotError, not silence
  REQUIRE(find_gnuplot().has_value());
  CHECK_THROWS_AS(render_plots(*find_gnuplot(), {two_series()}, parse_plot_target("term")), PlotError);
}

TEST_CASE("plot: with gnuplot installed, the terminal drawing and the SVG file") {
  const auto gnuplot = find_gnuplot();
  if (!gnuplot) {
    MESSAGE("gnuplot is not installed: rendering not tested (apt-get install gnuplot-nox)");
    return;
  }
  const std::string drawing = render_plots(*gnuplot, {two_series()}, parse_plot_target("term"));
  CHECK(drawing.find("a test plot") != std::string::npos);
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/kvlab_test_plot.svg";
  CHECK(render_plots(*gnuplot, {two_series()}, parse_plot_target(path)).empty());
  std::ifstream in(path);
  std::stringstream svg;
  svg << in.rdbuf();
  CHECK(svg.str().find("<svg") != std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kvlab
