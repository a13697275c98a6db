#include "quiz_command.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "quiz/quiz.hpp"
#include "quiz/selftest.hpp"
#include "report/lang.hpp"
#include "framework/options.hpp"

namespace kvlab::app {
namespace {

/// "off by +12.3%" for a finite `given`; "NUMBER" when `answer` is 0 (no relative error).
std::string off_by(double given, double answer) {
  const std::string how_far = relative_error_text(given, answer);
  return how_far.empty() ? fmt::format("{:.4g}", given) : how_far;
}

std::string tolerance_text(const QuizQuestion& q) {
  return fmt::format("±{:g}%: {}", q.tolerance_rel * 100.0, q.tolerance_why);
}

}  // namespace

CLI::App* add_quiz_command(CLI::App& app, QuizFlags& f) {
  auto* quiz = app.add_subcommand(
      "quiz", "Estimation drills of 004 §B.2/§C and 000 §7.4 with random parameters; --answers for a worksheet");
  quiz->footer(
      "Kinds: kv-cache (KV-cache GiB of a catalogue model), decode-bound (batch-1 tokens/s from the "
      "weight reads), ridge (a GPU's FLOP/B), gqa-ratio (MHA cache over GQA/MQA cache), etau "
      "(E[τ] of speculative decoding). Each answer is accepted within a stated relative tolerance; "
      "the worked formula follows. The numbers come from the same library functions as the checks.");
  quiz->add_option("--seed", f.seed, "Seed of the drawn parameters (same seed, same quiz)")
      ->transform(kvlab::checks::IntRange(0, std::numeric_limits<std::int64_t>::max()));
  quiz->add_option("--count", f.count, "Number of questions, 1 to 100 (default 5)")
      ->transform(kvlab::checks::IntRange(1, 100));
  quiz->add_option("--kind", f.kinds, "Only these kinds (repeatable): kv-cache, decode-bound, ridge, gqa-ratio, etau")
      ->check(CLI::IsMember({"kv-cache", "decode-bound", "ridge", "gqa-ratio", "etau"}));
  quiz->add_flag("--answers", f.answers, "Print every question with its answer and working; ask nothing");
  quiz->add_option("--format", f.format, "text (default) or md (for --answers worksheets)")
      ->check(CLI::IsMember({"text", "md"}));
  return quiz;
}

int run_quiz(const QuizFlags& f, std::istream& in, std::ostream& out) {
  std::vector<QuizKind> kinds;
  for (const auto& k : f.kinds) kinds.push_back(parse_quiz_kind(k));
  const auto quiz = make_quiz(static_cast<std::uint64_t>(f.seed), f.count, kinds);
  const bool md = f.format == "md";
  out << (md ? "# " : "") << fmt::format("kvlab quiz: {}, seed {}\n", count_noun(quiz.size(), "drill"), f.seed);
  if (!f.answers)
    out << "Answer each with a number in the unit asked, the unit optional (16.2 or 16.2 GiB); an empty line skips.\n";
  int right = 0, asked = 0;
  for (std::size_t i = 0; i < quiz.size(); ++i) {
    const QuizQuestion& q = quiz[i];
    out << fmt::format("\n{}Q{} [{}; {}] {}\n", md ? "**" : "", i + 1, quiz_kind_name(q.kind), q.source,
                       md ? q.text + "**" : q.text);
    if (f.answers) {
      out << fmt::format("{}answer: {:.4g} {} ({})\n", md ? "- " : "  ", q.answer, q.unit, tolerance_text(q));
      out << fmt::format("{}worked: {}\n", md ? "- " : "  ", q.worked);
      continue;
    }
    // Asked again until the line is a number in the question's unit or blank, or the input ends:
    // the self-test's reader ("1,5", "nan" and "2 bananas" are asked again; "2048 MiB" for a GiB
    // question is shown converted and asked again).
    SelftestAnswer answer;
    NumericVerdict verdict;
    bool ended = false;
    for (;;) {
      out << fmt::format("  your answer ({}): ", q.unit) << std::flush;
      std::string line;
      if (!std::getline(in, line)) {
        ended = true;
        break;
      }
      answer = parse_selftest_answer(line);
      if (answer.kind == SelftestAnswer::Kind::skip) break;
      if (answer.kind == SelftestAnswer::Kind::invalid) {
        out << fmt::format("  {}\n", answer.why.en);
        continue;
      }
      verdict = judge_numeric(q.unit, q.answer, q.tolerance_rel, answer);
      if (verdict.kind == NumericVerdict::Kind::right || verdict.kind == NumericVerdict::Kind::wrong) break;
      out << fmt::format("  {}\n", verdict.feedback.en);
    }
    if (ended) {  // the question left open still shows its answer
      out << fmt::format("\n  (no more input: the quiz ends here)\n  the answer: {:.4g} {}\n  worked: {}\n", q.answer,
                         q.unit, q.worked);
      break;
    }
    ++asked;
    if (answer.kind == SelftestAnswer::Kind::skip) {
      out << "  skipped.\n";
    } else if (verdict.kind == NumericVerdict::Kind::right) {
      ++right;
      out << fmt::format("  ✓ accepted: {:.4g} {} ({})\n", q.answer, q.unit, tolerance_text(q));
    } else {
      out << fmt::format("  ✗ not within tolerance: the answer is {:.4g} {} ({}), yours is {}\n", q.answer, q.unit,
                         tolerance_text(q), off_by(verdict.value, q.answer));
    }
    out << fmt::format("  worked: {}\n", q.worked);
  }
  if (!f.answers) {
    const std::size_t left_open = quiz.size() - static_cast<std::size_t>(asked);
    out << fmt::format("\nscore: {} of {} answered correctly ({}{})\n", right, asked, count_noun(quiz.size(), "question"),
                       left_open > 0 ? fmt::format(", {} left open: the input ended", left_open) : "");
  }
  return 0;
}

}  // namespace kvlab::app
