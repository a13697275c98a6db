// report/plot: --plot targets, the gnuplot script, and rendering when gnuplot is installed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "report/plot.hpp"
#include "test_util.hpp"

namespace kvlab::report_plot_test {
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
  for (const char* bad : {"", "roof.png", ".svg", "a\nb.svg", "a\x1b[2J.svg", "TERM"})
    CHECK(test::input_error([&] { parse_plot_target(bad); }).find("--plot") != std::string::npos);
  // Quotes, backquotes and $( ) are plain characters of a name: it never reaches gnuplot or a shell.
  for (const char* odd : {"it's.svg", "a \"b\".svg", "`touch x`.svg", "$(touch x).svg", "back\\slash.svg", "@m.svg"})
    CHECK(parse_plot_target(odd).svg_path == odd);
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
  CHECK(s.find("with points title 'dot'") != std::string::npos);
  const std::string svg = gnuplot_script({p, p}, parse_plot_target("a.svg"));
  CHECK(svg.find("set multiplot layout 2,1") != std::string::npos);
  Plot ragged = two_series();
  ragged.series[0].y.pop_back();
  CHECK_THROWS_AS(gnuplot_script({ragged}, parse_plot_target("term")), std::invalid_argument);
}

TEST_CASE("plot: titles cannot break out of gnuplot's string syntax nor run anything") {
  Plot p = two_series();
  p.title = "it's a \"quoted\" \\ title\nwith a newline";
  p.x_label = "`touch /tmp/x` and @macro";
  p.series[0].title = "$(touch /tmp/x)";
  const std::string s = gnuplot_script({p}, parse_plot_target("term"));
  // Single-quoted gnuplot strings: no backquote substitution, no macros, no escapes; ' doubled.
  CHECK(s.find("set title 'it''s a \"quoted\" \\ title with a newline'") != std::string::npos);
  CHECK(s.find("set xlabel '`touch /tmp/x` and @macro'") != std::string::npos);
  CHECK(s.find("title '$(touch /tmp/x)'") != std::string::npos);
  // The SVG file's name is not in the script: gnuplot writes to its stdout.
  const std::string svg = gnuplot_script({p}, parse_plot_target("`touch /tmp/x`.svg"));
  CHECK(svg.find("touch /tmp/x`.svg") == std::string::npos);
  CHECK(svg.find("set output\n") != std::string::npos);
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
  CHECK(drawing.find("y: y (units)") != std::string::npos);  // dumb cannot rotate: the y label under the title
  CHECK(render_plots(*gnuplot, {two_series()}, parse_plot_target("a.svg")).find("<svg") != std::string::npos);
}

TEST_CASE("plot: with gnuplot installed, backquotes in titles run nothing") {
  const auto gnuplot = find_gnuplot();
  if (!gnuplot) return;
  const std::string marker =
      std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/kvlab_test_plot_ran_" +
      std::to_string(::getpid());
  Plot p = two_series();
  p.title = "`touch " + marker + "`";
  p.x_label = "$(touch " + marker + ")";
  p.series[0].title = "`touch " + marker + "` it's";
  const std::string drawing = render_plots(*gnuplot, {p}, parse_plot_target("term"));
  CHECK(drawing.find("`touch " + marker + "`") != std::string::npos);  // drawn as text
  CHECK(render_plots(*gnuplot, {p}, parse_plot_target("`touch " + marker + "`.svg")).find("<svg") != std::string::npos);
  CHECK_FALSE(std::ifstream(marker).good());
  std::remove(marker.c_str());
}


TEST_CASE("plot: twelve distinct colours before any repeats (spec-etau draws 11 series)") {
  Plot p = two_series();
  for (int i = 0; i < 9; ++i) p.series.push_back({fmt::format("α = {}", i), {1, 2}, {1, 2}, "lines"});
  const std::string s = gnuplot_script({p}, parse_plot_target("a.svg"));
  std::set<std::string> colours;
  for (int lt = 1; lt <= 12; ++lt) {
    const std::string key = fmt::format("set linetype {} lc rgb '", lt);
    const auto at = s.find(key);
    REQUIRE(at != std::string::npos);
    colours.insert(s.substr(at + key.size(), 7));
  }
  CHECK(colours.size() == 12);
}

TEST_CASE("plot: a 'labeled' series writes its title beside each point, alternately above and below") {
  Plot p{"roof", "x", "y", true, true,
         {{"batch 8", {7.5}, {15}, "labeled"}, {"batch 64", {6.9}, {14}, "labeled"}}};
  const std::string s = gnuplot_script({p}, parse_plot_target("a.svg"));
  CHECK(s.find("$d0_0 using 1:2 with points ps 1.5 title 'batch 8'") != std::string::npos);
  CHECK(s.find("$d0_0 using 1:2:('batch 8') with labels offset char 1,1 left notitle") != std::string::npos);
  CHECK(s.find("$d0_1 using 1:2:('batch 64') with labels offset char 1,-1 left notitle") != std::string::npos);
}

}  // namespace
}  // namespace kvlab::report_plot_test
