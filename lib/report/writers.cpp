#include "report/writers.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/lang.hpp"

namespace kvlab {
namespace {

std::string group_thousands(long long v) {
  std::string digits = std::to_string(v < 0 ? -static_cast<unsigned long long>(v)
                                            : static_cast<unsigned long long>(v));
  std::string out;
  const int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string cell_text(const Cell& c) {
  if (auto s = std::get_if<std::string>(&c)) return *s;
  if (auto i = std::get_if<std::int64_t>(&c)) return group_thousands(*i);
  return format_number(std::get<double>(c));
}

void write_text_table(std::ostream& out, const Table& t) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back(t.columns);
  for (const auto& row : t.rows) {
    std::vector<std::string> r;
    for (const auto& c : row) r.push_back(cell_text(c));
    cells.push_back(std::move(r));
  }
  std::vector<std::size_t> width(t.columns.size(), 0);
  for (const auto& r : cells)
    for (std::size_t j = 0; j < r.size() && j < width.size(); ++j)
      width[j] = std::max(width[j], display_width(r[j]));
  if (!t.title.empty()) out << t.title << '\n';
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string line = " ";
    for (std::size_t j = 0; j < cells[i].size() && j < width.size(); ++j) {
      const std::string& s = cells[i][j];
      const bool numeric = i > 0 && j < t.rows[i - 1].size() &&
                           !std::holds_alternative<std::string>(t.rows[i - 1][j]);
      const std::string pad(width[j] - display_width(s), ' ');
      line += ' ';
      line += numeric ? pad + s : s + pad;
      line += j + 1 < cells[i].size() ? " " : "";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
    if (i == 0) {
      std::string rule = " ";
      for (std::size_t j = 0; j < width.size(); ++j) rule += ' ' + std::string(width[j], '-') + ' ';
      while (!rule.empty() && rule.back() == ' ') rule.pop_back();
      out << rule << '\n';
    }
  }
}

std::string md_escape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else out += ch;
  }
  return out;
}

void write_md_table(std::ostream& out, const Table& t) {
  if (!t.title.empty()) out << "**" << t.title << "**\n\n";
  out << '|';
  for (const auto& c : t.columns) out << ' ' << md_escape(c) << " |";
  out << "\n|";
  for (std::size_t j = 0; j < t.columns.size(); ++j) out << "---|";
  out << '\n';
  for (const auto& row : t.rows) {
    out << '|';
    for (const auto& c : row) out << ' ' << md_escape(cell_text(c)) << " |";
    out << '\n';
  }
  out << '\n';
}

std::string csv_field(const Cell& c) {
  std::string s;
  if (auto str = std::get_if<std::string>(&c)) s = *str;
  else if (auto i = std::get_if<std::int64_t>(&c)) s = std::to_string(*i);
  else s = fmt::format("{:.17g}", std::get<double>(c));
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

void write_csv_table(std::ostream& out, const Table& t) {
  if (!t.title.empty()) out << "# " << t.title << '\n';
  for (std::size_t j = 0; j < t.columns.size(); ++j) out << (j ? "," : "") << csv_field(t.columns[j]);
  out << '\n';
  for (const auto& row : t.rows) {
    for (std::size_t j = 0; j < row.size(); ++j) out << (j ? "," : "") << csv_field(row[j]);
    out << '\n';
  }
  out << '\n';
}

nlohmann::json cell_json(const Cell& c) {
  if (auto s = std::get_if<std::string>(&c)) return *s;
  if (auto i = std::get_if<std::int64_t>(&c)) return *i;
  return std::get<double>(c);  // NaN/inf become null in the dump
}

std::vector<Table> all_tables(const Result& r) {
  std::vector<Table> tables;
  if (!r.expectations.empty()) tables.push_back(expectation_table(r));
  tables.insert(tables.end(), r.tables.begin(), r.tables.end());
  return tables;
}

void write_text(std::ostream& out, const Result& r) {
  out << r.check << " — " << r.source << '\n';
  out << "claim: " << r.claim << "\n\n";
  for (const auto& t : all_tables(r)) {
    write_text_table(out, t);
    out << '\n';
  }
  if (!r.notes.empty()) {
    out << "notes:\n";
    for (const auto& n : r.notes) out << "  - " << n << '\n';
  }
  const auto errata = r.errata();
  if (!errata.empty()) {
    out << "document errata (the document's figure, checked against kvlab's arithmetic):\n";
    for (const auto& e : errata) out << "  - ERRATUM " << e << '\n';
  }
  if (r.warnings && !r.warnings->empty()) {
    out << "warnings (kvlab is not sure of the totals above):\n";
    for (const auto& w : *r.warnings) out << "  - warning: " << w << '\n';
  }
  const auto held = std::count_if(r.expectations.begin(), r.expectations.end(),
                                  [](const Expectation& e) { return e.holds(); });
  if (!r.skipped.empty()) {
    out << "verdict: skipped (" << r.skipped << ")\n";
    return;
  }
  out << fmt::format("verdict: {} ({} of {} expectations hold{})\n", r.passed() ? "PASS" : "FAIL",
                     held, r.expectations.size(),
                     errata.empty() ? "" : fmt::format("; {} document erratum/errata", errata.size()));
}

}  // namespace

Format parse_format(const std::string& s) {
  if (s == "text") return Format::text;
  if (s == "md") return Format::md;
  if (s == "csv") return Format::csv;
  if (s == "json") return Format::json;
  throw InputError("--format: must be one of text, md, csv, json (got '" + s + "')");
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::trunc(v) && std::abs(v) < 1e15) return group_thousands(static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}

Table expectation_table(const Result& r) {
  Table t{"claims checked",
          {"quantity", "source", "document", "expected", "±", "measured", "unit", "verdict", "why ±"},
          {}};
  for (const auto& e : r.expectations) {
    std::string verdict = e.holds() ? "pass" : std::isfinite(e.measured) ? "FAIL" : "FAIL (measured is not finite)";
    if (e.is_erratum()) verdict += ", erratum";
    const std::string document = e.stated ? e.stated->text : e.document.empty() ? std::string("—") : e.document;
    if (e.holds()) {
      t.rows.push_back({e.quantity, e.source, document, e.expected, e.tolerance, e.measured, e.unit, verdict, e.why});
    } else {  // a failing row shows every digit, so that expected and measured never look equal
      auto exact = [](double v) { return fmt::format("{:.17g}", v); };
      t.rows.push_back({e.quantity, e.source, document, exact(e.expected), exact(e.tolerance), exact(e.measured),
                        e.unit, verdict, e.why});
    }
  }
  return t;
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json j;
  j["check"] = r.check;
  j["source"] = r.source;
  j["claim"] = r.claim;
  j["status"] = !r.skipped.empty() ? "skipped" : r.passed() ? "pass" : "fail";
  if (!r.skipped.empty()) j["skipped"] = r.skipped;
  j["metrics"] = nlohmann::json::object();
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  for (const auto& m : r.metrics) std::visit([&](auto x) { j["metrics"][m.first] = x; }, m.second);
  j["expectations"] = nlohmann::json::array();
  for (const auto& e : r.expectations) {
    nlohmann::json x{{"quantity", e.quantity}, {"source", e.source},     {"unit", e.unit},
                     {"expected", e.expected}, {"tolerance", e.tolerance}, {"why", e.why},
                     {"measured", e.measured}, {"holds", e.holds()}};
    if (!std::isfinite(e.measured)) x["measured_not_finite"] = std::isnan(e.measured) ? "nan" : e.measured > 0 ? "inf" : "-inf";
    if (!e.document.empty()) x["document"] = e.document;
    if (e.stated) {
      x["document"] = e.stated->text;
      x["document_value"] = e.stated->value;
      x["erratum"] = e.is_erratum();
    }
    j["expectations"].push_back(std::move(x));
  }
  j["tables"] = nlohmann::json::array();
  for (const auto& t : r.tables) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows) {
      nlohmann::json jr = nlohmann::json::array();
      for (const auto& c : row) jr.push_back(cell_json(c));
      rows.push_back(std::move(jr));
    }
    j["tables"].push_back({{"title", t.title}, {"columns", t.columns}, {"rows", std::move(rows)}});
  }
  for (const auto& [key, index] : r.table_keys) {
    if (index >= r.tables.size()) continue;
    const Table& t = r.tables[index];
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows) {
      nlohmann::json jr = nlohmann::json::object();
      for (std::size_t c = 0; c < row.size() && c < t.columns.size(); ++c) jr[t.columns[c]] = cell_json(row[c]);
      rows.push_back(std::move(jr));
    }
    j[key] = std::move(rows);
  }
  j["notes"] = r.notes;
  j["errata"] = r.errata();
  if (r.warnings) j["warnings"] = *r.warnings;
  return j;
}

void write_table(std::ostream& out, const Table& t, Format f) {
  switch (f) {
    case Format::text: write_text_table(out, t); break;
    case Format::md: write_md_table(out, t); break;
    case Format::csv: write_csv_table(out, t); break;
    case Format::json: {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& row : t.rows) {
        nlohmann::json jr = nlohmann::json::array();
        for (const auto& c : row) jr.push_back(cell_json(c));
        rows.push_back(std::move(jr));
      }
      out << json_text(nlohmann::json{{"title", t.title}, {"columns", t.columns}, {"rows", rows}}) << '\n';
      break;
    }
  }
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_result(std::ostream& out, const Result& r, Format f) {
  switch (f) {
    case Format::text: write_text(out, r); break;
    case Format::json: out << json_text(to_json(r)) << '\n'; break;
    case Format::md:
      out << "### " << r.check << " (" << r.source << ")\n\n" << r.claim << "\n\n";
      for (const auto& t : all_tables(r)) write_md_table(out, t);
      for (const auto& e : r.errata()) out << "- ERRATUM " << e << "\n";
      if (r.warnings)
        for (const auto& w : *r.warnings) out << "- warning: " << w << "\n";
      out << "\n**verdict: " << (!r.skipped.empty() ? "skipped (" + r.skipped + ")" : r.passed() ? "PASS" : "FAIL")
          << "**\n\n";
      break;
    case Format::csv:  // the tables; '#' lines name the check, each table and the verdict
      out << "# check: " << r.check << " (" << r.source << "), verdict: "
          << (!r.skipped.empty() ? "skipped" : r.passed() ? "PASS" : "FAIL") << "\n";
      if (r.warnings)
        for (const auto& w : *r.warnings) out << "# warning: " << w << "\n";
      for (const auto& t : all_tables(r)) write_csv_table(out, t);
      break;
  }
}

void write_all(std::ostream& out, const std::vector<Result>& results, Format f) {
  const auto passed = std::count_if(results.begin(), results.end(),
                                    [](const Result& r) { return r.passed(); });
  const auto failed = static_cast<long>(results.size()) - passed;
  if (f == Format::json) {
    nlohmann::json j{{"results", nlohmann::json::array()}, {"passed", passed}, {"failed", failed}};
    for (const auto& r : results) j["results"].push_back(to_json(r));
    out << json_text(j) << '\n';
    return;
  }
  std::size_t errata = 0;
  for (const auto& r : results) {
    write_result(out, r, f);
    if (f == Format::text) out << '\n';
    errata += r.errata().size();
  }
  if (f == Format::text) {
    if (errata > 0) out << errata << " document errata reported above (they do not fail a check)\n";
    out << passed << " passed, " << failed << " failed\n";
  }
}

}  // namespace kvlab
