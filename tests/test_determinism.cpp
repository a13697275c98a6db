// Determinism: every registered check, run twice with the same seed, gives the same
// output byte for byte in every format, timings aside; and none of its rows is one that cannot
// fail, and its verdict is within its first five lines (the run is the same, so the tests ride
// along). Timing is the one thing allowed to vary,
// and it is marked: tables whose title starts with "timing" and metrics named seconds_*
// (docs/design.md, "Output contract").
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "report/writers.hpp"
#include "framework/check.hpp"

namespace test_determinism {

using namespace kvlab;

namespace {

Result without_timing(Result r) {
  std::erase_if(r.tables, [](const Table& t) { return t.title.rfind("timing", 0) == 0; });
  std::erase_if(r.metrics, [](const auto& m) { return m.first.rfind("seconds_", 0) == 0; });
  return r;
}

std::string render(const Result& r, Format f, Lang lang = Lang::en) {
  std::ostringstream out;
  write_result(out, r, f, lang);
  return out.str();
}

}  // namespace

TEST_CASE("every check prints the same output twice for the same seed (timings aside)") {
  const auto first = checks::make_all_checks();
  const auto second = checks::make_all_checks();
  REQUIRE(first.size() == second.size());
  REQUIRE(!first.empty());
  for (std::size_t i = 0; i < first.size(); ++i) {
    CAPTURE(first[i]->name());
    if (first[i]->is_bench()) continue;  // a benchmark prints this machine's timings (tests/checks/cpu_roofline_test.cpp)
    checks::RunContext ctx;
    ctx.seed = 42;
    const Result a = without_timing(first[i]->run(ctx));
    const Result b = without_timing(second[i]->run(ctx));
    for (Format f : {Format::text, Format::json, Format::csv, Format::md}) CHECK(render(a, f) == render(b, f));
    // The answer first: the verdict is within the report's first five lines, in either language.
    for (Lang lang : {Lang::en, Lang::zh}) {
      CAPTURE(lang_code(lang));
      std::istringstream text(render(a, Format::text, lang));
      std::string line;
      bool verdict_seen = false;
      for (int n = 0; n < 5 && std::getline(text, line); ++n)
        verdict_seen = verdict_seen || line.rfind(lang == Lang::zh ? "结论：" : "verdict: ", 0) == 0;
      CHECK(verdict_seen);
    }
    // Column names are unique within a table: csv, md and JSON's "columns" tell the columns apart
    // by them, and a table written keyed by column (Result::table_keys) would keep only the last.
    for (const Table& t : a.tables) {
      CAPTURE(t.title);
      std::set<std::string> names;
      for (const auto& column : t.columns) {
        CAPTURE(column);
        CHECK(names.insert(column).second);
      }
      // Every row has a cell per column: csv and md rows line up under their header.
      for (const auto& row : t.rows) CHECK(row.size() == t.columns.size());
    }
    // And every row can fail: a tolerance is a number, with its reason, narrower than the largest
    // deviation the quantity's own range allows (Expectation::attainable).
    for (const Expectation& e : a.expectations) {
      CAPTURE(e.quantity);
      CHECK(e.tolerance >= 0.0);  // false for NaN too
      CHECK_FALSE(e.why.empty());
      CHECK(e.can_fail());
    }
  }
}

TEST_CASE("a different seed changes the draws of the seeded checks") {
  for (const auto& check : checks::make_all_checks()) {
    if (check->name() != "spec-alpha" && check->name() != "kv-invariance") continue;
    CAPTURE(check->name());
    checks::RunContext a, b;
    a.seed = 1;
    b.seed = 2;
    CHECK(render(without_timing(check->run(a)), Format::json) != render(without_timing(check->run(b)), Format::json));
  }
}

}  // namespace test_determinism
