// lib/report/writers: the headline (answer first), the claims table's columns and `kvlab all`'s
// one-screen summary, on hand-made results; and the terminal width of Chinese text.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/lang.hpp"
#include "report/writers.hpp"

namespace report_writers_test {

using namespace kvlab;

namespace {

Expectation row(const std::string& quantity, double expected, double tolerance, double measured) {
  return Expectation{.quantity = quantity, .source = "000 §2.3", .unit = "sequences", .expected = expected,
                     .tolerance = tolerance, .why = "exact", .measured = measured};
}

Result max_batch_like() {
  Result r{.check = "max-batch", .source = "000 §2.3", .claim = "max batch on 8 × A100-80GB"};
  r.expect(row("weights", 140, 0.5, 140)).stated = Stated::parse("140", "≈ 140 GB");
  r.expect(row("max batch", 298, 0.5, 298)).stated = Stated::parse("320", "≈ 400 / 1.25 ≈ 320");
  return r;
}

std::string text_of(const Result& r, Lang lang = Lang::en) {
  std::ostringstream out;
  write_result(out, r, Format::text, lang);
  return out.str();
}

std::string first_lines(const std::string& text, int n) {
  std::istringstream in(text);
  std::string line, out;
  for (int i = 0; i < n && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

}  // namespace

TEST_CASE("headline: held, held but the document's figure is off, did not hold, skipped") {
  Result r = max_batch_like();
  Headline h = headline(r);
  CHECK(h.outcome == Outcome::held_document_off);
  CHECK(h.document == "≈ 400 / 1.25 ≈ 320");  // the erratum's row, not the first row
  CHECK(h.kvlab == "298 sequences");
  CHECK(h.errata == 1);
  CHECK(h.erratum.find("320") != std::string::npos);
  CHECK(std::string(outcome_key(h.outcome)) == "held_document_off");

  r.expectations[1].stated = Stated::parse("298");  // the document right: plain held
  CHECK(headline(r).outcome == Outcome::held);
  CHECK(headline(r).document == "≈ 140 GB");        // first row with a stated figure

  r.expectations[0].measured = 141;  // a row broken: did not hold, and the headline shows that row
  h = headline(r);
  CHECK(h.outcome == Outcome::did_not_hold);
  CHECK(h.quantity == "weights");
  CHECK(h.kvlab == "141 sequences");

  r.expectations[0].measured = std::numeric_limits<double>::quiet_NaN();  // NaN never holds
  CHECK(headline(r).outcome == Outcome::did_not_hold);

  Result s{.check = "spec-real", .skipped = "the trained pair is not here"};
  CHECK(headline(s).outcome == Outcome::skipped);
}

TEST_CASE("headline: a marked row and Result::answer win over the default row") {
  Result r = max_batch_like();
  r.expectations[0].headline = true;
  r.answer = "140 GB of weights";
  const Headline h = headline(r);
  CHECK(h.quantity == "weights");
  CHECK(h.kvlab == "140 GB of weights");
  CHECK(h.outcome == Outcome::held_document_off);  // the verdict still counts every row
}

TEST_CASE("text report: the verdict within the first five lines, in English and Chinese") {
  const Result r = max_batch_like();
  const std::string en = first_lines(text_of(r), 5);
  CHECK(en.find("verdict: HELD, but the document's figure is off (2 of 2 judged rows hold; 1 document figure off)") !=
        std::string::npos);
  CHECK(en.find("document: ≈ 400 / 1.25 ≈ 320 · kvlab: 298 sequences") != std::string::npos);
  CHECK(en.find("erratum: ") != std::string::npos);
  const std::string zh = first_lines(text_of(r, Lang::zh), 5);
  CHECK(zh.find("结论：成立，但文档的数字有误") != std::string::npos);

  Result broken = max_batch_like();
  broken.expectations[1].measured = 297;
  CHECK(first_lines(text_of(broken), 5).find("verdict: DID NOT HOLD") != std::string::npos);
}

TEST_CASE("claims table: document, kvlab, allowed as a range, verdict; cross-checks apart") {
  Result r = max_batch_like();
  r.expect(row("a range", 7.5, 7.5, 15));
  r.expect(row("a rounding", 2.0, 1e-12, 2.0));
  r.expect(row("self", 1, 0, 1)).cross_check = true;
  const Table t = expectation_table(r);
  CHECK(t.columns == std::vector<std::string>{"quantity", "source", "document", "kvlab", "allowed", "unit",
                                              "verdict", "why allowed"});
  REQUIRE(t.rows.size() == 4);  // the cross-check is not among the claims
  CHECK(std::get<std::string>(t.rows[1][4]) == "[297.5, 298.5]");
  CHECK(std::get<std::string>(t.rows[1][6]) == "held, document off");
  CHECK(std::get<std::string>(t.rows[2][4]) == "[0, 15]");  // not "7.5 ± 7.5"
  CHECK(std::get<std::string>(t.rows[3][4]) == "2 ± 1e-12");
  const Table cross = expectation_table(r, true);
  REQUIRE(cross.rows.size() == 1);
  CHECK(std::get<std::string>(cross.rows[0][4]) == "= 1");
  const std::string text = text_of(r);
  CHECK(text.find("kvlab's own cross-checks") > text.find("claims checked"));
}

TEST_CASE("all: one line per check, the errata count, and the summary line; --quiet and --full") {
  std::vector<Result> results{max_batch_like(), max_batch_like()};
  results[1].check = "broken";
  results[1].expectations[0].measured = 0;
  std::ostringstream summary, quiet, full;
  write_all(summary, results, Format::text);
  const std::string s = summary.str();
  CHECK(s.find("max-batch") != std::string::npos);
  CHECK(s.find("held *") != std::string::npos);
  CHECK(s.find("DID NOT HOLD") != std::string::npos);
  CHECK(s.find("`kvlab errata`") != std::string::npos);
  CHECK(s.find("claims checked") == std::string::npos);  // no report in the summary
  CHECK(s.substr(s.size() - std::string("1 passed, 1 failed\n").size()) == "1 passed, 1 failed\n");
  write_all(quiet, results, Format::text, AllView{.quiet = true});
  CHECK(quiet.str().find("max-batch") == std::string::npos);
  CHECK(quiet.str().find("broken") != std::string::npos);
  write_all(full, results, Format::text, AllView{.full = true});
  CHECK(full.str().find("claims checked") != std::string::npos);
}

TEST_CASE("all: the benchmarks left out are named, with the command that runs them, before the count") {
  const std::vector<Result> results{max_batch_like()};
  const AllView view{.skipped_benchmarks = {"spec-wallclock", "cpu-roofline"}};
  for (const bool full : {false, true}) {
    std::ostringstream out;
    AllView v = view;
    v.full = full;
    write_all(out, results, Format::text, v);
    const std::string s = out.str();
    CAPTURE(s);
    const auto line = s.find("not run: the benchmarks spec-wallclock, cpu-roofline (`kvlab all --bench` runs them too)\n");
    REQUIRE(line != std::string::npos);
    CHECK(line < s.find("1 passed, 0 failed"));  // the count stays the last line
  }
  std::ostringstream zh, none, json, json_none;
  AllView in_zh = view;
  in_zh.lang = Lang::zh;
  write_all(zh, results, Format::text, in_zh);
  CHECK(zh.str().find("未运行：基准 spec-wallclock, cpu-roofline") != std::string::npos);
  write_all(none, results, Format::text);
  CHECK(none.str().find("not run") == std::string::npos);  // --bench or --only: nothing left out
  write_all(json, results, Format::json, view);
  CHECK(nlohmann::json::parse(json.str())["skipped_benchmarks"] ==
        nlohmann::json::array({"spec-wallclock", "cpu-roofline"}));
  write_all(json_none, results, Format::json);
  CHECK(nlohmann::json::parse(json_none.str())["skipped_benchmarks"] == nlohmann::json::array());
}

TEST_CASE("all in md and csv: the benchmarks left out and the count close the output too, also under --quiet") {
  const std::vector<Result> results{max_batch_like()};
  for (const Format f : {Format::md, Format::csv}) {
    std::ostringstream out, quiet;
    write_all(out, results, f, AllView{.skipped_benchmarks = {"cpu-roofline"}});
    const std::string s = out.str(), lead = f == Format::csv ? "# " : "";
    CAPTURE(s);
    const auto line = s.find(lead + "not run: the benchmarks cpu-roofline");
    REQUIRE(line != std::string::npos);
    CHECK(line > s.find("claims checked"));  // after the reports
    CHECK(s.ends_with(lead + "1 passed, 0 failed\n"));
    write_all(quiet, results, f, AllView{.quiet = true});  // every check held: only the count is left
    CHECK(quiet.str() == lead + "1 passed, 0 failed\n");
  }
  std::ostringstream zh;
  write_all(zh, results, Format::text, AllView{.lang = Lang::zh});
  CHECK(zh.str().ends_with("1 项通过，0 项未通过\n"));
}

TEST_CASE("text report in Chinese: the section titles too, not only the headline and the columns") {
  Result r = max_batch_like();
  r.notes.push_back("assumptions: weights sharded evenly");
  r.warnings = std::vector<std::string>{"a total may be short"};
  const std::string zh = text_of(r, Lang::zh);
  CHECK(zh.find("\n注：\n  - assumptions: weights sharded evenly\n") != std::string::npos);
  CHECK(zh.find("\n文档勘误（") != std::string::npos);
  CHECK(zh.find("\n  - 勘误 ") != std::string::npos);
  CHECK(zh.find("\n警告（") != std::string::npos);
  CHECK(zh.find("  - 警告：a total may be short") != std::string::npos);
  for (const char* english : {"notes:", "document errata (", "ERRATUM", "warnings (", "warning:"}) {
    CAPTURE(english);
    CHECK(zh.find(english) == std::string::npos);
  }
  std::ostringstream md;
  write_result(md, r, Format::md, Lang::zh);
  CHECK(md.str().find("- 勘误 ") != std::string::npos);
  CHECK(md.str().find("- 警告：") != std::string::npos);
  CHECK(md.str().find("ERRATUM") == std::string::npos);
  const std::string en = text_of(r);
  CHECK(en.find("\nnotes:\n") != std::string::npos);
  CHECK(en.find("  - ERRATUM ") != std::string::npos);
}

TEST_CASE("display width: Chinese takes two columns; fit_width cuts by columns, not bytes") {
  CHECK(display_width("839 万") == 6);
  CHECK(display_width("成立") == 4);
  CHECK(display_width("abc") == 3);
  CHECK(display_width("e\xCC\x81") == 1);  // e + combining acute accent
  CHECK(display_width("\xFF") == 1);       // an invalid byte counts one column
  CHECK(fit_width("成立，但文档的数字有误", 7) == "成立，…");
  CHECK(display_width(fit_width("成立，但文档的数字有误", 7)) <= 7);
  CHECK(fit_width("short", 10) == "short");
}

TEST_CASE("terminal_safe: control characters and invalid bytes become '?', UTF-8 text stays") {
  CHECK(terminal_safe("--bo\ngus") == "--bo?gus");
  CHECK(terminal_safe("a\x1b[31mb\rc\x7f") == "a?[31mb?c?");
  CHECK(terminal_safe("x\xff\xc3y") == "x??y");                  // invalid UTF-8 bytes
  CHECK(terminal_safe("\xc2\x9b") == "?");                      // C1 control (CSI) in UTF-8
  CHECK(terminal_safe("成立 8 × a100 ≤ 1") == "成立 8 × a100 ≤ 1");
}

TEST_CASE("lang: --lang and KVLAB_LANG") {
  CHECK(parse_lang("zh") == Lang::zh);
  CHECK(parse_lang("zh_CN.UTF-8") == Lang::zh);
  CHECK(parse_lang("en") == Lang::en);
  CHECK_THROWS_WITH_AS(parse_lang("fr"), "--lang: must be en or zh (got 'fr')", InputError);
  CHECK(resolve_lang(std::string("zh")) == Lang::zh);
}

TEST_CASE("claims table: an allowed interval is clipped to the values the quantity can take") {
  Result r{.check = "spec-real", .source = "000 §7.2", .claim = "α"};
  Expectation& a = r.expect(row("α observed", 0.795, 0.555, 0.8));
  a.unit = "";
  CHECK(text_of(r).find("[0.24, 1.35]") != std::string::npos);  // unbounded: the interval as computed
  a.attainable = {0.0, 1.0};
  const std::string text = text_of(r);
  CAPTURE(text);
  CHECK(text.find("[0.24, 1]") != std::string::npos);
  CHECK(text.find("1.35") == std::string::npos);
}

}  // namespace report_writers_test
