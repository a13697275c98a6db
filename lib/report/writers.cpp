#include "report/writers.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/lang.hpp"

namespace kvlab {
namespace {

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

std::vector<Table> all_tables(const Result& r, Lang lang = Lang::en) {
  std::vector<Table> tables;
  const bool any_claim = std::any_of(r.expectations.begin(), r.expectations.end(),
                                     [](const Expectation& e) { return !e.cross_check; });
  if (any_claim) tables.push_back(expectation_table(r, false, lang));
  tables.insert(tables.end(), r.tables.begin(), r.tables.end());
  const bool any_cross = std::any_of(r.expectations.begin(), r.expectations.end(),
                                     [](const Expectation& e) { return e.cross_check; });
  if (any_cross) tables.push_back(expectation_table(r, true, lang));
  return tables;
}

// The verdict in the reader's words: which of three it is (plus skipped).
std::string outcome_words(Outcome o, Lang lang) {
  switch (o) {
    case Outcome::held: return std::string(tr(lang, "HELD", "成立"));
    case Outcome::held_document_off:
      return std::string(tr(lang, "HELD, but the document's figure is off", "成立，但文档的数字有误"));
    case Outcome::did_not_hold: return std::string(tr(lang, "DID NOT HOLD", "不成立"));
    case Outcome::skipped: return std::string(tr(lang, "skipped", "跳过"));
  }
  return "";
}

// "(2 of 2 judged rows hold; 1 document figure off)" after the verdict words.
std::string outcome_counts(const Headline& h, Lang lang) {
  if (lang == Lang::zh)
    return fmt::format("（{} 行判定中 {} 行成立{}）", h.judged, h.held,
                       h.errata ? fmt::format("；文档数字有误 {} 处", h.errata) : "");
  return fmt::format("({} of {} judged rows hold{})", h.held, h.judged,
                     h.errata ? fmt::format("; {} document figure{} off", h.errata, h.errata == 1 ? "" : "s") : "");
}

std::string verdict_line(const Result& r, const Headline& h, Lang lang) {
  const std::string label(tr(lang, "verdict: ", "结论："));
  if (h.outcome == Outcome::skipped) return label + outcome_words(h.outcome, lang) + " (" + r.skipped + ")";
  return label + outcome_words(h.outcome, lang) + (lang == Lang::zh ? "" : " ") + outcome_counts(h, lang);
}

// The answer first: at most five lines, the verdict among them.
void write_headline(std::ostream& out, const Result& r, const Headline& h, Lang lang) {
  out << r.check << " — " << r.source << '\n';
  const std::string& claim = lang == Lang::zh && !r.claim_zh.empty() ? r.claim_zh : r.claim;
  out << tr(lang, "claim: ", "论断：") << claim << '\n';
  if (h.outcome != Outcome::skipped)
    out << fmt::format("{}{} · kvlab{}{}{}\n", tr(lang, "document: ", "文档："), h.document, tr(lang, ": ", "："),
                       h.kvlab, h.quantity.empty() || lang == Lang::zh ? "" : "  (" + h.quantity + ")");
  out << verdict_line(r, h, lang) << '\n';
  if (h.outcome == Outcome::held_document_off)
    out << tr(lang, "erratum: ", "勘误：") << (lang == Lang::zh ? h.erratum_zh : h.erratum)
        << (h.errata > 1 ? fmt::format(fmt::runtime(tr(lang, " (+{} more below)", "（另 {} 处见下）")), h.errata - 1) : "") << '\n';
}

void write_text(std::ostream& out, const Result& r, Lang lang) {
  const Headline h = headline(r);
  write_headline(out, r, h, lang);
  out << '\n';
  for (const auto& t : all_tables(r, lang)) {
    write_text_table(out, t);
    out << '\n';
  }
  // The section titles follow --lang; the lines under them are the check's own words (English).
  if (!r.notes.empty()) {
    out << tr(lang, "notes:\n", "注：\n");
    for (const auto& n : r.notes) out << "  - " << n << '\n';
  }
  const auto errata = r.errata();
  if (!errata.empty()) {
    out << tr(lang, "document errata (the document's figure, checked against kvlab's arithmetic; `kvlab errata` lists them all):\n",
              "文档勘误（文档的数字对照 kvlab 的算术；`kvlab errata --lang zh` 逐条中文解释）：\n");
    for (const auto& e : errata) out << tr(lang, "  - ERRATUM ", "  - 勘误 ") << e << '\n';
  }
  if (r.warnings && !r.warnings->empty()) {
    out << tr(lang, "warnings (kvlab is not sure of the totals above):\n", "警告（kvlab 对上面的总数没有把握）：\n");
    for (const auto& w : *r.warnings) out << tr(lang, "  - warning: ", "  - 警告：") << w << '\n';
  }
  out << verdict_line(r, h, lang) << '\n';
}

}  // namespace

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

std::string md_escape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else out += ch;
  }
  return out;
}

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

const char* outcome_key(Outcome o) {
  switch (o) {
    case Outcome::held: return "held";
    case Outcome::held_document_off: return "held_document_off";
    case Outcome::did_not_hold: return "did_not_hold";
    case Outcome::skipped: return "skipped";
  }
  return "";
}

namespace {

// What the document says on a row: its figure in its words, its words, or "—".
std::string document_text(const Expectation& e) {
  return e.stated ? e.stated->text : e.document.empty() ? std::string("—") : e.document;
}

std::string figure_text(double v, const std::string& unit) {
  return unit.empty() ? format_number(v) : format_number(v) + " " + unit;
}

// The range a row's measured value must fall in: "= 298" (exact), "0 ± 1e-12" (a small
// tolerance, around zero or far below the value), else "[lo, hi]", clipped to the values the
// quantity can take (Expectation::attainable: an α allowed in [0.24, 1.35] reads [0.24, 1]). A
// failing row prints every digit, so that the bounds and the measured value never look equal.
std::string allowed_text(const Expectation& e) {
  const bool exact_digits = !e.holds();
  auto num = [&](double v) { return exact_digits ? fmt::format("{:.17g}", v) : format_number(v); };
  if (e.tolerance == 0) return "= " + num(e.expected);
  if (e.expected == 0 || e.tolerance < 1e-3 * std::abs(e.expected)) return num(e.expected) + " ± " + num(e.tolerance);
  double lo = e.expected - e.tolerance, hi = e.expected + e.tolerance;
  if (e.attainable && std::max(lo, e.attainable->first) <= std::min(hi, e.attainable->second))
    lo = std::max(lo, e.attainable->first), hi = std::min(hi, e.attainable->second);
  return "[" + num(lo) + ", " + num(hi) + "]";
}

std::string row_verdict(const Expectation& e, Lang lang) {
  std::string v = e.holds() ? std::string(tr(lang, "held", "成立"))
                  : std::isfinite(e.measured) ? std::string(tr(lang, "NOT HELD", "不成立"))
                                              : std::string(tr(lang, "NOT HELD (not finite)", "不成立（非有限值）"));
  if (e.is_erratum()) v += tr(lang, ", document off", "，文档有误");
  return v;
}

// The index of the headline row (see headline()); expectations must not be empty.
std::size_t headline_index(const Result& r) {
  const auto& ex = r.expectations;
  auto first = [&](auto pred) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < ex.size(); ++i)
      if (pred(ex[i])) return i;
    return std::nullopt;
  };
  if (!r.passed()) return *first([](const Expectation& e) { return !e.holds(); });
  if (auto i = first([](const Expectation& e) { return e.headline; })) return *i;
  if (auto i = first([](const Expectation& e) { return e.is_erratum(); })) return *i;
  if (auto i = first([](const Expectation& e) { return e.stated.has_value(); })) return *i;
  if (auto i = first([](const Expectation& e) { return !e.cross_check; })) return *i;
  return 0;
}

}  // namespace

Headline headline(const Result& r) {
  Headline h;
  h.judged = r.expectations.size();
  for (const auto& e : r.expectations) {
    h.held += e.holds() ? 1 : 0;
    h.errata += e.is_erratum() ? 1 : 0;
  }
  h.outcome = !r.skipped.empty() ? Outcome::skipped
              : !r.passed()      ? Outcome::did_not_hold
              : h.errata > 0     ? Outcome::held_document_off
                                 : Outcome::held;
  h.document = "—";
  h.kvlab = "—";
  if (r.expectations.empty()) return h;
  const Expectation& e = r.expectations[headline_index(r)];
  h.quantity = e.quantity;
  h.document = document_text(e);
  h.kvlab = h.outcome != Outcome::did_not_hold && !r.answer.empty() ? r.answer : figure_text(e.measured, e.unit);
  // The erratum shown: the headline row's own when it is one (its figures are the line above),
  // else the first.
  std::vector<const Expectation*> order{&e};
  for (const auto& x : r.expectations) order.push_back(&x);
  for (const Expectation* px : order)
    if (const Expectation& x = *px; x.is_erratum()) {
      // The document's figure in the row's unit too, when its words do not show that number
      // ("≈ 1.25 GB" read in GiB is 1.16415; "1–5%" is the range 1–5 %): a unit slip then reads as
      // one. Then the arithmetic, the why of the erratum.
      const Stated& st = *x.stated;
      std::string in_unit;
      if (st.text.find(format_number(st.value)) == std::string::npos)
        in_unit = st.high() - st.low() >= 0.2 * std::abs(st.value)
                      ? fmt::format("{}–{}", format_number(st.low()), format_number(st.high()))
                      : format_number(st.value);
      if (!in_unit.empty() && !x.unit.empty()) in_unit += " " + x.unit;
      const std::string why = x.arithmetic.empty() ? "" : ": " + x.arithmetic;
      const std::string id = st.erratum.empty() ? "" : st.erratum + " ";
      h.erratum = fmt::format("{}{}: the document says {}{}; kvlab has {}{}", id, x.source, st.text,
                              in_unit.empty() ? "" : " (= " + in_unit + ")", figure_text(x.measured, x.unit), why);
      // The arithmetic is written in English: the Chinese line points to the catalogue's entry.
      h.erratum_zh = fmt::format("{}{}：文档写 {}{}；kvlab 得 {}{}", id, x.source, st.text,
                                 in_unit.empty() ? "" : "（= " + in_unit + "）", figure_text(x.measured, x.unit),
                                 st.erratum.empty() ? "" : "（中文解释：kvlab errata --id " + st.erratum + " --lang zh）");
      break;
    }
  return h;
}

Table expectation_table(const Result& r, bool cross_checks, Lang lang) {
  Table t{cross_checks ? std::string(tr(lang, "kvlab's own cross-checks (the library against the check's own arithmetic)",
                                        "kvlab 的自检（库函数对照本检查自己的算术）"))
                       : std::string(tr(lang, "claims checked", "判定的论断")),
          {std::string(tr(lang, "quantity", "量")), std::string(tr(lang, "source", "出处")),
           std::string(tr(lang, "document", "文档")), "kvlab", std::string(tr(lang, "allowed", "允许")),
           std::string(tr(lang, "unit", "单位")), std::string(tr(lang, "verdict", "结论")),
           std::string(tr(lang, "why allowed", "允许范围的依据"))},
          {}};
  for (const auto& e : r.expectations) {
    if (e.cross_check != cross_checks) continue;
    const Cell kvlab = e.holds() ? Cell{e.measured} : Cell{fmt::format("{:.17g}", e.measured)};
    t.rows.push_back({e.quantity, e.source, document_text(e), kvlab, allowed_text(e), e.unit, row_verdict(e, lang), e.why});
  }
  return t;
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json j;
  j["check"] = r.check;
  j["source"] = r.source;
  j["claim"] = r.claim;
  j["status"] = !r.skipped.empty() ? "skipped" : r.passed() ? "pass" : "fail";
  const Headline h = headline(r);
  j["headline"] = {{"document", h.document}, {"kvlab", h.kvlab}, {"verdict", outcome_key(h.outcome)},
                   {"quantity", h.quantity}, {"erratum", h.erratum}};
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
    if (e.cross_check) x["cross_check"] = true;
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

void write_result(std::ostream& out, const Result& r, Format f, Lang lang) {
  const Headline h = headline(r);
  const std::string& claim = lang == Lang::zh && !r.claim_zh.empty() ? r.claim_zh : r.claim;
  switch (f) {
    case Format::text: write_text(out, r, lang); break;
    case Format::json: out << json_text(to_json(r)) << '\n'; break;
    case Format::md:
      out << "### " << r.check << " (" << r.source << ")\n\n" << claim << "\n\n";
      if (h.outcome != Outcome::skipped)
        out << "- " << tr(lang, "document", "文档") << ": " << md_escape(h.document) << "\n- kvlab: " << md_escape(h.kvlab)
            << (h.quantity.empty() ? "" : " (" + md_escape(h.quantity) + ")") << '\n';
      out << "- **" << verdict_line(r, h, lang) << "**\n\n";
      for (const auto& t : all_tables(r, lang)) write_md_table(out, t);
      for (const auto& e : r.errata()) out << tr(lang, "- ERRATUM ", "- 勘误 ") << e << "\n";
      if (r.warnings)
        for (const auto& w : *r.warnings) out << tr(lang, "- warning: ", "- 警告：") << w << "\n";
      out << '\n';
      break;
    case Format::csv:  // the tables; '#' lines name the check, its headline and each table
      out << "# check: " << r.check << " (" << r.source << "), verdict: " << outcome_key(h.outcome) << "\n";
      if (h.outcome != Outcome::skipped) out << "# document: " << h.document << "; kvlab: " << h.kvlab << "\n";
      if (r.warnings)
        for (const auto& w : *r.warnings) out << "# warning: " << w << "\n";
      for (const auto& t : all_tables(r, lang)) write_csv_table(out, t);
      break;
  }
}

namespace {

// `kvlab all` on one screen: one line per check (name, verdict, the headline's two figures).
void write_all_summary(std::ostream& out, const std::vector<Result>& results, const AllView& view) {
  const Lang lang = view.lang;
  Table t{"", {std::string(tr(lang, "check", "检查")), std::string(tr(lang, "verdict", "结论")),
               std::string(tr(lang, "document", "文档")), "kvlab"}, {}};
  std::size_t errata_checks = 0, errata = 0;
  for (const auto& r : results) {
    const Headline h = headline(r);
    errata += h.errata;
    errata_checks += h.errata > 0 ? 1 : 0;
    if (view.quiet && h.outcome != Outcome::did_not_hold) continue;
    std::string verdict = h.outcome == Outcome::held_document_off ? std::string(tr(lang, "held *", "成立 *"))
                          : h.outcome == Outcome::held             ? std::string(tr(lang, "held", "成立"))
                                                                   : outcome_words(h.outcome, lang);
    if (h.outcome == Outcome::skipped) {
      t.rows.push_back({r.check, verdict, fit_width(r.skipped, 56), std::string()});
      continue;
    }
    t.rows.push_back({r.check, verdict, fit_width(h.document, 30), fit_width(h.kvlab, 26)});
  }
  if (!t.rows.empty()) write_text_table(out, t);
  if (errata > 0)
    out << (lang == Lang::zh
                ? fmt::format("* {} 个文档数字（{} 项检查）有误：`kvlab errata` 逐条解释；`kvlab 检查名` 显示单项\n", errata,
                              errata_checks)
                : fmt::format("* {} ({}) {} off: `kvlab errata` explains each; `kvlab NAME` shows one\n",
                              count_noun(errata, "document figure"), count_noun(errata_checks, "check"),
                              errata == 1 ? "is" : "are"));
}

// The lines that close `kvlab all` in every format but JSON: the benchmarks left out (so that a
// reader does not take the count for all of kvlab) and last "N passed, M failed". csv writes them
// as `#` comment lines, md as paragraphs.
void write_all_counts(std::ostream& out, long passed, long failed, Format f, const AllView& view) {
  const std::string lead = f == Format::csv ? "# " : "";
  const std::string end = f == Format::md ? "\n\n" : "\n";
  if (!view.skipped_benchmarks.empty())
    out << lead
        << fmt::format(fmt::runtime(tr(view.lang, "not run: the benchmarks {} (`kvlab all --bench` runs them too)",
                                       "未运行：基准 {}（`kvlab all --bench` 连同它们一起运行）")),
                       fmt::join(view.skipped_benchmarks, ", "))
        << end;
  out << lead
      << fmt::format(fmt::runtime(tr(view.lang, "{} passed, {} failed", "{} 项通过，{} 项未通过")), passed, failed)
      << '\n';
}

}  // namespace

void write_all(std::ostream& out, const std::vector<Result>& results, Format f, const AllView& view) {
  const auto passed = std::count_if(results.begin(), results.end(),
                                    [](const Result& r) { return r.passed(); });
  const auto failed = static_cast<long>(results.size()) - passed;
  auto shown = [&](const Result& r) { return !view.quiet || !r.passed(); };
  if (f == Format::json) {
    nlohmann::json j{{"results", nlohmann::json::array()},
                     {"passed", passed},
                     {"failed", failed},
                     {"skipped_benchmarks", view.skipped_benchmarks}};
    for (const auto& r : results)
      if (shown(r)) j["results"].push_back(to_json(r));
    out << json_text(j) << '\n';
    return;
  }
  if (f == Format::text && !view.full) {
    write_all_summary(out, results, view);
    write_all_counts(out, passed, failed, f, view);
    return;
  }
  std::size_t errata = 0;  // those reported above: --quiet leaves out the checks that held
  for (const auto& r : results) {
    if (!shown(r)) continue;
    errata += r.errata().size();
    write_result(out, r, f, view.lang);
    if (f == Format::text) out << '\n';
  }
  if (f == Format::text && errata > 0)
    out << fmt::format(fmt::runtime(tr(view.lang, "{} document errata reported above (they do not fail a check)\n",
                                       "上文报告了 {} 条文档勘误（勘误不使检查失败）\n")),
                       errata);
  write_all_counts(out, passed, failed, f, view);
}

}  // namespace kvlab
