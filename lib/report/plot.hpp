// Plots through gnuplot (Debian package gnuplot-nox), for `--plot FILE.svg` and `--plot term`.
//
// A check puts Plot values in its Result (report/result.hpp); the front end asks this module to
// draw them after the report is printed. kvlab writes a gnuplot script with the data inline
// (datablocks), runs gnuplot on it (no shell) and returns gnuplot's dumb-terminal drawing as text,
// or the SVG document that the front end writes to the file. gnuplot is optional: without it the tables still carry every number, and the front end
// says in one line how to install it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/result.hpp"

namespace kvlab {

/// Where `--plot` sends the plots: the terminal (gnuplot's dumb terminal, as text) or an SVG file.
struct PlotTarget {
  bool terminal = false;
  std::string svg_path;  ///< set when !terminal
};

/// Parses a `--plot` value: "term", or a path ending in ".svg" (no control characters; quotes,
/// backquotes and `$(...)` are plain characters: the name never reaches gnuplot or a shell, the
/// front end writes the file with safe_write_file). Throws InputError naming --plot.
PlotTarget parse_plot_target(const std::string& value);

/// gnuplot's path: $KVLAB_GNUPLOT when set (an empty or missing file means "not installed"; the
/// tests use it), else the first executable `gnuplot` on $PATH. nullopt when there is none.
std::optional<std::string> find_gnuplot();

/// The gnuplot script that draws `plots` for `target` (data inline; one page per plot on the
/// terminal, stacked vertically in one SVG). Series styles: "lines", "points", "linespoints" (any
/// other value), and "labeled": points with the series' title also written beside each point,
/// alternately above and below (for operating points that lie close together). Twelve distinct
/// colours, each with its own point shape, before any repeats. Exposed for the tests. Throws
/// std::invalid_argument when a series' x and y differ in length.
std::string gnuplot_script(const std::vector<Plot>& plots, const PlotTarget& target);

/// gnuplot failed (exit status ≠ 0); what() holds its first error line.
class PlotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs `gnuplot` (a path from find_gnuplot) on gnuplot_script(plots, target), without a shell
/// (posix_spawn; the script on a descriptor, the drawing from gnuplot's stdout). Returns the
/// drawing: text for the terminal target, the SVG document for a file target (the caller writes
/// it to target.svg_path). Every user string in the script is in a single-quoted gnuplot string,
/// where gnuplot expands nothing. Throws PlotError.
std::string render_plots(const std::string& gnuplot, const std::vector<Plot>& plots,
                         const PlotTarget& target);

}  // namespace kvlab
