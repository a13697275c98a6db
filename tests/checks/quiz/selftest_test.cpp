// kvlab selftest: every question of the documents is in the bank (listed here against their
// numbering), the unit parser, the numeric answers recomputed here from the catalogue's raw
// fields with the course's formulas (not through the library functions the bank uses), and a
// session driven through streams.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "apps/kvlab/selftest_command.hpp"
#include "io/catalogue.hpp"
#include "quiz/selftest.hpp"
#include "quiz/selftest_bank.hpp"
#include "test_util.hpp"

namespace kvlab::quiz_selftest_test {
namespace {

/// The documents' numbering: every item the self-test must cover.
std::vector<std::string> document_items() {
  std::vector<std::string> items;
  for (int i = 1; i <= 16; ++i) items.push_back("004 §C " + std::to_string(i));
  for (int i = 1; i <= 5; ++i) items.push_back("004 §B " + std::to_string(i));
  for (int i = 1; i <= 10; ++i) items.push_back("003 review " + std::to_string(i));
  for (const char* s : {"000 §7.2", "000 §7.3", "000 §7.4", "000 §7.5"}) items.push_back(s);
  return items;
}

/// Whether `source` is `item` or a part of it ("004 §B 2 (b)" is part of "004 §B 2").
bool covers(const std::string& source, const std::string& item) {
  return source == item || source.rfind(item + " (", 0) == 0;
}

TEST_CASE("selftest: every question of 004 §C 1-16, 004 §B 1-5, 003 review 1-10 and 000 §7.2-7.5 is in the bank") {
  const auto qs = make_selftest(1);
  for (const std::string& item : document_items()) {
    CAPTURE(item);
    CHECK(std::any_of(qs.begin(), qs.end(), [&](const SelftestQuestion& q) { return covers(q.source, item); }));
  }
  // No question outside the documents' numbering, ids unique, and selftest_ids in the same order.
  std::set<std::string> ids;
  const auto listed = selftest_ids();
  REQUIRE(listed.size() == qs.size());
  const auto items = document_items();
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const SelftestQuestion& q = qs[i];
    CAPTURE(q.id);
    CHECK(q.id == listed[i]);
    CHECK(ids.insert(q.id).second);
    CHECK(std::any_of(items.begin(), items.end(), [&](const std::string& it) { return covers(q.source, it); }));
  }
  // 004 §C's layers as the document draws them: 1-6 intuition, 7-11 derivation, 12-16 engineering.
  for (const SelftestQuestion& q : qs) {
    if (q.source.rfind("004 §C ", 0) != 0) continue;
    const int n = std::stoi(q.source.substr(std::string("004 §C ").size()));
    CAPTURE(q.id);
    CHECK(q.layer == (n <= 6 ? SelftestLayer::intuition : n <= 11 ? SelftestLayer::derivation : SelftestLayer::engineering));
  }
}

TEST_CASE("selftest: every question has both languages, an explanation and a kvlab command; criteria name real ids") {
  const auto qs = make_selftest(7);
  std::set<std::string> ids;
  for (const SelftestQuestion& q : qs) {
    CAPTURE(q.id);
    ids.insert(q.id);
    CHECK_FALSE(q.text.en.empty());
    CHECK_FALSE(q.text.zh.empty());
    CHECK(q.text.en != q.text.zh);
    CHECK_FALSE(q.explanation.en.empty());
    CHECK_FALSE(q.explanation.zh.empty());
    CHECK(q.command.rfind("kvlab ", 0) == 0);
    if (q.numeric) {
      CHECK(std::isfinite(q.answer));
      CHECK(q.answer > 0);
      CHECK(q.tolerance_rel > 0);
      CHECK_FALSE(q.worked.en.empty());
      CHECK_FALSE(q.worked.zh.empty());
    } else {
      CHECK(q.choices.size() >= 3);
      CHECK(q.correct < q.choices.size());
      for (const Bilingual& c : q.choices) {
        CHECK_FALSE(c.en.empty());
        CHECK_FALSE(c.zh.empty());
      }
    }
  }
  const auto& criteria = selftest_exit_criteria();
  CHECK(criteria.size() == 8);  // the eight bullets of 004 §C's 出关标准
  for (const ExitCriterion& c : criteria) {
    CHECK_FALSE(c.ids.empty());
    for (const std::string& id : c.ids) {
      CAPTURE(id);
      CHECK(ids.count(id) == 1);
    }
  }
}

TEST_CASE("selftest: the same seed gives the same session; the choices are shuffled by it") {
  const auto a = make_selftest(42), b = make_selftest(42), c = make_selftest(43);
  REQUIRE(a.size() == b.size());
  bool differs = false;
  std::set<std::size_t> positions;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].text.en == b[i].text.en);
    CHECK(a[i].correct == b[i].correct);
    differs = differs || a[i].text.en != c[i].text.en || a[i].correct != c[i].correct;
    if (!a[i].numeric) positions.insert(a[i].correct);
  }
  CHECK(differs);
  CHECK(positions.size() >= 3);  // the right choice is not always in one place
}

TEST_CASE("selftest: after the shuffle, the choice marked right is the bank's right choice (listed first there)") {
  const auto& bank = selftest_detail::bank();
  for (std::uint64_t seed : {1, 2, 3, 42, 1234}) {
    const auto qs = make_selftest(seed);
    REQUIRE(qs.size() == bank.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
      if (qs[i].numeric) continue;
      CAPTURE(qs[i].id);
      Rng unused(0);
      const SelftestQuestion unshuffled = bank[i].draw(unused);
      CHECK(qs[i].choices[qs[i].correct].en == unshuffled.choices[0].en);
      CHECK(qs[i].choices[qs[i].correct].zh == unshuffled.choices[0].zh);
    }
  }
}

TEST_CASE("selftest: the right choice is not given away by being the longest") {
  // A reader who always picks the longest option must not pass: in at most half of the
  // multiple-choice questions is the right choice the longest, in either language.
  for (Lang lang : {Lang::en, Lang::zh}) {
    std::size_t longest = 0, choices = 0;
    for (const SelftestQuestion& q : make_selftest(1)) {
      if (q.numeric) continue;
      ++choices;
      std::size_t right = display_width(q.choices[q.correct].in(lang)), other = 0;
      for (std::size_t i = 0; i < q.choices.size(); ++i)
        if (i != q.correct) other = std::max(other, display_width(q.choices[i].in(lang)));
      longest += right > other;
    }
    CAPTURE(lang_code(lang));
    CHECK(longest * 2 <= choices);
  }
}

double recompute(const SelftestQuestion& q) {
  const std::string& id = q.id;
  if (id == "004C-08" || id == "004B-2b") {
    const ModelSpec m = load_model(q.model);
    return 2.0 * static_cast<double>(m.n_layer * q.kv_heads * m.head_dim) * static_cast<double>(q.batch * q.ctx) * 2.0 /
           std::pow(2.0, 30);
  }
  if (id == "004C-09a") {
    const GpuSpec g = load_gpu(q.gpu);
    return g.bf16_flops_per_s / g.bandwidth_bytes_per_s;
  }
  if (id == "004C-09b" || id == "004B-2c") {
    const ModelSpec m = load_model(q.model);
    return load_gpu(q.gpu).bandwidth_bytes_per_s / (2.0 * static_cast<double>(*m.num_parameters));
  }
  if (id == "004B-1") {
    const ModelSpec m = load_model(q.model);
    const double n = static_cast<double>(*m.num_parameters), b = static_cast<double>(q.batch),
                 ctx = static_cast<double>(q.ctx), layers = static_cast<double>(m.n_layer),
                 hd = static_cast<double>(m.head_dim);
    const double flops = 2.0 * n * b + 4.0 * b * ctx * layers * static_cast<double>(m.n_head) * hd;
    const double bytes = 2.0 * n + b * ctx * 2.0 * layers * static_cast<double>(m.n_kv_head) * hd * 2.0;
    return flops / bytes;
  }
  if (id == "004B-5") {
    const double t = static_cast<double>(q.tokens), d = static_cast<double>(q.width);
    const double naive = 12.0 * t * (t + 1) * d * d + 2.0 / 3.0 * t * (t + 1) * (t + 2) * d;
    const double cached = 24.0 * t * d * d + 2.0 * t * (t + 1) * d;
    return naive / cached;
  }
  if (id == "000-7.2a") {
    double a = 0.0;
    for (std::size_t i = 0; i < q.p.size(); ++i) a += std::min(q.p[i], q.q[i]);
    return a;
  }
  if (id == "000-7.3a") {
    double z = 0.0;
    for (std::size_t i = 0; i < q.p.size(); ++i) z += std::max(0.0, q.p[i] - q.q[i]);
    return (q.p[q.token] - q.q[q.token]) / z;
  }
  if (id == "000-7.4a" || id == "000-7.4c") {
    double sum = 0.0;
    for (int i = 0; i <= q.k; ++i) sum += std::pow(q.alpha, i);
    return id == "000-7.4a" ? sum : sum / (1.0 + q.k * q.cost_ratio);
  }
  FAIL("no recomputation for numeric question " << id);
  return NAN;
}

TEST_CASE("selftest: every numeric answer, recomputed from the raw fields for several seeds") {
  std::set<std::string> seen;
  for (std::uint64_t seed : {1, 2, 3, 17, 1234, 99999, 123456789}) {
    for (const SelftestQuestion& q : make_selftest(seed)) {
      if (!q.numeric) continue;
      CAPTURE(q.id);
      CAPTURE(q.text.en);
      seen.insert(q.id);
      CHECK(q.answer == doctest::Approx(recompute(q)).epsilon(1e-9));
    }
  }
  CHECK(seen.size() == 11);
}

TEST_CASE("selftest: the unit parser reads numbers with units and refuses what is ambiguous") {
  using K = SelftestAnswer::Kind;
  auto number = [](const std::string& line) {
    const SelftestAnswer a = parse_selftest_answer(line);
    CAPTURE(line);
    REQUIRE(a.kind == K::number);
    return a;
  };
  CHECK(number("5.64GiB").value == 5.64);
  CHECK(number("5.64GiB").unit == "GiB");
  CHECK(number("5.64 GiB").unit == "GiB");
  CHECK(number("  5.64 gib ").unit == "GiB");
  CHECK(number("5.64 GB").unit == "GB");
  CHECK(number("300 MiB").unit == "MiB");
  CHECK(number("300MB").unit == "MB");
  CHECK(number("3e9").value == 3e9);
  CHECK(number("3e9").unit.empty());
  CHECK(number("3e9 B").unit == "B");
  CHECK(number("140 tok/s").unit == "tok/s");
  CHECK(number("140 tokens/s").unit == "tok/s");
  CHECK(number("153 FLOP/B").unit == "FLOP/B");
  CHECK(number("8x").unit == "×");
  CHECK(number("8 ×").unit == "×");
  CHECK(number("65%").unit == "%");
  CHECK(number("2.7 tokens").unit == "tokens");
  CHECK(number(".5").value == 0.5);
  CHECK(parse_selftest_answer("").kind == K::skip);
  CHECK(parse_selftest_answer("  \r").kind == K::skip);
  // "1,5" is never 1 (nor silently 1.5): a comma is refused and explained, in both languages.
  for (const char* line : {"1,5", "1,024", "5,64 GiB", "0，5"}) {
    CAPTURE(line);
    const SelftestAnswer a = parse_selftest_answer(line);
    CHECK(a.kind == K::invalid);
    CHECK(a.why.en.find("comma") != std::string::npos);
    CHECK(a.why.zh.find("逗号") != std::string::npos);
  }
  for (const char* line : {"junk", "GiB 5", "nan", "inf", "1e999", "1.5.3", "1/2", "1 5", "0x10", "5 parsecs", "5 GiBs",
                           "-", ".", "e5", "5e"}) {
    CAPTURE(line);
    const SelftestAnswer a = parse_selftest_answer(line);
    CHECK(a.kind == K::invalid);
    CHECK_FALSE(a.why.en.empty());
    CHECK_FALSE(a.why.zh.empty());
    CHECK(a.why.en.find('\n') == std::string::npos);
  }
  // Choices: one letter within range, either case, full-width too.
  CHECK(parse_selftest_choice("b", 4).choice == 1);
  CHECK(parse_selftest_choice(" D ", 4).choice == 3);
  CHECK(parse_selftest_choice("(C)", 4).choice == 2);
  CHECK(parse_selftest_choice("Ａ", 4).choice == 0);
  CHECK(parse_selftest_choice("", 4).kind == K::skip);
  for (const char* line : {"E", "AB", "1", "yes"}) CHECK(parse_selftest_choice(line, 4).kind == K::invalid);
}

TEST_CASE("selftest: GB for a GiB question is feedback with the conversion, not a pass; % reads as a fraction") {
  SelftestQuestion q;
  q.id = "test";
  q.numeric = true;
  q.unit = "GiB";
  q.answer = 5.64e9 / std::pow(2.0, 30);  // 5.2526 GiB
  q.tolerance_rel = 0.01;
  const NumericVerdict gb = judge_numeric(q, parse_selftest_answer("5.64 GB"));
  CHECK(gb.kind == NumericVerdict::Kind::wrong_unit);
  CHECK(gb.feedback.en == "you answered in GB; the question asks GiB: 5.64 GB = 5.25 GiB");
  CHECK(gb.feedback.zh.find("GiB") != std::string::npos);
  CHECK(judge_numeric(q, parse_selftest_answer("5.25 GiB")).kind == NumericVerdict::Kind::right);
  CHECK(judge_numeric(q, parse_selftest_answer("5.25")).kind == NumericVerdict::Kind::right);
  CHECK(judge_numeric(q, parse_selftest_answer("5.64")).kind == NumericVerdict::Kind::wrong);
  CHECK(judge_numeric(q, parse_selftest_answer("5378 MiB")).kind == NumericVerdict::Kind::wrong_unit);
  const NumericVerdict huge = judge_numeric(q, parse_selftest_answer("1e308 TiB"));  // beyond a double in GiB
  CHECK(huge.kind == NumericVerdict::Kind::wrong_unit);
  CHECK(huge.feedback.en.ends_with("1e+308 TiB = > 1.8e308 GiB"));
  // The ratio of the units first: 1e306 MiB is 9.77e302 GiB, not beyond a double.
  CHECK(judge_numeric(q, parse_selftest_answer("1e306 MiB")).feedback.en.ends_with("= 9.77e+302 GiB"));
  CHECK(judge_numeric(q, parse_selftest_answer("-1e308 TiB")).feedback.en.ends_with("= < −1.8e308 GiB"));
  CHECK(judge_numeric(q, parse_selftest_answer("1e-320 B")).feedback.en.ends_with("= ≈ 0 (below 4.9e-324) GiB"));
  CHECK(judge_numeric(q, parse_selftest_answer("5.25 tok/s")).kind == NumericVerdict::Kind::other_dimension);
  SelftestQuestion p = q;
  p.unit = "";
  p.answer = 0.65;
  CHECK(judge_numeric(p, parse_selftest_answer("65%")).kind == NumericVerdict::Kind::right);
  CHECK(judge_numeric(p, parse_selftest_answer("0.65")).kind == NumericVerdict::Kind::right);
  CHECK(judge_numeric(p, parse_selftest_answer("65")).kind == NumericVerdict::Kind::wrong);
}

/// The first numeric question of --seed 11 --only derivation, and its place in the session.
std::pair<std::size_t, SelftestQuestion> first_numeric(const std::vector<SelftestQuestion>& qs) {
  for (std::size_t i = 0; i < qs.size(); ++i)
    if (qs[i].numeric) return {i, qs[i]};
  FAIL("no numeric question");
  return {};
}

TEST_CASE("selftest: a session asks again after a wrong unit and junk, scores per layer and criterion, ends at EOF") {
  app::SelftestFlags f;
  f.seed = 11;
  f.lang = "en";
  f.only = {"derivation"};
  std::vector<SelftestQuestion> qs;
  for (auto& q : make_selftest(11))
    if (q.layer == SelftestLayer::derivation) qs.push_back(q);
  const auto [at, q] = first_numeric(qs);
  // Questions before it: answered right by letter. Then the numeric one: a wrong unit (its answer
  // in bytes, or in GB for a GiB question), junk, then right. Then the input ends.
  std::ostringstream script;
  script.precision(17);
  for (std::size_t i = 0; i < at; ++i) script << static_cast<char>('A' + qs[i].correct) << "\n";
  script << (q.unit == "GiB" ? std::to_string(q.answer * std::pow(2.0, 30) / 1e9) + " GB" : "1 MB") << "\n";
  script << "junk\n" << q.answer << "\n";
  std::istringstream in(script.str());
  std::ostringstream out;
  CHECK(app::run_selftest(f, in, out) == 0);
  const std::string text = out.str();
  CAPTURE(text);
  CHECK(text.find("seed 11") != std::string::npos);
  CHECK(text.find("you answered in") != std::string::npos);
  CHECK(text.find("does not start with a number") != std::string::npos);
  CHECK(text.find("end of input") != std::string::npos);
  CHECK(text.find(fmt::format("score: {} / {} right", at + 1, qs.size())) != std::string::npos);
  CHECK(text.find("derivation and estimation") != std::string::npos);
  CHECK(text.find("exit criteria (004 §C):") != std::string::npos);
  CHECK(text.find("exit criteria met:") != std::string::npos);
}

TEST_CASE("selftest: Chinese session, worksheet and JSON") {
  app::SelftestFlags f;
  f.seed = 3;
  f.lang = "zh";
  f.count = 2;
  std::istringstream in("");
  std::ostringstream out;
  CHECK(app::run_selftest(f, in, out) == 0);
  CHECK(out.str().find("得分") != std::string::npos);
  CHECK(out.str().find("出关标准") != std::string::npos);

  f.answers = true;
  f.count.reset();
  std::ostringstream sheet;
  CHECK(app::run_selftest(f, in, sheet) == 0);
  CHECK(sheet.str().find("答案") != std::string::npos);

  f.format = "json";
  f.lang = "en";
  std::ostringstream json;
  CHECK(app::run_selftest(f, in, json) == 0);
  const auto doc = nlohmann::json::parse(json.str());
  REQUIRE(doc["questions"].size() == make_selftest(3).size());
  for (const auto& q : doc["questions"]) {
    CHECK(q.contains("id"));
    CHECK(q.contains("source"));
    CHECK(q.contains("answer"));
  }

  f.answers = false;
  CHECK(test::input_error([&] { app::run_selftest(f, in, json); }).find("--format") != std::string::npos);
  f.format = "text";
  f.lang = "fr";
  CHECK(test::input_error([&] { app::run_selftest(f, in, json); }).find("--lang") != std::string::npos);
  f.lang = "en";
  f.count = 500;
  CHECK(test::input_error([&] { app::run_selftest(f, in, json); }).find("--count") != std::string::npos);
}

}  // namespace

TEST_CASE("selftest: how far an answer is, in percent within 10×, as a factor beyond, never inf") {
  CHECK(relative_error_text(3.0, 1.0) == "off by +200.0%");
  CHECK(relative_error_text(0.5, 1.0) == "off by -50.0%");
  CHECK(relative_error_text(48.0, 1.0) == "48× the answer");
  CHECK(relative_error_text(1.5e308, 3.1) == "4.84e+307× the answer");
  CHECK(relative_error_text(1.5e308, 0.01) == "more than 1.8e308× the answer");
  CHECK(relative_error_text(1.0, 0.0).empty());
}

}  // namespace kvlab::quiz_selftest_test
