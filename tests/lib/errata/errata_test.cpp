// The errata catalogue (data/errata.json, lib/errata/catalogue.hpp) against the checks: the
// entries a check flags at its defaults are exactly the entries the catalogue says it flags; and
// the precision rule of report/result.hpp (Stated) on the documents' own figures.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "checks/framework/check.hpp"
#include "core/error.hpp"
#include "errata/catalogue.hpp"
#include "report/result.hpp"

namespace errata_errata_test {

using namespace kvlab;

namespace {

// An expectation measuring `measured` against the document's figure `s`.
bool flags(const Stated& s, double measured) {
  Expectation e{.quantity = "q", .expected = measured, .tolerance = 0, .why = "test", .measured = measured};
  e.stated = s;
  return e.is_erratum();
}

}  // namespace

TEST_CASE("precision rule: an exact figure must round to what is written") {
  const Stated s = Stated::parse("0.27");
  CHECK(s.low() == doctest::Approx(0.265));
  CHECK(s.high() == doctest::Approx(0.275));
  CHECK(Stated::parse("140").precision == doctest::Approx(5));  // trailing zeros are not significant
  CHECK(Stated::parse("892", "892 tok/s").high() == doctest::Approx(892.5));
  CHECK_FALSE(flags(Stated::parse("2048", "差 2048 倍"), 2048.5));  // 004 §3.1: 2048.5 rounds to 2048 (E22)
  CHECK(flags(Stated::parse("2048", "差 2048 倍"), 2048.6));
  CHECK_THROWS_AS(Stated::parse("1/3"), std::invalid_argument);
}

TEST_CASE("precision rule: a figure marked approximate may also be truncated, up to one unit above") {
  for (const char* words : {"≈ 153", "约 153", "~153", "大概 153", "大约 153", "往往 153", "153 左右", "about 153"})
    CHECK(Stated::approximate(words));
  CHECK_FALSE(Stated::approximate("2·8·128 = 2048"));
  CHECK_FALSE(Stated::approximate("892 tok/s"));
  // 000 §4.4.3: "MLA 约为 GQA 的 1/3.5 … 约 1/28": 2048/576 = 3.556 and 16384/576 = 28.44, both
  // 1.6% above the written figure, both truncations: neither is an erratum.
  CHECK_FALSE(flags(Stated::parse("3.5", "MLA 约为 GQA 的 1/3.5"), 2048.0 / 576));
  CHECK_FALSE(flags(Stated::parse("28", "约 1/28"), 16384.0 / 576));
  CHECK(flags(Stated::parse("3.5", "1/3.5"), 2048.0 / 576));  // written exact, 3.556 would not round to 3.5
  // 003 Q5: "约占 2GB" for 1.07 GB: neither rounding (1) nor truncation (1) gives 2.
  const Stated two = Stated::parse("2", "KV Cache 约占 2GB 显存");
  CHECK(two.low() == doctest::Approx(1.5));
  CHECK(two.high() == doctest::Approx(3.0));
  CHECK(flags(two, 1.073741824));
  // "≈ 0.27 GB" for 0.283 GB (000 §2.2, E2): above 0.27 + 0.01.
  CHECK(flags(Stated::parse("0.27", "≈ 0.27 GB"), 0.283115520));
  // `scale` converts the figure and its allowance alike.
  const Stated gib = Stated::parse("1.25", "≈ 1.25 GB", 1e9 / 1073741824.0);
  CHECK(gib.high() == doctest::Approx(1.26e9 / 1073741824.0));
}

TEST_CASE("precision rule: a range is read from its low figure's lower end to its high figure's upper end") {
  const Stated often = Stated::range("1", "5", "往往 1-5%");  // approximate: 0.5 .. 6
  CHECK(often.low() == doctest::Approx(0.5));
  CHECK(often.high() == doctest::Approx(6.0));
  CHECK(often.value == doctest::Approx(3.0));
  CHECK(flags(often, 0.361));  // E10
  const Stated exact = Stated::range("2", "4", "2–4×");
  CHECK(exact.low() == doctest::Approx(1.5));
  CHECK(exact.high() == doctest::Approx(4.5));
  CHECK_THROWS_AS(Stated::range("5", "1", "5–1"), std::invalid_argument);
}

TEST_CASE("errata catalogue: every entry is complete, with a unique id and a known kind") {
  const auto errata = load_errata();
  REQUIRE(errata.size() >= 35);
  std::set<std::string> ids;
  for (const auto& e : errata) {
    CAPTURE(e.id);
    CHECK(ids.insert(e.id).second);
    CHECK_FALSE(e.document.empty());
    CHECK(e.command.rfind("kvlab ", 0) == 0);
    if (erratum_kind_is_fair(e.kind)) CHECK(e.flagged_by.empty());  // a convention is never an ERRATUM line
  }
}

TEST_CASE("errata catalogue: a malformed file is one InputError naming the entry and the field") {
  const auto dir = std::filesystem::temp_directory_path() / "kvlab_errata_test";
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& text) {
    std::ofstream(dir / "errata.json") << text;
    return (dir / "errata.json").string();
  };
  CHECK_THROWS_WITH_AS(load_errata(write("{\"errata\": [{\"id\": \"E1\"}]}")), doctest::Contains("source"), InputError);
  CHECK_THROWS_WITH_AS(load_errata(write("[1]")), doctest::Contains("errata"), InputError);
  CHECK_THROWS_WITH_AS(load_errata(write("{\"errata\": [{\"id\": \"X1\"}]}")), doctest::Contains("id"), InputError);
  CHECK_THROWS_AS(load_errata((dir / "absent.json").string()), InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("errata: the checks flag at their defaults exactly the entries the catalogue marks as theirs") {
  std::map<std::string, std::set<std::string>> expected;  // check -> the ids the catalogue says it flags
  for (const auto& e : load_errata())
    for (const auto& check : e.flagged_by) expected[check].insert(e.id);
  std::set<std::string> ran;
  for (const auto& check : checks::make_all_checks()) {
    if (check->is_bench()) continue;  // a benchmark states no document figure
    CAPTURE(check->name());
    checks::RunContext ctx;
    const Result r = check->run(ctx);
    if (!r.skipped.empty()) continue;  // its data is absent here: it flags nothing, proves nothing
    ran.insert(check->name());
    std::set<std::string> flagged;
    for (const Expectation& e : r.expectations) {
      if (!e.is_erratum()) continue;
      CAPTURE(e.quantity);
      CHECK_FALSE(e.stated->erratum.empty());  // every ERRATUM line names its catalogue entry
      flagged.insert(e.stated->erratum);
    }
    CHECK(flagged == expected[check->name()]);
  }
  for (const auto& entry : expected) {  // not a structured binding: clang 14 cannot capture one
    const std::string& check = entry.first;
    CAPTURE(check);
    CHECK(ran.count(check) == 1);  // flagged_by names a check that ran
  }
}

}  // namespace errata_errata_test
