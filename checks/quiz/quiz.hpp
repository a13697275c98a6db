// The course's estimation drills (004 §B.2, §C questions 8 and 9; 000 §7.4), with seeded
// random parameters, for `kvlab quiz`.
//
// Each question is answered by the same library functions the checks use (cost/kv_cache for
// cache bytes and MHA/GQA ratios, cost/roofline for the ridge point, spec/expected_tokens for
// E[τ]), and carries its worked answer: the formula with the numbers filled in. Answers are
// accepted within a relative tolerance that the question states, with the reason.
//
//   kv_cache         KV cache of a catalogue model at a batch, context and cache dtype, in GiB
//                    (004 §1.4, §B.2 (b), §C 8)
//   decode_bound     decode tokens/s upper bound at batch 1 from the weights alone (004 §1.5,
//                    §B.2 (c), §C 9)
//   ridge            a GPU's ridge point, peak bf16 FLOP/s / bandwidth (004 §1.5, §C 9)
//   gqa_ratio        how many times an MHA cache of the same shape exceeds a model's GQA/MQA
//                    cache: n_head / n_kv_head (004 §2.2, §C 8, §C 10)
//   expected_tokens  E[τ] = (1 − α^{K+1}) / (1 − α) for α and K (000 §7.4)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlab {

enum class QuizKind { kv_cache, decode_bound, ridge, gqa_ratio, expected_tokens };

/// "kv-cache" | "decode-bound" | "ridge" | "gqa-ratio" | "etau" -> QuizKind; throws InputError
/// naming --kind otherwise.
QuizKind parse_quiz_kind(const std::string& s);
/// The name parse_quiz_kind reads.
const char* quiz_kind_name(QuizKind k);
/// Every kind, in the order a quiz cycles through them.
std::vector<QuizKind> all_quiz_kinds();

/// One drill: the question, the answer in `unit`, the accepted relative error and the worked
/// answer; plus the parameters it was drawn with, so that a test can recompute the answer.
struct QuizQuestion {
  QuizKind kind = QuizKind::kv_cache;
  std::string text;           ///< the question, with every figure the answer needs
  double answer = 0.0;        ///< in `unit`
  std::string unit;           ///< a unit of the self-test's table: "GiB", "tok/s", "FLOP/B", "×", "tokens"
  double tolerance_rel = 0;   ///< |given − answer| <= tolerance_rel · answer is accepted
  std::string tolerance_why;  ///< why that tolerance
  std::string worked;         ///< the formula with the numbers, one or two lines
  std::string source;         ///< document section, e.g. "004 §1.4, §C 8"
  // The draw (what applies to the kind; the rest stays empty/zero).
  std::string model;          ///< catalogue model (kv_cache, decode_bound, gqa_ratio)
  std::string gpu;            ///< catalogue GPU (decode_bound, ridge)
  std::uint64_t batch = 0, ctx = 0;
  std::string kv_dtype;       ///< "bf16" or "fp8" (kv_cache)
  double alpha = 0.0;         ///< acceptance rate (expected_tokens)
  int k = 0;                  ///< draft tokens per step (expected_tokens)
};

/// `count` questions (1..100) drawn with `seed`, cycling through `kinds` (every kind when empty).
/// The same seed gives the same quiz. Reads the model and GPU catalogue (data/). Throws
/// InputError naming --count when count is out of range.
std::vector<QuizQuestion> make_quiz(std::uint64_t seed, int count, const std::vector<QuizKind>& kinds = {});

}  // namespace kvlab
