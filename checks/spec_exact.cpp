// spec-exact: speculative decoding samples exactly from the target (000 §7.6, §7.3; sanity [e] of
// 000 §A.2: "spec decode output vs direct target sampling: TV < 0.01"). The exact law of
// --new-tokens tokens after a fixed prompt, enumerated on a small vocabulary, against direct
// sampling and the loop with a soft and a greedy draft (support/spec_exactness.hpp). The biased
// sampler (a greedy draft whose soft probabilities are given to the verifier) fails (unit test).
#include "spec_exact.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "model/gpt.hpp"
#include "model/work.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::spec_exact {
namespace {

constexpr char kSource[] = "000 §7.6, §7.3, §A.2 [e]";
constexpr int kVocab = 8;
constexpr double kFalseAlarm = 1e-4;
constexpr int kComparisons = 8;  // 4 samplers × (TV, chi-square)
constexpr std::int64_t kMaxSamples = 2'000'000;
// Work budget: one sequence costs about (new_tokens + k) tiny forwards (~5 µs each here);
// samples × (new_tokens + k) <= 3e6 is ~1.5 s per sampler at most.
constexpr std::int64_t kWorkBudget = 3'000'000;
const std::vector<int> kPrompt{1, 5, 2};

// The TV bound must be below 1 (TV's whole range) for the comparison to be able to fail; on the
// random pair (V^N outcomes) that asks for a least --samples.
void require_enough_samples(const SpecExactOptions& o) {
  const double per = kFalseAlarm / kComparisons;
  const double l = std::pow(static_cast<double>(kVocab), o.new_tokens) * std::log(2.0) + std::log(1.0 / per);
  const auto min_n = static_cast<std::int64_t>(std::floor(l / 2.0)) + 1;  // 0.5 sqrt(2L/n) < 1
  if (o.samples < min_n)
    throw InputError(fmt::format(
        "--samples: must be at least {} for --new-tokens {} (got {}): below, the TV bound covers "
        "TV's whole range and the check could not fail",
        min_n, o.new_tokens, o.samples));
}

// On a file pair (seconds to minutes): how long, up front, then a progress line.
template <class T>
Progress announce(const SpecExactOptions& o, const RunContext& ctx, const MiniGPT<T>& target, const MiniGPT<T>& draft,
                  std::size_t prompt_len) {
  if (ctx.weights.empty()) return Progress("spec-exact", 0, "", nullptr, false);
  Progress progress = Progress::on_stderr("spec-exact", 4.0 * o.samples, "sequences");
  const double len = static_cast<double>(prompt_len) + o.new_tokens + o.k;
  // Short forwards run at half the rate of a window's: counted twice (as spec-real's estimate).
  progress.announce(fmt::format(
      "about {} on the reference machine (4 samplers × {} sequences of {} tokens on the file pair)",
      duration_text(model_seconds(2.0 * 4.0 * static_cast<double>(o.samples) *
                                  (forward_flops(target.config(), len) + forward_flops(draft.config(), len)))),
      o.samples, o.new_tokens));
  return progress;
}

template <class T>
SpecExactMeasured measure_impl(const SpecExactOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  if (ctx.weights.empty()) require_enough_samples(o);
  const auto [target, draft] = check_pair<T>(small_spec_target(kVocab), small_spec_draft(kVocab),
                                             spec::derive_seed(ctx.seed, 1), ctx, "spec-exact");
  const int vocab = target.config().vocab_size;
  // The random pair's prompt [1, 5, 2]; a byte-level file pair's "The" (vocab 256: text).
  std::vector<int> prompt = ctx.weights.empty() || vocab != 256 ? kPrompt : std::vector<int>{'T', 'h', 'e'};
  for (int& t : prompt) t %= vocab;
  const int block = std::min(target.config().block_size, draft.config().block_size);
  if (static_cast<int>(prompt.size()) + o.new_tokens + o.k > block)
    throw InputError(fmt::format("--new-tokens, --k: prompt {} + {} + {} exceeds the pair's block_size {}",
                                 prompt.size(), o.new_tokens, o.k, block));
  Progress progress = announce(o, ctx, target, draft, prompt.size());
  SpecExactMeasured m{.options = o, .context = ctx, .target = target.config(), .draft = draft.config()};
  m.exactness = measure_exactness(target, draft, prompt, o, ctx.seed, kFalseAlarm, true, faults,
                                  [&progress](std::int64_t n) { progress.update(static_cast<double>(n)); });
  progress.finish();
  return m;
}

void present(const SpecExactMeasured& m, Result& r) {
  present_exactness(m.exactness, r);
  const int vocab = m.target.vocab_size;
  const RunContext& ctx = m.context;
  if (ctx.weights.empty())
    r.notes.push_back(fmt::format(
        "seed {}: target MiniGPT(seed), draft MiniGPT(SplitMix64(seed, 1)), each sampler its own "
        "stream. Prompt [1, 5, 2]; the exact law is Π p̃(x_i | prefix) over all {}^{} sequences, "
        "one cached forward per prefix.",
        ctx.seed, kVocab, m.options.new_tokens));
  else
    r.notes.push_back(pair_note(m.target, m.draft, ctx) +
                      fmt::format(". Prompt {}; the exact law is Π p̃(x_i | prefix) over all {}^{} sequences; "
                                  "seed {}, each sampler its own stream.",
                                  vocab == 256 ? "\"The\" (bytes)" : "[1, 5, 2] mod vocab", vocab,
                                  m.options.new_tokens, ctx.seed));
}

}  // namespace

SpecExactMeasured measure_spec_exact(const SpecExactOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, faults); });
}

std::vector<Expectation> judge_spec_exact(const SpecExactMeasured& m) { return judge_exactness(m.exactness, kSource); }

const CheckDef<SpecExactOptions, SpecExactMeasured>& spec_exact_check() {
  using O = SpecExactOptions;
  static const CheckDef<O, SpecExactMeasured> def{
      .spec = {.name = "spec-exact",
               .order = 220,
               .source = kSource,
               .summary = "speculative decoding's output law = the target's (V = 8): TV bound and chi-square",
               .claim_zh = "投机解码的输出分布等于目标模型的分布（TV 上界与卡方检验）",
               .description =
                   "Target and draft mini-GPTs over V = 8: the exact law of --new-tokens tokens by\n"
                   "enumeration, against --samples sequences from direct sampling, the loop with a soft\n"
                   "draft and the loop with a greedy draft: TV below the Bretagnolle–Huber–Carol bound\n"
                   "and Pearson's chi-square below its critical value (family false alarm 1e-4).\n"
                   "--samples × (--new-tokens + --k) at most 3e6. --weights T --draft-weights D: the same\n"
                   "test on a file pair (e.g. the trained pair of data/weights), unlikely outcomes pooled.",
               .derivation =
                   "A step emits accepted drafts, then one residual or bonus token. By spec-residual the first token\n"
                   "emitted has the target's law p(· | prefix); given it, the next emitted token is again either an\n"
                   "accepted draft or a residual sample at the next position, with law p(· | prefix, x) by the same\n"
                   "argument, and the bonus token is sampled from the target directly. By induction over positions,\n"
                   "the generated sequence has exactly the target's law, whatever the draft.\n"
                   "The check enumerates that law for short sequences on a small vocabulary and compares the loop's\n"
                   "observed frequencies with it: TV below a bound derived from the sample size, and a chi-square\n"
                   "test that does not reject.\n"
                   "Source: 000 §7.6, sanity [e].\n",
               .traits = {.dtype = true, .draft_weights = true}},
      .options = {{"--samples", &O::samples, Allowed::integers(1, kMaxSamples), "Sequences per sampler"},
                  {"--new-tokens", &O::new_tokens, Allowed::integers(1, 3), "Tokens per sequence"},
                  {"--k", &O::k, Allowed::integers(1, 4), "Draft tokens per step"},
                  {"--temperature", &O::temperature, Allowed::reals(0.01, 10.0), "Sampling temperature"}},
      .constraints =
          [](const O& o) {
            const double work = static_cast<double>(o.samples) * (o.new_tokens + o.k);
            if (work > static_cast<double>(kWorkBudget))
              throw InputError(fmt::format(
                  "--samples, --new-tokens, --k: --samples × (--new-tokens + --k) = {:.3g} is over the work "
                  "budget of {} (about 1.5 s per sampler here)",
                  work, kWorkBudget));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_spec_exact(o, ctx); },
      .judge = judge_spec_exact,
      .present = present,
      .claim = [](const SpecExactMeasured& m) {
        return fmt::format(
            "Speculative decoding samples exactly from the target: over {} sequences of {} tokens "
            "(V = {}), the empirical law of the loop's output matches the target's exact law as closely "
            "as direct sampling does (TV below the sampling bound, chi-square not rejecting).",
            m.options.samples, m.options.new_tokens, m.target.vocab_size);
      }};
  return def;
}

Result run_spec_exact(const SpecExactOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  return run_check(spec_exact_check(), o, ctx, [&faults](const SpecExactOptions& opts, const RunContext& c) {
    return measure_spec_exact(opts, c, faults);
  });
}

KVLAB_REGISTER_SPEC(spec_exact_check);

}  // namespace kvlab::checks::spec_exact
