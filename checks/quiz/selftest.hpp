// The course's whole self-test, for `kvlab selftest`: every question of 004 §C (the sixteen
// self-test questions in three layers), 004 §B's exercises 1–5, 003's review questions 1–10 and
// the derivations of 000 §7, each with its id, its source in the documents' numbering and its
// layer; scored per layer and against 004 §C's exit criteria (出关标准).
//
// Two kinds of question:
//   numeric  parameters drawn at random from the model and GPU catalogues (data/) and the answer
//            computed by the library functions the checks use (cost/kv_cache, cost/roofline,
//            cost/generation_flops, spec/acceptance, spec/expected_tokens), never typed in; the
//            answer is read with its unit (parse_selftest_answer) and judged within a stated
//            relative tolerance (judge_numeric).
//   choice   multiple choice written from the documents, options shuffled by the seed.
// Every question carries its explanation and the kvlab command whose output demonstrates it.
// Both languages (English and the documents' Chinese) are stored for every text.
//
// The bank is a C++ table (selftest_bank.cpp) rather than data: half of it is code (the numeric
// questions draw and compute), and a table checked by the compiler cannot lose a language or a
// field without the unit test noticing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/lang.hpp"

namespace kvlab {

/// The three layers of 004 §C: 动机与直觉层, 推导与估算层, 工程与 API 层.
enum class SelftestLayer { intuition, derivation, engineering };

/// "intuition" | "derivation" | "engineering" (the names --only reads).
const char* selftest_layer_name(SelftestLayer l);
/// "motive and intuition" / "动机与直觉层", etc.
std::string selftest_layer_title(SelftestLayer l, Lang lang);
/// Reads a layer name; throws InputError naming --only otherwise.
SelftestLayer parse_selftest_layer(const std::string& s);
/// The three layers in the document's order.
std::vector<SelftestLayer> all_selftest_layers();

/// One text in both languages.
struct Bilingual {
  std::string en, zh;
  /// The text in `lang`.
  const std::string& in(Lang lang) const { return lang == Lang::zh ? zh : en; }
};

/// One drawn question, ready to ask in either language.
struct SelftestQuestion {
  std::string id;       ///< stable id, e.g. "004C-08", "003R-04", "000-7.4b"
  std::string source;   ///< document section in the documents' numbering, e.g. "004 §C 8", "004 §B 2 (b)"
  SelftestLayer layer = SelftestLayer::intuition;
  bool numeric = false;
  Bilingual text;       ///< the question (numeric: with every figure the answer needs)
  // Multiple choice.
  std::vector<Bilingual> choices;  ///< in the order shown (shuffled by the seed)
  std::size_t correct = 0;         ///< index of the right choice in `choices`
  // Numeric.
  double answer = 0.0;      ///< in `unit`
  std::string unit;         ///< "GiB", "tok/s", "FLOP/B", "×", "tokens", or "" (a probability)
  double tolerance_rel = 0; ///< |given − answer| <= tolerance_rel · |answer| is accepted
  Bilingual worked;         ///< the formula with the numbers filled in
  // Both kinds.
  Bilingual explanation;    ///< why the answer is what it is, from the documents
  std::string command;      ///< the kvlab command whose output demonstrates it, e.g. "kvlab kv-size"
  // The draw of a numeric question (what applies; the rest empty or zero), for tests to recompute.
  std::string model, gpu;
  std::uint64_t batch = 0, ctx = 0, kv_heads = 0, tokens = 0, width = 0;
  double alpha = 0.0, cost_ratio = 0.0;
  int k = 0;
  std::vector<double> p, q;  ///< target and draft distributions (000 §7.2, §7.3)
  std::size_t token = 0;     ///< the token asked about (000 §7.3)
};

/// Every question of the bank, drawn with `seed` (same seed, same questions, choices in the same
/// order), in the documents' order: 004 §C 1–16, 004 §B 1–5, 003 review 1–10, 000 §7.
/// Reads the model and GPU catalogue (data/).
std::vector<SelftestQuestion> make_selftest(std::uint64_t seed);

/// The ids make_selftest returns, in order, without drawing (no catalogue read).
std::vector<std::string> selftest_ids();

/// A parsed answer line.
struct SelftestAnswer {
  enum class Kind { number, choice, skip, invalid };
  Kind kind = Kind::skip;
  double value = 0.0;   ///< number: finite, as typed
  std::string unit;     ///< number: the unit as spelled in the canonical table ("GB", "GiB", "%", ...); "" if none
  std::size_t choice = 0;  ///< choice: 0 for A, 1 for B, ...
  Bilingual why;        ///< invalid: one line saying what to type instead
};

/// Reads one answer line to a numeric question: optional spaces, a finite decimal number ("16",
/// "-2.5", "1e3", ".5", "3e9"), then optionally a unit, glued or after spaces ("5.64GiB",
/// "5.64 GiB", "140 tok/s", "8x", "65%"). Units known (case-insensitive): B, KB, KiB, MB, MiB,
/// GB, GiB, TB, TiB; tok/s (tokens/s, token/s, t/s); FLOP/B (FLOPs/B, FLOP/byte); × (x, times,
/// 倍); %; tokens (token, tok, tokens/step). Blank: skip. Invalid (asked again): no number at the start; nan,
/// inf or a number beyond the double range; a comma in or after the number ("1,5" is 1.5 to some
/// and 15 to others and "1,024" is 1024 or 1.024: a decimal comma is never read, the reader is
/// asked for a decimal point and no thousands separators); a second number; an unknown unit.
SelftestAnswer parse_selftest_answer(const std::string& line);

/// Reads one answer line to a multiple-choice question with `n_choices` options: one letter A, B,
/// ... (either case, spaces around allowed; full-width Ａ–Ｚ too). Blank: skip. Anything else:
/// invalid, with a line naming the letters allowed.
SelftestAnswer parse_selftest_choice(const std::string& line, std::size_t n_choices);

/// The verdict on a numeric answer.
struct NumericVerdict {
  enum class Kind { right, wrong, wrong_unit, other_dimension };
  Kind kind = Kind::wrong;
  double value = 0.0;  ///< the answer converted to the question's unit (right, wrong, wrong_unit)
  Bilingual feedback;  ///< wrong_unit: "you answered in GB; the question asks GiB: 5.64 GB = 5.25 GiB";
                       ///< other_dimension: "the question asks GiB, not tok/s"; else empty
};

/// Judges `a` (Kind::number) against `q`: a number without a unit is read in the question's unit;
/// a unit of the same dimension but another scale (GB, MB, MiB for a GiB question) is wrong_unit,
/// with the conversion shown, and not a pass: the question is asked again; "%" for a probability
/// is read as a fraction (65% = 0.65); a unit of another dimension is other_dimension.
NumericVerdict judge_numeric(const SelftestQuestion& q, const SelftestAnswer& a);
/// The same rules for an answer `expected` in `unit` (a name of the unit table: "GiB", "tok/s",
/// "FLOP/B", "×", "tokens", "" for a probability), right within tolerance_rel · |expected|: the
/// quiz's drills. Throws std::logic_error when `unit` or a.unit is not in the table.
NumericVerdict judge_numeric(const std::string& unit, double expected, double tolerance_rel, const SelftestAnswer& a);

/// How far `given` is from `answer`, for feedback: "off by +12.3%" within 10×, "48× the answer" beyond,
/// "more than 1.8e308× the answer" past a double; "" when `answer` is 0 or either is not finite.
std::string relative_error_text(double given, double answer);

/// 004 §C's exit criteria (出关标准), each with the ids of the questions that test it.
struct ExitCriterion {
  Bilingual text;
  std::vector<std::string> ids;
};
/// The eight bullets of 004 §C's 出关标准, in order.
const std::vector<ExitCriterion>& selftest_exit_criteria();

}  // namespace kvlab
