// Renderers for Result: text (the default, for a terminal), markdown and CSV (the tables only,
// for notes and spreadsheets) and JSON (one object per check; see docs/design.md "Output").
// Writers format; they never compute.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "report/result.hpp"

namespace kvlab {

enum class Format { text, md, csv, json };

/// "text" | "md" | "csv" | "json" -> Format; throws InputError naming `--format` otherwise.
Format parse_format(const std::string& s);

/// A number as the tables show it: integers with thousands separators, otherwise 6 significant
/// digits ("1,342,177,280", "140.26", "3.6e-15"); NaN and inf as "nan", "inf".
std::string format_number(double v);

/// The expectations of a result as a table (quantity, source, document, expected, ±, measured,
/// unit, verdict, why): what the writers print first.
Table expectation_table(const Result& r);

/// One table alone, in text, md or csv (json: an object with title, columns and rows).
void write_table(std::ostream& out, const Table& t, Format f);

/// `j` as JSON text for output, indented by `indent` (-1: one line). A string that is not valid
/// UTF-8 (a file name in another encoding) has each bad byte replaced by U+FFFD instead of making
/// nlohmann::json throw (type_error 316): JSON cannot carry the bytes as typed.
std::string json_text(const nlohmann::json& j, int indent = 2);

/// One Result as the JSON object of the output contract.
nlohmann::json to_json(const Result& r);

/// Writes one result in the chosen format.
void write_result(std::ostream& out, const Result& r, Format f);

/// Writes the results of `kvlab all`: each result, then (text) the summary line "N passed, M failed"
/// or (json) {"results": [...], "passed": N, "failed": M}.
void write_all(std::ostream& out, const std::vector<Result>& results, Format f);

}  // namespace kvlab
