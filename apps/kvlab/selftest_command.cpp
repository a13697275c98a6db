#include "selftest_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "framework/options.hpp"
#include "quiz/selftest.hpp"
#include "report/lang.hpp"

namespace kvlab::app {
namespace {

/// How a question ended in a session.
enum class Outcome { not_reached, skipped, right, wrong };

/// `text` padded with spaces to `width` terminal columns (display width: a Chinese character takes two).
std::string pad(const std::string& text, std::size_t width) {
  const std::size_t w = display_width(text);
  return text + std::string(w < width ? width - w : 0, ' ');
}

/// "label: " in English, "标签：" in Chinese.
std::string label(Lang lang, std::string_view en, std::string_view zh) {
  return lang == Lang::zh ? std::string(zh) + "：" : std::string(en) + ": ";
}

char letter(std::size_t i) { return static_cast<char>('A' + static_cast<int>(i)); }

/// "80 GiB", "0.65", "2.7 tokens": the answer with its unit, four significant figures.
std::string with_unit(double value, const std::string& unit) {
  if (unit.empty()) return fmt::format("{:.4g}", value);
  if (unit == "×") return fmt::format("{:.4g}×", value);
  return fmt::format("{:.4g} {}", value, unit);
}

std::string unit_label(const SelftestQuestion& q, Lang lang) {
  if (!q.unit.empty()) return q.unit;
  return std::string(tr(lang, "a probability, e.g. 0.65 or 65%", "概率，如 0.65 或 65%"));
}

std::string tolerance_text(const SelftestQuestion& q, Lang lang) {
  return fmt::format("±{:g}%{}", q.tolerance_rel * 100.0, tr(lang, " accepted", " 以内算对"));
}

/// The questions of this session: the layers asked for, then `count` of them drawn at random (in
/// the documents' order).
std::vector<SelftestQuestion> session_questions(const SelftestFlags& f, std::uint64_t seed) {
  std::vector<SelftestLayer> layers;
  for (const std::string& s : f.only) layers.push_back(parse_selftest_layer(s));
  std::vector<SelftestQuestion> all = make_selftest(seed), chosen;
  for (SelftestQuestion& q : all)
    if (layers.empty() || std::find(layers.begin(), layers.end(), q.layer) != layers.end()) chosen.push_back(std::move(q));
  if (f.count) {
    require_range("--count", *f.count, 1, static_cast<long long>(chosen.size()));
    Rng rng(seed ^ 0x5e1f7e57ULL);
    std::vector<std::size_t> idx(chosen.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    for (std::size_t i = 0; i < static_cast<std::size_t>(*f.count); ++i) {
      const std::size_t span = idx.size() - i;
      const auto j = i + std::min(static_cast<std::size_t>(rng.uniform() * static_cast<double>(span)), span - 1);
      std::swap(idx[i], idx[j]);
    }
    idx.resize(static_cast<std::size_t>(*f.count));
    std::sort(idx.begin(), idx.end());
    std::vector<SelftestQuestion> picked;
    for (std::size_t i : idx) picked.push_back(chosen[i]);
    chosen = std::move(picked);
  }
  return chosen;
}

/// "[3/43] 004C-02b · 004 §C 2 · motive and intuition" and the question with its choices.
void print_question(std::ostream& out, const SelftestQuestion& q, std::size_t n, std::size_t total, Lang lang,
                    bool md) {
  out << fmt::format("\n{}[{}/{}] {} · {} · {}{}\n", md ? "**" : "", n, total, q.id, q.source,
                     selftest_layer_title(q.layer, lang), md ? "**" : "");
  out << q.text.in(lang) << "\n";
  for (std::size_t i = 0; i < q.choices.size(); ++i)
    out << fmt::format("{}{}. {}\n", md ? "- " : "  ", letter(i), q.choices[i].in(lang));
  if (md) out << "\n";
}

std::string answer_text(const SelftestQuestion& q, Lang lang) {
  if (q.numeric)
    return fmt::format(fmt::runtime(tr(lang, "{} ({})", "{}（{}）")), with_unit(q.answer, q.unit), tolerance_text(q, lang));
  return fmt::format("{}. {}", letter(q.correct), q.choices[q.correct].in(lang));
}

// The options that draw the same questions again: the seed, and --count and --only when given
// (they pick which questions; the seed alone asks every one).
std::string repeat_options(const SelftestFlags& f, std::uint64_t seed) {
  std::string options = fmt::format("--seed {}", seed);
  if (f.count) options += fmt::format(" --count {}", *f.count);
  for (const auto& layer : f.only) options += " --only " + layer;
  return options;
}

void print_worksheet(std::ostream& out, const std::vector<SelftestQuestion>& qs, std::uint64_t seed, Lang lang,
                     bool md, const std::string& repeat) {
  out << (md ? "# " : "")
      << (lang == Lang::zh ? fmt::format("kvlab selftest：自测练习卷，共 {} 题，seed {}\n", qs.size(), seed)
                           : fmt::format("kvlab selftest: worksheet of {}, seed {}\n", count_noun(qs.size(), "question"), seed));
  out << (lang == Lang::zh
              ? fmt::format("先是题目，答案和演算在最后。数值题的参数由 seed 抽取：`kvlab selftest --answers {}` 会打印同一份练习卷。\n",
                            repeat)
              : fmt::format("Questions first, answers with the worked arithmetic at the end. Numeric figures are drawn "
                            "with the seed: `kvlab selftest --answers {}` prints the same sheet.\n",
                            repeat));
  for (std::size_t i = 0; i < qs.size(); ++i) print_question(out, qs[i], i + 1, qs.size(), lang, md);
  out << "\n" << (md ? "## " : "") << tr(lang, "Answers", "答案") << (md ? "\n" : "\n" + std::string(7, '=') + "\n");
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const SelftestQuestion& q = qs[i];
    const char* item = md ? "- " : "    ";
    out << fmt::format("\n{}[{}] {} · {}{}\n", md ? "**" : "", i + 1, q.id, q.source, md ? "**" : "");
    out << fmt::format("{}{}{}\n", item, label(lang, "answer", "答案"), answer_text(q, lang));
    if (q.numeric) out << fmt::format("{}{}{}\n", item, label(lang, "worked", "演算"), q.worked.in(lang));
    out << fmt::format("{}{}{}\n", item, label(lang, "why", "解析"), q.explanation.in(lang));
    out << fmt::format("{}{}{}\n", item, label(lang, "see", "验证"), q.command);
  }
}

void print_json(std::ostream& out, const std::vector<SelftestQuestion>& qs, std::uint64_t seed, Lang lang) {
  nlohmann::ordered_json doc;
  doc["command"] = "selftest";
  doc["seed"] = seed;
  doc["lang"] = std::string(lang_code(lang));
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SelftestQuestion& q : qs) {
    nlohmann::ordered_json j;
    j["id"] = q.id;
    j["source"] = q.source;
    j["layer"] = selftest_layer_name(q.layer);
    j["kind"] = q.numeric ? "numeric" : "choice";
    j["question"] = q.text.in(lang);
    if (q.numeric) {
      j["answer"] = q.answer;
      j["unit"] = q.unit;
      j["tolerance_rel"] = q.tolerance_rel;
      j["worked"] = q.worked.in(lang);
    } else {
      nlohmann::ordered_json choices = nlohmann::ordered_json::array();
      for (const Bilingual& c : q.choices) choices.push_back(c.in(lang));
      j["choices"] = choices;
      j["answer"] = std::string(1, letter(q.correct));
    }
    j["explanation"] = q.explanation.in(lang);
    j["command"] = q.command;
    list.push_back(j);
  }
  doc["questions"] = list;
  nlohmann::ordered_json criteria = nlohmann::ordered_json::array();
  for (const ExitCriterion& c : selftest_exit_criteria()) criteria.push_back({{"criterion", c.text.in(lang)}, {"ids", c.ids}});
  doc["exit_criteria"] = criteria;
  out << doc.dump(2) << "\n";
}

/// Asks `q` until an answer is judged, skipped, or the input ends (std::nullopt).
std::optional<Outcome> ask(std::istream& in, std::ostream& out, const SelftestQuestion& q, Lang lang) {
  for (;;) {
    if (q.numeric)
      out << fmt::format(fmt::runtime(tr(lang, "  your answer ({}): ", "  你的答案（{}）：")), unit_label(q, lang))
          << std::flush;
    else
      out << fmt::format(fmt::runtime(tr(lang, "  your answer (A–{}): ", "  你的答案（A–{}）：")),
                         letter(q.choices.size() - 1))
          << std::flush;
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    const SelftestAnswer a = q.numeric ? parse_selftest_answer(line) : parse_selftest_choice(line, q.choices.size());
    if (a.kind == SelftestAnswer::Kind::skip) {
      out << fmt::format("  {}{}\n", label(lang, "skipped; the answer", "已跳过；答案"), answer_text(q, lang));
      return Outcome::skipped;
    }
    if (a.kind == SelftestAnswer::Kind::invalid) {
      out << "  " << a.why.in(lang) << "\n";
      continue;
    }
    if (!q.numeric) {
      if (a.choice == q.correct) {
        out << fmt::format("  ✓ {}\n", tr(lang, "right", "正确"));
        return Outcome::right;
      }
      out << fmt::format("  ✗ {}{}\n", label(lang, "the answer is", "正确答案是"), answer_text(q, lang));
      return Outcome::wrong;
    }
    const NumericVerdict v = judge_numeric(q, a);
    switch (v.kind) {
      case NumericVerdict::Kind::wrong_unit:
      case NumericVerdict::Kind::other_dimension:
        out << "  " << v.feedback.in(lang) << tr(lang, "; answer again.\n", "；请重新作答。\n");
        continue;
      case NumericVerdict::Kind::right:
        out << fmt::format("  ✓ {}{}\n", label(lang, "accepted", "正确"), answer_text(q, lang));
        return Outcome::right;
      case NumericVerdict::Kind::wrong: {
        const std::string how_far = relative_error_text(v.value, q.answer);
        const std::string off = how_far.empty() ? "" : " (" + how_far + ")";
        out << fmt::format(fmt::runtime(tr(lang, "  ✗ the answer is {}; yours {}{}\n", "  ✗ 正确答案是 {}；你的是 {}{}\n")),
                           answer_text(q, lang), with_unit(v.value, q.unit), off);
        return Outcome::wrong;
      }
    }
  }
}

void print_score(std::ostream& out, const std::vector<SelftestQuestion>& qs, const std::vector<Outcome>& outcome,
                 Lang lang) {
  std::size_t right = 0, answered = 0;
  for (Outcome o : outcome) {
    right += o == Outcome::right;
    answered += o == Outcome::right || o == Outcome::wrong;
  }
  const auto skipped = std::count(outcome.begin(), outcome.end(), Outcome::skipped);
  out << (lang == Lang::zh
              ? fmt::format("\n得分：{} / {} 题答对（作答 {} 题，跳过 {} 题）\n", right, qs.size(), answered, skipped)
              : fmt::format("\nscore: {} / {} right ({} answered, {} skipped)\n", right, qs.size(), answered, skipped));
  // Per layer, aligned by display width.
  const std::vector<std::string> head = {std::string(tr(lang, "layer", "层")), std::string(tr(lang, "right", "答对")),
                                         std::string(tr(lang, "answered", "作答")),
                                         std::string(tr(lang, "questions", "题数"))};
  std::vector<std::vector<std::string>> rows;
  for (SelftestLayer l : all_selftest_layers()) {
    std::size_t n = 0, r = 0, a = 0;
    for (std::size_t i = 0; i < qs.size(); ++i)
      if (qs[i].layer == l) {
        ++n;
        r += outcome[i] == Outcome::right;
        a += outcome[i] == Outcome::right || outcome[i] == Outcome::wrong;
      }
    if (n > 0) rows.push_back({selftest_layer_title(l, lang), std::to_string(r), std::to_string(a), std::to_string(n)});
  }
  std::vector<std::size_t> width(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) {
    width[c] = display_width(head[c]);
    for (const auto& row : rows) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = "  ";
    for (std::size_t c = 0; c < row.size(); ++c) line += pad(row[c], width[c] + 2);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print_row(head);
  for (const auto& row : rows) print_row(row);
  // Exit criteria: met when every question of it that this session reached was answered right.
  out << "\n" << tr(lang, "exit criteria (004 §C):", "出关标准（004 §C）：") << "\n";
  const auto& criteria = selftest_exit_criteria();
  struct Tally {
    std::size_t asked = 0, right = 0;
    std::vector<std::string> missed;
    std::string status;
  };
  std::vector<Tally> tallies;
  std::size_t lw = 0;
  for (const ExitCriterion& c : criteria) {
    Tally t;
    for (const std::string& id : c.ids)
      for (std::size_t i = 0; i < qs.size(); ++i)
        if (qs[i].id == id && outcome[i] != Outcome::not_reached) {
          ++t.asked;
          if (outcome[i] == Outcome::right) ++t.right;
          else t.missed.push_back(id);
        }
    t.status = t.asked == 0 ? std::string(tr(lang, "not asked", "未考"))
               : t.right == t.asked ? std::string(tr(lang, "met", "达到"))
                                    : std::string(tr(lang, "not yet", "未达到"));
    lw = std::max(lw, display_width(t.status));
    tallies.push_back(std::move(t));
  }
  std::size_t met = 0;
  for (std::size_t k = 0; k < criteria.size(); ++k) {
    const Tally& t = tallies[k];
    met += t.asked > 0 && t.right == t.asked;
    std::string detail = fmt::format("{}/{}", t.right, t.asked);
    if (!t.missed.empty())
      detail += fmt::format(fmt::runtime(tr(lang, "; review: {}", "；复习：{}")), fmt::join(t.missed, ", "));
    if (t.asked == 0)
      detail = fmt::format(fmt::runtime(tr(lang, "questions: {}", "题目：{}")), fmt::join(criteria[k].ids, ", "));
    out << fmt::format(fmt::runtime(tr(lang, "  {}. {}  {} ({})\n", "  {}. {}  {}（{}）\n")), k + 1, pad(t.status, lw),
                       criteria[k].text.in(lang), detail);
  }
  out << fmt::format(fmt::runtime(tr(lang, "exit criteria met: {} / {}\n", "达到的出关标准：{} / {}\n")), met,
                     criteria.size());
}

}  // namespace

CLI::App* add_selftest_command(CLI::App& app, SelftestFlags& f) {
  auto* st = app.add_subcommand(
      "selftest", "The course's whole self-test (004 §C, 004 §B, 003 review, 000 §7), scored per layer and exit criterion");
  st->footer(
      "Every question of 004 §C (1-16, in its three layers), 004 §B exercises 1-5, 003's review questions 1-10 and "
      "the derivations of 000 §7 (7.2-7.5). Numeric questions draw a catalogue model or GPU with the seed and are "
      "answered by the library functions the checks use; choices are shuffled by the seed. The seed is printed at "
      "the start: --seed N repeats a session.\n"
      "Answers: a number with or without its unit (5.25, 5.25 GiB, 5.25GiB, 140 tok/s, 153 FLOP/B, 8x, 65%, 3e9 B); "
      "a number in another unit of the same kind (GB or MiB for a GiB question) is converted, shown, and asked "
      "again; a comma is never read as a decimal point ('1,5' is asked again: write 1.5). Choices: one letter. An "
      "empty line skips; the end of input (Ctrl-D) ends the session with the score so far: per layer and against "
      "004 §C's exit criteria (出关标准), each mapped to the questions that test it.\n"
      "--answers prints a worksheet (questions, then answers with the worked arithmetic); --format json with it "
      "gives {\"questions\": [{\"id\", \"source\", ...}]}. --lang zh (or KVLAB_LANG=zh) asks in Chinese.");
  st->add_flag("--answers", f.answers, "Print every question, then the answers with the worked arithmetic; ask nothing");
  st->add_option("--seed", f.seed, "Seed of the draw (default: from the random device, printed)")
      ->transform(kvlab::checks::IntRange(0, std::numeric_limits<std::int64_t>::max()));
  st->add_option("--lang", f.lang, "en or zh (default: KVLAB_LANG, else en)");
  st->add_option("--format", f.format, "text (default), md (worksheet) or json (with --answers)")
      ->check(CLI::IsMember({"text", "md", "json"}));
  st->add_option("--only", f.only, "Only this layer (repeatable): intuition, derivation, engineering")
      ->check(CLI::IsMember({"intuition", "derivation", "engineering"}));
  st->add_option("--count", f.count, "Ask this many questions, drawn with the seed (default: all)")
      ->transform(kvlab::checks::IntRange(1, 100));
  return st;
}

int run_selftest(const SelftestFlags& f, std::istream& in, std::ostream& out) {
  const Lang lang = resolve_lang(f.lang);
  if (f.format != "text" && !f.answers)
    throw InputError("--format " + f.format + ": only with --answers (md and json are the worksheet's formats)");
  std::uint64_t seed = 0;
  if (f.seed) {
    seed = static_cast<std::uint64_t>(*f.seed);
  } else {
    std::random_device device;
    seed = ((static_cast<std::uint64_t>(device()) << 32) ^ device()) & 0x7fffffffffffffffULL;
  }
  const std::vector<SelftestQuestion> qs = session_questions(f, seed);
  if (f.answers) {
    if (f.format == "json") print_json(out, qs, seed, lang);
    else print_worksheet(out, qs, seed, lang, f.format == "md", repeat_options(f, seed));
    return 0;
  }
  out << (lang == Lang::zh
              ? fmt::format("kvlab selftest：共 {} 题，seed {}（用 {} 重做同一套题）\n", qs.size(), seed,
                            repeat_options(f, seed))
              : fmt::format("kvlab selftest: {}, seed {} (repeat with {})\n", count_noun(qs.size(), "question"), seed,
                            repeat_options(f, seed)));
  out << tr(lang,
            "Numbers with or without their unit (5.25 or 5.25 GiB), a letter for a choice; an empty line skips; "
            "Ctrl-D ends with the score.\n",
            "数值题可带或不带单位（5.25 或 5.25 GiB），选择题输入字母；空行跳过；Ctrl-D 结束并给出得分。\n");
  std::vector<Outcome> outcome(qs.size(), Outcome::not_reached);
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const SelftestQuestion& q = qs[i];
    print_question(out, q, i + 1, qs.size(), lang, false);
    const std::optional<Outcome> o = ask(in, out, q, lang);
    if (!o) {
      out << "\n" << tr(lang, "(end of input: the session ends here)", "（输入结束：自测到此为止）") << "\n";
      break;
    }
    outcome[i] = *o;
    if (q.numeric) out << fmt::format("  {}{}\n", label(lang, "worked", "演算"), q.worked.in(lang));
    out << fmt::format("  {}{}\n", label(lang, "why", "解析"), q.explanation.in(lang));
    out << fmt::format("  {}{}\n", label(lang, "see", "验证"), q.command);
  }
  print_score(out, qs, outcome, lang);
  return 0;
}

}  // namespace kvlab::app
