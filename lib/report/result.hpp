// What a check returns: the claim, its source, the expected/measured rows, metrics, tables, notes.
//
// A check computes a Result and never prints; the writers in report/writers.hpp render it as text,
// markdown, CSV or JSON (the output contract of docs/design.md).
//
// Verdicts. Each Expectation compares a value measured through the library with an expected value
// and a tolerance whose reason is stated; the check passes when every Expectation holds. When the
// document states a figure (Stated), kvlab also compares the measurement with that figure at the
// precision the document wrote it; a disagreement is recorded as an erratum, with the arithmetic.
// Errata do not fail a check: the verdict is about whether kvlab reproduced the science, and the
// erratum is kvlab saying where the document's own number is off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kvlab {

/// One table cell: text, a real number, or an exact integer (byte counts, token counts).
using Cell = std::variant<std::string, double, std::int64_t>;

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

/// One line or point set of a plot: y against x (same length), drawn as `style`.
struct PlotSeries {
  std::string title;           ///< legend entry
  std::vector<double> x, y;    ///< the data, in the plot's axis units; NaN points are skipped
  std::string style = "linespoints";  ///< "lines", "points", "linespoints" or "labeled" (report/plot.hpp)
};

/// A plot a check offers to `--plot` (report/plot.hpp renders it through gnuplot). The same
/// numbers are always in one of the check's tables too: a plot is a view, never the only copy.
struct Plot {
  std::string title;
  std::string x_label, y_label;  ///< axis labels with units
  bool log_x = false, log_y = false;
  std::vector<PlotSeries> series;
  std::string legend = "top left";  ///< where the legend goes (gnuplot `set key` position)
};

/// A figure as the document states it, and the values it allows at the precision it is written.
///
/// The precision rule, the one rule every check applies to the documents' figures (docs/claims.md,
/// "Document errata"); `u` is one unit of the figure's last written digit ("0.27": 0.01; "892": 1;
/// "140": 10, since trailing zeros of an integer are not significant; "6.8": 0.1):
///   - an exact figure must round to what is written: it allows value ± u/2;
///   - a figure the document marks approximate (≈, 约, ~, ～, 大概, 大约, 往往, 左右, about,
///     roughly) may have been rounded or truncated (cut after its last digit): it allows
///     value − u/2 .. value + u. "约 1/3.5" allows 3.45 .. 3.6 (so 3.556 holds), "约 1/28"
///     27.5 .. 29, "≈ 2 GB" 1.5 .. 3 GB (so 1.07 GB is an erratum: neither rounding nor
///     truncation gives 2).
/// Stated::parse and Stated::range apply the rule; a Stated written out by hand is for words that
/// are not a written figure ("doubles": 2 ± 0.5; "weights dominate": a share below 50%).
struct Stated {
  std::string text;        ///< the document's words, as shown to the student
  double value = 0.0;      ///< the number in the unit the Expectation uses
  double precision = 0.0;  ///< how far below `value` the figure allows (and above, unless `above`)
  /// How far above `value` the figure allows, when it differs from `precision` (an approximate
  /// figure: one full unit of its last written digit).
  std::optional<double> above;
  /// The id of the entry in kvlab's errata catalogue (data/errata.json, `kvlab errata`) that this
  /// figure's erratum is, e.g. "E3"; empty for a figure the catalogue has no entry for.
  std::string erratum;

  double low() const { return value - precision; }               ///< the smallest value allowed
  double high() const { return value + above.value_or(precision); }  ///< the largest value allowed

  /// True when `words` mark the figure approximate: ≈, 约, ~, ～, 大概, 往往, 左右, "about",
  /// "roughly" (大约 contains 约).
  static bool approximate(const std::string& words);

  /// Parses a decimal the way a document writes it and applies the precision rule, reading
  /// `words` (the document's words around it; the number itself when empty) for an approximate
  /// mark: "0.27" -> ± 0.005; "892" -> ± 0.5; "140" -> ± 5; ("6.8", "≈ 6.8") -> 6.75 .. 6.9.
  /// `scale` converts to the Expectation's unit. Throws std::invalid_argument on a string that
  /// is not a plain decimal.
  static Stated parse(const std::string& number, const std::string& words = "", double scale = 1.0);

  /// A range the document writes, "往往 1-5%" or "2–4×": from `low` read as a figure (its lower
  /// allowance) to `high` read as a figure (its upper allowance), by the same rule; `value` is the
  /// midpoint. Throws std::invalid_argument like parse, and when low > high.
  static Stated range(const std::string& low, const std::string& high, const std::string& words,
                      double scale = 1.0);

  /// This figure, marked as the erratum `id` of the catalogue (e.g. "E3").
  Stated flags(std::string id) &&;
};

/// One claim row: expected ± tolerance (and why), measured, verdict.
struct Expectation {
  std::string quantity;       ///< what is compared, e.g. "KV cache, 70B GQA-8, 32 x 8192, bf16"
  std::string source;         ///< document and section, e.g. "004 §1.4 (group 4)"
  std::string unit;           ///< unit of expected/measured/tolerance, e.g. "GiB"
  double expected = 0.0;      ///< kvlab's expected value (the document's, or its corrected value)
  double tolerance = 0.0;     ///< |measured - expected| <= tolerance passes
  std::string why;            ///< why this tolerance (dtype rounding, Monte Carlo error, ...)
  double measured = 0.0;      ///< what the library computed or counted
  std::optional<Stated> stated;  ///< the document's own figure, when it gives one
  std::string arithmetic;     ///< how `expected` follows, shown with an erratum
  std::string document;       ///< what the document says, when it is not a figure to check
  /// The interval the measured quantity can take by its definition, when it is bounded (a
  /// probability: [0, 1]; tokens per speculative step: [1, K + 1]). A tolerance as wide as the
  /// largest deviation this allows would make a row that cannot fail: the unit test over every
  /// check at its defaults refuses it (tests/checks/framework_test.cpp). Not written by the writers.
  std::optional<std::pair<double, double>> attainable;
  /// The row whose figures answer the check's claim: its document and kvlab figures are the
  /// headline (report/writers.hpp: headline(), where a failing row comes first). At most one row
  /// per result sets it.
  bool headline = false;
  /// kvlab's own cross-check rather than a claim of the documents (the library against the
  /// check's own arithmetic, a closed form against a tensor count): judged like any row, printed
  /// under its own heading after the claims so that the reader meets the claims first.
  bool cross_check = false;

  /// True when measured is finite, within tolerance of expected and, when `attainable` is set,
  /// inside it (a value the quantity cannot take is never a pass).
  bool holds() const;
  /// True when the document states a figure that the measurement contradicts at the document's
  /// own precision.
  bool is_erratum() const;
  /// The largest |measured − expected| `attainable` allows; +inf when it is unset.
  double largest_possible_deviation() const;
  /// False when the row would hold whatever was measured: its tolerance is at least the largest
  /// deviation `attainable` allows. A NaN tolerance or expected value can fail (the row fails).
  /// The framework refuses a run with a row that cannot fail (checks/framework/spec.hpp:
  /// require_power), and the unit test over every check at its defaults holds each row to it.
  bool can_fail() const;
};

/// The outcome of one check.
struct Result {
  std::string check;   ///< subcommand name, e.g. "kv-size"
  std::string source;  ///< e.g. "004 §1.4 (group 4); 000 §0, §2.2, §2.3"
  std::string claim;   ///< the claim in one or two sentences
  std::vector<Expectation> expectations;
  /// Stable snake_case keys, in order. A value is a double, or an exact unsigned integer for
  /// counts (bytes, positions) that must not round above 2^53.
  std::vector<std::pair<std::string, std::variant<double, std::uint64_t>>> metrics;
  std::vector<Table> tables;
  std::vector<std::string> notes;
  /// Plots drawn by `--plot` (checks that sweep a parameter); never written by the writers.
  std::vector<Plot> plots;
  /// Non-empty when the check could not run on this machine (its trained checkpoint or the
  /// fortunes text is absent): the one-line reason. The verdict is then "skipped"
  /// (JSON status "skipped"), never PASS, and the exit status 0, so that `kvlab all` and ctest do
  /// not fail where the data is missing.
  std::string skipped;
  /// Present for the checks that read a config's layout (kv-size): one line per thing kvlab was
  /// not sure of (a layout field it does not interpret, an unknown model_type), written as a
  /// top-level "warnings" array in JSON (empty when none) and as warning lines in text.
  std::optional<std::vector<std::string>> warnings;
  /// Tables the JSON writer also gives as a top-level key of the result object, an array of
  /// {column: value} objects (kv-size's "layer_groups"): the key and the index in `tables`.
  std::vector<std::pair<std::string, std::size_t>> table_keys;
  /// kvlab's answer in words for the headline, when the headline row's measured value alone
  /// would not say it (kv-size: "16 GiB (17,179,869,184 B)"); "" = the headline row's figure.
  std::string answer;
  /// The claim in Chinese for `--lang zh`; the check framework fills it from the check's spec
  /// ("" = none: the English claim is shown).
  std::string claim_zh;

  /// Every expectation holds (and there is at least one); also true when skipped (exit 0).
  bool passed() const;
  /// One line per erratum: the catalogue id (when the figure has one), source, quantity, the
  /// document's words, kvlab's figure and the arithmetic.
  std::vector<std::string> errata() const;

  /// Adds or replaces a metric.
  void metric(const std::string& key, double value);
  /// Adds or replaces an exact integer metric (written to JSON as an integer).
  void metric_exact(const std::string& key, std::uint64_t value);
  /// The metric's value as a double; throws std::out_of_range when there is no such key.
  double metric_value(const std::string& key) const;
  /// Appends an expectation and returns it for further filling.
  Expectation& expect(Expectation e);
};

}  // namespace kvlab
