// kvlab quiz: every answer recomputed here from the catalogue's raw fields with the course's
// formulas (not through the library functions the quiz uses), and the tolerance bites.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "apps/kvlab/quiz_command.hpp"
#include "io/catalogue.hpp"
#include "quiz/quiz.hpp"
#include "quiz/selftest.hpp"
#include "test_util.hpp"

namespace kvlab::quiz_quiz_test {
namespace {

double recompute(const QuizQuestion& q) {
  switch (q.kind) {
    case QuizKind::kv_cache: {
      const ModelSpec m = load_model(q.model);
      const double bytes_per_element = q.kv_dtype == "fp8" ? 1.0 : 2.0;
      // Positions held, layer by layer: a sliding layer keeps at most its window (mistral-7b:
      // every layer; gemma-2-9b: the even layers).
      double positions = 0.0;
      for (const auto& l : m.layers)
        positions += static_cast<double>(l.attention == LayerAttention::sliding ? std::min(q.ctx, l.span) : q.ctx);
      return 2.0 * static_cast<double>(m.n_kv_head * m.head_dim) * bytes_per_element *
             static_cast<double>(q.batch) * positions / std::pow(2.0, 30);
    }
    case QuizKind::decode_bound: {
      const ModelSpec m = load_model(q.model);
      return load_gpu(q.gpu).bandwidth_bytes_per_s / (2.0 * static_cast<double>(*m.num_parameters));
    }
    case QuizKind::ridge: {
      const GpuSpec g = load_gpu(q.gpu);
      return g.bf16_flops_per_s / g.bandwidth_bytes_per_s;
    }
    case QuizKind::gqa_ratio: {
      const ModelSpec m = load_model(q.model);
      return static_cast<double>(m.n_head) / static_cast<double>(m.n_kv_head);
    }
    case QuizKind::expected_tokens: {
      double sum = 0.0;
      for (int i = 0; i <= q.k; ++i) sum += std::pow(q.alpha, i);
      return sum;
    }
  }
  return NAN;
}

TEST_CASE("quiz: the worksheet of --seed 1, and 200 more drills, recomputed from the raw fields") {
  for (std::uint64_t seed : {1, 2, 3, 4, 5, 1234, 99999}) {
    for (const QuizQuestion& q : make_quiz(seed, 40)) {
      CAPTURE(q.text);
      CHECK(q.answer == doctest::Approx(recompute(q)).epsilon(1e-12));
      // Each answer, bare, in the unit asked: accepted within its tolerance, and not beyond.
      auto verdict = [&](double v) {
        return judge_numeric(q.unit, q.answer, q.tolerance_rel, {.kind = SelftestAnswer::Kind::number, .value = v})
            .kind;
      };
      CHECK(verdict(q.answer) == NumericVerdict::Kind::right);
      CHECK(verdict(q.answer * (1.0 + 0.9 * q.tolerance_rel)) == NumericVerdict::Kind::right);
      CHECK(verdict(q.answer * (1.0 + 1.1 * q.tolerance_rel)) == NumericVerdict::Kind::wrong);
      CHECK(verdict(NAN) == NumericVerdict::Kind::wrong);
      CHECK_FALSE(q.worked.empty());
    }
  }
}

TEST_CASE("quiz: a KV cache in GB instead of GiB is not accepted; the same seed gives the same quiz") {
  for (const QuizQuestion& q : make_quiz(7, 20, {QuizKind::kv_cache})) {
    const double gb = q.answer * std::pow(2.0, 30) / 1e9;
    CHECK(judge_numeric(q.unit, q.answer, q.tolerance_rel, {.kind = SelftestAnswer::Kind::number, .value = gb}).kind ==
          NumericVerdict::Kind::wrong);  // a bare number is read in GiB
    CHECK(judge_numeric(q.unit, q.answer, q.tolerance_rel,
                        {.kind = SelftestAnswer::Kind::number, .value = gb, .unit = "GB"})
              .kind == NumericVerdict::Kind::wrong_unit);  // shown converted, and asked again
  }
  const auto a = make_quiz(42, 10), b = make_quiz(42, 10);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].text == b[i].text);
  CHECK(make_quiz(43, 10)[0].text != a[0].text);
}

TEST_CASE("quiz: --count and --kind are checked") {
  CHECK(test::input_error([] { make_quiz(1, 0); }).find("--count") != std::string::npos);
  CHECK(test::input_error([] { make_quiz(1, 101); }).find("--count") != std::string::npos);
  CHECK(test::input_error([] { parse_quiz_kind("kv"); }).find("--kind") != std::string::npos);
  for (QuizKind k : all_quiz_kinds()) CHECK(parse_quiz_kind(quiz_kind_name(k)) == k);
}

TEST_CASE("quiz: asked one by one, scored; a skipped line and the end of input are handled") {
  app::QuizFlags f;
  f.seed = 5;
  f.count = 3;
  const auto quiz = make_quiz(5, 3);
  std::istringstream in(std::to_string(quiz[0].answer) + " " + quiz[0].unit + "\n\nnot a number\n");
  std::ostringstream out;
  CHECK(app::run_quiz(f, in, out) == 0);
  const std::string text = out.str();
  CHECK(text.find("✓ accepted") != std::string::npos);
  CHECK(text.find("skipped") != std::string::npos);
  CHECK(text.find("no more input") != std::string::npos);
  CHECK(text.find("the answer: ") != std::string::npos);  // the question left open shows its answer
  CHECK(text.find("score: 1 of 2 answered correctly (3 questions, 1 left open: the input ended)") !=
        std::string::npos);
}

TEST_CASE("quiz: an answer is read with its unit: another scale is converted and asked again, a word is refused") {
  app::QuizFlags f;
  f.seed = 3;
  f.count = 1;
  f.kinds = {"kv-cache"};
  const QuizQuestion q = make_quiz(3, 1, {QuizKind::kv_cache})[0];
  REQUIRE(q.unit == "GiB");
  std::ostringstream mib;
  mib.precision(17);
  mib << q.answer * 1024 << " MiB";
  std::ostringstream gib;
  gib.precision(17);
  gib << q.answer << "GiB";
  std::istringstream in("2 bananas\n" + mib.str() + "\n3 tok/s\n" + gib.str() + "\n");
  std::ostringstream out;
  CHECK(app::run_quiz(f, in, out) == 0);
  const std::string text = out.str();
  CAPTURE(text);
  CHECK(text.find("bananas") != std::string::npos);  // named in the line that asks again
  CHECK(text.find("you answered in MiB; the question asks GiB") != std::string::npos);
  CHECK(text.find("you answered in tok/s; the question asks GiB") != std::string::npos);
  CHECK(text.find("score: 1 of 1 answered correctly (1 question)") != std::string::npos);
}

TEST_CASE("quiz: a line that is not a number is asked again; no nan or inf reaches the score") {
  app::QuizFlags f;
  f.seed = 5;
  f.count = 2;
  const auto quiz = make_quiz(5, 2);
  // Q1: "1,5", "nan", "inf" and "1e999" are each explained and Q1 asked again; then the right answer.
  // Q2: a wrong finite answer, off by a finite percentage.
  std::ostringstream answer;
  answer.precision(17);
  answer << quiz[0].answer;
  std::istringstream in("1,5\nnan\ninf\n1e999\n" + answer.str() + "\n" + std::to_string(quiz[1].answer * 3) + "\n");
  std::ostringstream out;
  CHECK(app::run_quiz(f, in, out) == 0);
  const std::string text = out.str();
  CAPTURE(text);
  CHECK(text.find("comma") != std::string::npos);
  CHECK(text.find("✓ accepted") != std::string::npos);
  CHECK(text.find("off by +200.0%") != std::string::npos);
  CHECK(text.find("score: 1 of 2 answered correctly (2 questions)") != std::string::npos);
  for (const char* word : {"nan%", "inf%", "+nan", "+inf"}) CHECK(text.find(word) == std::string::npos);
  // Five prompts for Q1 (four asked again), one for Q2.
  std::size_t prompts = 0;
  for (std::size_t at = text.find("your answer"); at != std::string::npos; at = text.find("your answer", at + 1)) ++prompts;
  CHECK(prompts == 6);
}

}  // namespace
}  // namespace kvlab::quiz_quiz_test
