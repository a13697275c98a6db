// Renderers for Result: text (the default, for a terminal), markdown and CSV (the tables only,
// for notes and spreadsheets) and JSON (one object per check; see docs/design.md "Output").
// Writers format; they never compute.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "report/lang.hpp"
#include "report/result.hpp"

namespace kvlab {

enum class Format { text, md, csv, json };

/// "text" | "md" | "csv" | "json" -> Format; throws InputError naming `--format` otherwise.
Format parse_format(const std::string& s);

/// An integer with thousands separators: 1234567 -> "1,234,567", -1234 -> "-1,234".
std::string group_thousands(long long v);

/// `s` for a markdown table cell: each '|' escaped as "\\|".
std::string md_escape(std::string s);

/// A number as the tables show it: integers with thousands separators, otherwise 6 significant
/// digits ("1,342,177,280", "140.26", "3.6e-15"); NaN and inf as "nan", "inf".
std::string format_number(double v);

/// The expectations of a result as a table (quantity, source, document, kvlab, allowed, unit,
/// verdict, why allowed): the claims (cross_checks = false), printed first, or kvlab's own
/// cross-checks (Expectation::cross_check), printed after the check's tables. Column names and
/// verdict words in `lang`.
Table expectation_table(const Result& r, bool cross_checks = false, Lang lang = Lang::en);

/// Which of three a result's verdict is (plus skipped): what a student reads first.
enum class Outcome {
  held,               ///< every judged row holds and no document figure is off
  held_document_off,  ///< every judged row holds, but a figure of the document is off (an erratum)
  did_not_hold,       ///< a judged row does not hold (exit status 1)
  skipped,            ///< the check could not run here (Result::skipped)
};

/// "held", "held_document_off", "did_not_hold" or "skipped": the JSON headline's verdict.
const char* outcome_key(Outcome o);

/// The answer first: the figures and verdict a check's report opens with (report/writers.hpp) and
/// that `kvlab all` prints one line of.
struct Headline {
  Outcome outcome = Outcome::held;
  std::string quantity;  ///< what the two figures are of (the headline row's quantity); "" = none
  std::string document;  ///< the document's figure in its words; "—" when it states none
  std::string kvlab;     ///< kvlab's figure with its unit (Result::answer when set)
  std::string erratum;   ///< with held_document_off: the first erratum, one line; else ""
  std::string erratum_zh;  ///< the same line in Chinese
  std::size_t errata = 0;          ///< how many document figures are off
  std::size_t held = 0, judged = 0;  ///< judged rows that hold, of all judged rows
};

/// The headline of `r`: when the check failed, the first row that does not hold; else the row
/// marked Expectation::headline, else the first erratum, else the first row with a stated figure,
/// else the first claim row (not a cross-check), else the first row (no row: document and kvlab "—").
Headline headline(const Result& r);

/// One table alone, in text, md or csv (json: an object with title, columns and rows).
void write_table(std::ostream& out, const Table& t, Format f);

/// `j` as JSON text for output, indented by `indent` (-1: one line). A string that is not valid
/// UTF-8 (a file name in another encoding) has each bad byte replaced by U+FFFD instead of making
/// nlohmann::json throw (type_error 316): JSON cannot carry the bytes as typed.
std::string json_text(const nlohmann::json& j, int indent = 2);

/// One Result as the JSON object of the output contract.
nlohmann::json to_json(const Result& r);

/// Writes one result in the chosen format. Text opens with the headline (at most five lines: the
/// check and its source, the claim, the document's and kvlab's figures, the verdict, the first
/// erratum), then the evidence tables, notes, errata, and the verdict again. `lang` picks the
/// language of the headline, the verdict words, the claims table's columns and the section titles
/// (the notes themselves stay English).
void write_result(std::ostream& out, const Result& r, Format f, Lang lang = Lang::en);

/// How `kvlab all` shows its results.
struct AllView {
  bool full = false;   ///< text: every check's complete report (default: one line per check)
  bool quiet = false;  ///< only the checks that did not hold (the counts still cover every check)
  Lang lang = Lang::en;
  /// The benchmarks left out because `all` ran without --bench (and without --only), by name.
  std::vector<std::string> skipped_benchmarks;
};

/// Writes the results of `kvlab all`. Text: one line per check (name, verdict, the headline's
/// document and kvlab figures, at most 100 columns), the errata count, a line naming the
/// benchmarks left out (when some were) with the command that runs them, and the summary line
/// "N passed, M failed" (in the view's language); with view.full each complete report instead. md/csv:
/// each report, then the same two closing lines (csv: as `#` comment lines). JSON:
/// {"results": [...], "passed": N, "failed": M, "skipped_benchmarks": [NAME, ...]}.
void write_all(std::ostream& out, const std::vector<Result>& results, Format f, const AllView& view = {});

}  // namespace kvlab
