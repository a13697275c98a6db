#include "quiz/selftest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "quiz/selftest_bank.hpp"

namespace kvlab {
namespace {

/// What a unit measures; units of one dimension convert into each other.
enum class Dimension { bytes, rate, intensity, ratio, fraction, tokens };

struct UnitInfo {
  const char* name;  ///< as printed
  Dimension dim;
  double factor;     ///< value in the dimension's base unit per 1 of this unit
  std::vector<std::string> spellings;  ///< lower case (ASCII folded)
};

const std::vector<UnitInfo>& unit_table() {
  static const std::vector<UnitInfo> table = {
      {"B", Dimension::bytes, 1.0, {"b", "byte", "bytes"}},
      {"KB", Dimension::bytes, 1e3, {"kb"}},
      {"KiB", Dimension::bytes, 1024.0, {"kib"}},
      {"MB", Dimension::bytes, 1e6, {"mb"}},
      {"MiB", Dimension::bytes, 1024.0 * 1024.0, {"mib"}},
      {"GB", Dimension::bytes, 1e9, {"gb"}},
      {"GiB", Dimension::bytes, 1024.0 * 1024.0 * 1024.0, {"gib"}},
      {"TB", Dimension::bytes, 1e12, {"tb"}},
      {"TiB", Dimension::bytes, 1024.0 * 1024.0 * 1024.0 * 1024.0, {"tib"}},
      {"tok/s", Dimension::rate, 1.0, {"tok/s", "tokens/s", "token/s", "t/s", "tokens/sec", "tok/sec"}},
      {"FLOP/B", Dimension::intensity, 1.0, {"flop/b", "flops/b", "flop/byte", "flops/byte"}},
      {"×", Dimension::ratio, 1.0, {"×", "x", "times", "倍"}},
      {"%", Dimension::fraction, 0.01, {"%"}},
      {"", Dimension::fraction, 1.0, {}},
      {"tokens", Dimension::tokens, 1.0, {"tokens", "token", "tok", "个", "tokens/step", "tok/step"}},
  };
  return table;
}

/// The table's entry for a canonical name ("GiB", "", "×"); nullptr when none.
const UnitInfo* unit_by_name(const std::string& name) {
  for (const UnitInfo& u : unit_table())
    if (name == u.name) return &u;
  return nullptr;
}

/// The table's entry for a spelling typed by the reader; nullptr when unknown.
const UnitInfo* unit_by_spelling(const std::string& typed) {
  std::string folded = typed;
  for (char& c : folded)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (const UnitInfo& u : unit_table())
    for (const std::string& s : u.spellings)
      if (folded == s) return &u;
  return nullptr;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// `line` without leading and trailing white space.
std::string trimmed(const std::string& line) {
  std::size_t i = 0, end = line.size();
  while (i < end && is_space(line[i])) ++i;
  while (end > i && is_space(line[end - 1])) --end;
  return line.substr(i, end - i);
}

SelftestAnswer invalid(std::string en, std::string zh) {
  SelftestAnswer a;
  a.kind = SelftestAnswer::Kind::invalid;
  a.why = {std::move(en), std::move(zh)};
  return a;
}

/// "Ｂ" (full-width, U+FF21..U+FF3A or U+FF41..U+FF5A) -> 'B'; 0 when `s` is not one such letter.
char fullwidth_letter(const std::string& s) {
  if (s.size() != 3 || static_cast<unsigned char>(s[0]) != 0xEF) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]), b2 = static_cast<unsigned char>(s[2]);
  if (b1 == 0xBC && b2 >= 0xA1 && b2 <= 0xBA) return static_cast<char>('A' + (b2 - 0xA1));
  if (b1 == 0xBD && b2 >= 0x81 && b2 <= 0x9A) return static_cast<char>('A' + (b2 - 0x81));
  return 0;
}

/// FNV-1a of `s`: a stream number per question id, the same on every platform.
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

/// SplitMix64's finalizer: seeds for neighbouring streams far apart.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

const char* selftest_layer_name(SelftestLayer l) {
  switch (l) {
    case SelftestLayer::intuition: return "intuition";
    case SelftestLayer::derivation: return "derivation";
    case SelftestLayer::engineering: return "engineering";
  }
  return "?";
}

std::string selftest_layer_title(SelftestLayer l, Lang lang) {
  switch (l) {
    case SelftestLayer::intuition: return std::string(tr(lang, "motive and intuition", "动机与直觉层"));
    case SelftestLayer::derivation: return std::string(tr(lang, "derivation and estimation", "推导与估算层"));
    case SelftestLayer::engineering: return std::string(tr(lang, "engineering and API", "工程与 API 层"));
  }
  return "?";
}

SelftestLayer parse_selftest_layer(const std::string& s) {
  for (SelftestLayer l : all_selftest_layers())
    if (s == selftest_layer_name(l)) return l;
  throw InputError("--only: must be one of intuition, derivation, engineering; got '" + printable(s, 40) + "'");
}

std::vector<SelftestLayer> all_selftest_layers() {
  return {SelftestLayer::intuition, SelftestLayer::derivation, SelftestLayer::engineering};
}

std::vector<SelftestQuestion> make_selftest(std::uint64_t seed) {
  std::vector<SelftestQuestion> out;
  for (const selftest_detail::BankEntry& e : selftest_detail::bank()) {
    // One stream per question, keyed by its id: filtering or reordering the bank changes no draw.
    Rng rng(mix(seed ^ fnv1a(e.id)));
    SelftestQuestion q = e.draw(rng);
    q.id = e.id;
    q.source = e.source;
    q.layer = e.layer;
    if (!q.numeric) {
      // Fisher-Yates with the question's own stream; the bank lists the right choice first.
      std::vector<std::size_t> order(q.choices.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      for (std::size_t i = order.size(); i > 1; --i) {
        const auto j = std::min(static_cast<std::size_t>(rng.uniform() * static_cast<double>(i)), i - 1);
        std::swap(order[i - 1], order[j]);
      }
      std::vector<Bilingual> shuffled;
      std::size_t correct = 0;
      for (std::size_t i = 0; i < order.size(); ++i) {
        shuffled.push_back(q.choices[order[i]]);
        if (order[i] == q.correct) correct = i;
      }
      q.choices = std::move(shuffled);
      q.correct = correct;
    }
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<std::string> selftest_ids() {
  std::vector<std::string> ids;
  for (const selftest_detail::BankEntry& e : selftest_detail::bank()) ids.push_back(e.id);
  return ids;
}

SelftestAnswer parse_selftest_answer(const std::string& line) {
  const std::string s = trimmed(line);
  if (s.empty()) return {};  // blank: skip
  const std::string shown = printable(s, 40);
  if (s.find(',') != std::string::npos || s.find("，") != std::string::npos)
    return invalid(fmt::format("'{}': a comma is ambiguous (a decimal comma, or a thousands separator?); write the "
                               "number with a decimal point and no separators, e.g. 1.5 or 1024",
                               shown),
                   fmt::format("'{}'：逗号有歧义（小数逗号还是千位分隔符？）；请用小数点、不加分隔符，如 1.5 或 1024",
                               shown));
  // The number: [sign] digits [. digits] [e [sign] digits], at least one digit before the exponent.
  std::size_t i = 0;
  const std::size_t n = s.size();
  if (s[i] == '+' || s[i] == '-') ++i;
  std::size_t digits = 0;
  while (i < n && is_digit(s[i])) ++i, ++digits;
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0)
    return invalid(fmt::format("'{}' does not start with a number: type one like 16.2 or 16.2 GiB (an empty line "
                               "skips)",
                               shown),
                   fmt::format("'{}' 开头不是数字：请输入如 16.2 或 16.2 GiB（空行跳过）", shown));
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < n && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < n && is_digit(s[j])) {
      while (j < n && is_digit(s[j])) ++j;
      i = j;
    }
  }
  const std::string number = s.substr(0, i);
  const std::string unit = trimmed(s.substr(i));
  const bool glued = !unit.empty() && (unit[0] == '.' || unit[0] == '/' || unit[0] == '+' || unit[0] == '-');
  if (glued || std::any_of(unit.begin(), unit.end(), is_digit))
    return invalid(fmt::format("'{}' is not one number: type a single number, optionally with its unit, like 16.2 GiB",
                               shown),
                   fmt::format("'{}' 不是一个数：请只输入一个数，可带单位，如 16.2 GiB", shown));
  double value = 0.0;  // from_chars: a decimal point whatever the environment's locale
  const char* first = number.data() + (number[0] == '+' ? 1 : 0);
  const auto [ptr, ec] = std::from_chars(first, number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value))
    return invalid(fmt::format("'{}' is beyond the range of a number: type a finite one like 16.2", shown),
                   fmt::format("'{}' 超出了数的范围：请输入有限的数，如 16.2", shown));
  SelftestAnswer a;
  a.kind = SelftestAnswer::Kind::number;
  a.value = value;
  if (!unit.empty()) {
    const UnitInfo* u = unit_by_spelling(unit);
    if (u == nullptr)
      return invalid(fmt::format("'{}': unknown unit '{}'; kvlab reads B, KB, KiB, MB, MiB, GB, GiB, TB, TiB, tok/s, "
                                 "FLOP/B, ×, %, tokens (or a plain number)",
                                 shown, printable(unit, 20)),
                     fmt::format("'{}'：不认识的单位 '{}'；可用 B、KB、KiB、MB、MiB、GB、GiB、TB、TiB、tok/s、FLOP/B、"
                                 "×、%、tokens（或不带单位）",
                                 shown, printable(unit, 20)));
    a.unit = u->name;
  }
  return a;
}

SelftestAnswer parse_selftest_choice(const std::string& line, std::size_t n_choices) {
  std::string s = trimmed(line);
  if (s.empty()) return {};
  if (s.size() > 1 && (s.back() == ')' || s.back() == '.')) s.pop_back();
  if (s.size() > 1 && s.front() == '(') s.erase(0, 1);
  char letter = 0;
  if (s.size() == 1 && ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
    letter = static_cast<char>(s[0] >= 'a' ? s[0] - 'a' + 'A' : s[0]);
  else
    letter = fullwidth_letter(s);
  const char last = static_cast<char>('A' + static_cast<int>(n_choices) - 1);
  if (letter >= 'A' && letter <= last) {
    SelftestAnswer a;
    a.kind = SelftestAnswer::Kind::choice;
    a.choice = static_cast<std::size_t>(letter - 'A');
    return a;
  }
  const std::string shown = printable(trimmed(line), 40);
  return invalid(fmt::format("'{}' is not one of the letters A–{}: type one letter (an empty line skips)", shown, last),
                 fmt::format("'{}' 不是 A–{} 中的字母：请输入一个字母（空行跳过）", shown, last));
}

NumericVerdict judge_numeric(const std::string& unit, double expected, double tolerance_rel, const SelftestAnswer& a) {
  const UnitInfo* asked = unit_by_name(unit);
  if (asked == nullptr) throw std::logic_error("selftest: the unit asked, '" + unit + "', is not in the table");
  const UnitInfo* given = a.unit.empty() ? asked : unit_by_name(a.unit);
  if (given == nullptr) throw std::logic_error("selftest: answer unit '" + a.unit + "' not in the table");
  NumericVerdict v;
  if (given->dim != asked->dim) {
    v.kind = NumericVerdict::Kind::other_dimension;
    const std::string want = unit.empty() ? "a plain number (a probability) or %" : unit;
    const std::string want_zh = unit.empty() ? "一个纯数（概率）或 %" : unit;
    v.feedback = {fmt::format("you answered in {}; the question asks {}", a.unit, want),
                  fmt::format("你的单位是 {}；题目问的是 {}", a.unit, want_zh)};
    return v;
  }
  v.value = a.value * (given->factor / asked->factor);  // the ratio first: 1e306 MiB fits in GiB
  if (given != asked && given->dim != Dimension::fraction) {
    // Same dimension, another scale (GB for GiB): shown converted, and asked again. Beyond a
    // double (1e308 TiB in GiB) or below its smallest (1e-320 B in GiB) it says so.
    const std::string converted = !std::isfinite(v.value)            ? (v.value < 0 ? "< −1.8e308" : "> 1.8e308")
                                  : v.value == 0.0 && a.value != 0.0 ? "≈ 0 (below 4.9e-324)"
                                                                     : fmt::format("{:.3g}", v.value);
    v.kind = NumericVerdict::Kind::wrong_unit;
    v.feedback = {fmt::format("you answered in {}; the question asks {}: {:g} {} = {} {}", a.unit, unit, a.value,
                              a.unit, converted, unit),
                  fmt::format("你的单位是 {}；题目问的是 {}：{:g} {} = {} {}", a.unit, unit, a.value, a.unit,
                              converted, unit)};
    return v;
  }
  const bool within = std::isfinite(v.value) && std::abs(v.value - expected) <= tolerance_rel * std::abs(expected);
  v.kind = within ? NumericVerdict::Kind::right : NumericVerdict::Kind::wrong;
  return v;
}

std::string relative_error_text(double given, double answer) {
  if (answer == 0.0 || !std::isfinite(given) || !std::isfinite(answer)) return "";
  const double ratio = given / answer;
  if (!std::isfinite(ratio)) return "more than 1.8e308× the answer";
  if (std::abs(ratio) >= 10.0) return fmt::format("{:.3g}× the answer", ratio);
  return fmt::format("off by {:+.1f}%", (ratio - 1.0) * 100.0);
}

NumericVerdict judge_numeric(const SelftestQuestion& q, const SelftestAnswer& a) {
  return judge_numeric(q.unit, q.answer, q.tolerance_rel, a);
}

const std::vector<ExitCriterion>& selftest_exit_criteria() {
  static const std::vector<ExitCriterion> criteria = {
      {{"write the induction proof that the KV cache is valid, and say why only K and V are cached",
        "能写出 KV Cache 成立的归纳证明，并说清为什么只缓存 K、V"},
       {"004C-02a", "004C-02b", "004C-07", "004B-2a"}},
      {{"estimate any model's KV-cache memory with the formula in 30 seconds, the 70B question included",
        "能在 30 秒内用公式估出任意模型的 KV Cache 显存，包括 70B 那道题"},
       {"004C-08", "004B-2b"}},
      {{"explain with arithmetic intensity and the roofline why decoding is slow and what a batch amortizes",
        "能用算术强度和 roofline 解释解码为什么慢、batch 能摊薄什么"},
       {"004C-04", "004C-09a", "004C-09b", "004B-1", "004B-2c"}},
      {{"draw the head grouping of MHA / GQA / MQA and say what GQA saves and what it does not",
        "能画出 MHA / GQA / MQA 的头分组图，说清 GQA 省了什么、没省什么"},
       {"004C-05", "004C-10", "004C-15"}},
      {{"name the MHA → GQA conversion and why it works", "能说出 MHA → GQA 的转换方法和它为什么可行"},
       {"004C-11", "004B-4"}},
      {{"explain why absolute position embeddings invalidate the cache under a sliding window",
        "能解释绝对位置编码为什么让滑动窗口下的缓存失效"},
       {"004C-06"}},
      {{"write a mini-GPT with KV cache and GQA that passes the two consistency tests of §3.5",
        "写出带 KV Cache 和 GQA 的 mini-GPT，通过 §3.5 的两个一致性测试"},
       {"004C-12", "004C-13", "004C-14", "004B-3"}},
      {{"measure the speedup the cache brings and explain it with the complexity of §1.1",
        "测出缓存带来的加速，并能用 §1.1 的复杂度解释"},
       {"004C-01", "004B-5"}},
  };
  return criteria;
}

}  // namespace kvlab
