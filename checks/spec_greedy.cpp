// spec-greedy: at temperature 0, speculative decoding emits exactly the target's greedy decoding
// (000 §7.6, §7.5 with a greedy sampler), token for token.
//
// Shows, for --prompts seeded prompts, --new-tokens tokens each and K = --k draft tokens per step,
// with three drafts:
//   - a smaller mini-GPT (1 layer, d_model 32, its own seed): mostly rejected drafts, so the
//     rollback by truncate() runs on most steps;
//   - the target with a noisy LM head: partly accepted drafts, rollback to a non-empty prefix;
//   - the target itself as draft: every draft accepted, so the bonus-token path (and feeding d_K
//     to the draft cache) runs on every step;
// that the tokens equal the target's own greedy decoding with its KV cache (exact: 0 differing
// tokens), and that the loop's invariant, cache length = sequence length − 1 at the top of every
// step, held on every step of every run (the loop asserts it; a violation is a failed row).
// Also --k × --prompts runs' statistics: α observed, tokens per step, forward counts.
// Refused (InputError, exit 2): prompt + --new-tokens + --k beyond the models' block_size (64).
//
//   kvlab spec-greedy [--prompts 4] [--new-tokens 24] [--k 4] [--seed 1234] [--dtype f64|f32]
#include "spec_greedy.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "spec/monte_carlo.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::spec_greedy {
namespace {

constexpr char kSource[] = "000 §7.6, §7.5";
constexpr int kPromptLen = 5;
constexpr int kBlock = 64;

ModelConfig target_config() { return ModelConfig{}; }  // 2 layers, d_model 64, vocab 96, block 64

ModelConfig draft_config() {
  ModelConfig c;
  c.n_layer = 1;
  c.d_model = 32;
  c.n_head = 4;
  c.n_kv_head = 4;
  c.head_dim = 8;
  return c;
}

// The target and its three drafts, on the host or on the device (--device cuda: every model on
// the device, model/device_gpt.hpp, each with its own cache, emptied before each run; the loop
// and the reference decode drive them as SequenceModels).
template <class T>
struct Models {
  MiniGPT<T> target, small, near;
  std::unique_ptr<kernels::ModelOps> ops;
  std::vector<std::unique_ptr<gpu::DeviceGpt>> on_device;  // the target, then one per draft
};

template <class T>
Models<T> build_models(const SpecGreedyOptions& o, const RunContext& ctx) {
  const int need = kPromptLen + o.new_tokens + o.k - 1;
  auto [target, small] = check_pair<T>(
      target_config(), draft_config(), spec::derive_seed(ctx.seed, 1), ctx, "spec-greedy",
      {{"block_size", [need](const ModelConfig& c) { return c.block_size >= need; },
        fmt::format(">= prompt {} + --new-tokens + --k − 1 = {}", kPromptLen, need)}});
  // The target with noise N(0, 0.01²) added to its LM head: agrees with the target on most
  // tokens but not all, so steps end with 1 .. K − 1 drafts accepted (rollback to a non-empty prefix).
  MiniGPT<T> near = target;
  Rng noise(spec::derive_seed(ctx.seed, 2));
  auto& w = near.weights().w_lm;
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] += static_cast<T>(0.01 * noise.normal());
  Models<T> m{std::move(target), std::move(small), std::move(near), nullptr, {}};
  if constexpr (std::is_same_v<T, float>) {
    if (ctx.device == Device::cuda) {
      m.ops = device_ops(ctx);
      // The loop holds at most prompt + new tokens + K − 1 positions (the target after its last verify).
      const gpu::DeviceCacheSpec spec{.max_ctx = need};
      for (const MiniGPT<T>* g : {&m.target, &m.small, &m.near, &m.target})
        m.on_device.push_back(std::make_unique<gpu::DeviceGpt>(*g, *m.ops, spec));
    }
  }
  return m;
}

gpu::DeviceGpt& emptied(gpu::DeviceGpt& g) {
  g.truncate(0, 0);
  return g;
}

// One prompt: the target's greedy decoding, then the loop with draft `di` (0 small, 1 near, 2 self).
template <class T>
GreedyRun one_run(Models<T>& ms, const MiniGPT<T>& draft, std::size_t di, const SpecGreedyOptions& o,
                  const RunContext& ctx, int i, const spec::SpecFaults& faults, std::string& first_break) {
  spec::SpecConfig sc;
  sc.k = o.k;
  sc.max_new_tokens = o.new_tokens;
  sc.target_sampler.temperature = 0.0;
  sc.draft_sampler.temperature = 0.0;
  const auto prompt = random_tokens(spec::derive_seed(ctx.seed, 100 + static_cast<std::uint64_t>(i)), kPromptLen,
                                    ms.target.config().vocab_size);
  Rng rng(spec::derive_seed(ctx.seed, 200 + static_cast<std::uint64_t>(i)));
  std::vector<int> ref;
  GreedyRun out;
  spec::SpecRun run;
  if constexpr (std::is_same_v<T, float>) {
    if (!ms.on_device.empty()) {
      gpu::DeviceSequence t(emptied(*ms.on_device[0]));
      ref = spec::autoregressive_decode<float>(t, prompt, o.new_tokens, sc.target_sampler, rng);
    }
  }
  if (ms.on_device.empty()) ref = spec::autoregressive_decode(ms.target, prompt, o.new_tokens, sc.target_sampler, rng);
  try {
    if constexpr (std::is_same_v<T, float>) {
      if (!ms.on_device.empty()) {
        gpu::DeviceSequence t(emptied(*ms.on_device[0])), dr(emptied(*ms.on_device[di + 1]));
        run = spec::speculative_decode<float>(t, dr, prompt, sc, rng, faults);
      }
    }
    if (ms.on_device.empty()) run = spec::speculative_decode(ms.target, draft, prompt, sc, rng, faults);
  } catch (const spec::InvariantError& e) {
    if (first_break.empty()) first_break = e.what();
    out.invariant_broken = true;
    return out;
  }
  for (std::size_t t = 0; t < ref.size(); ++t)
    if (t >= run.tokens.size() || run.tokens[t] != ref[t])
      if (out.differing++ == 0) out.first_difference = static_cast<int>(t);
  if (run.tokens.size() != ref.size()) out.differing += 1;
  out.stats = run.stats;
  return out;
}

template <class T>
SpecGreedyMeasured measure_impl(const SpecGreedyOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  Models<T> ms = build_models<T>(o, ctx);
  SpecGreedyMeasured m{.options = o, .context = ctx, .target = ms.target.config(), .small = ms.small.config()};
  const struct {
    const char* name;
    const char* key;
    const MiniGPT<T>* model;
  } drafts[] = {{"small (1 layer, d 32)", "small", &ms.small},
                {"target + noisy LM head", "near", &ms.near},
                {"target itself", "self", &ms.target}};
  for (std::size_t di = 0; di < std::size(drafts); ++di) {
    GreedyDraft d{.name = drafts[di].name, .key = drafts[di].key};
    for (int i = 0; i < o.prompts; ++i) {
      GreedyRun run = one_run(ms, *drafts[di].model, di, o, ctx, i, faults, d.first_break);
      if (run.invariant_broken) {
        ++d.invariant_breaks;
        d.differing += o.new_tokens;
      } else {
        d.differing += run.differing;
        d.total += run.stats;
      }
      d.runs.push_back(run);
    }
    m.drafts.push_back(std::move(d));
  }
  if (ms.ops) m.device_note = device_note(*ms.ops);
  return m;
}

void present(const SpecGreedyMeasured& m, Result& r) {
  Table table{"per prompt and draft (greedy)",
              {"prompt", "draft", "differing tokens", "first difference", "steps", "α observed",
               "tokens/step", "bonus steps", "draft fwd", "target fwd"},
              {}};
  Table timing{"timing (seconds in the forwards, all prompts)", {"draft", "draft s", "target s"}, {}};
  for (const GreedyDraft& d : m.drafts) {
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
      const GreedyRun& run = d.runs[i];
      const auto prompt = static_cast<std::int64_t>(i);
      if (run.invariant_broken) {
        table.rows.push_back({prompt, d.name, std::string("—"), std::string("invariant broken"), std::string("—"),
                              std::string("—"), std::string("—"), std::string("—"), std::string("—"), std::string("—")});
        continue;
      }
      const spec::SpecStats& s = run.stats;
      table.rows.push_back({prompt, d.name, run.differing,
                            run.first_difference < 0 ? std::string("—") : fmt::format("at {}", run.first_difference),
                            s.steps, s.alpha_observed(), s.tokens_per_step(), s.bonus, s.draft_forwards,
                            s.target_forwards});
    }
    if (!d.first_break.empty()) r.notes.push_back("invariant broken: " + d.first_break);
    r.metric("alpha_observed_" + d.key, d.total.alpha_observed());
    r.metric("tokens_per_step_" + d.key, d.total.tokens_per_step());
    r.metric_exact("bonus_steps_" + d.key, static_cast<std::uint64_t>(d.total.bonus));
    r.metric("seconds_draft_" + d.key, d.total.seconds_draft);
    r.metric("seconds_target_" + d.key, d.total.seconds_target);
    timing.rows.push_back({d.name, d.total.seconds_draft, d.total.seconds_target});
  }
  r.tables.push_back(std::move(table));
  r.tables.push_back(std::move(timing));
  if (!m.device_note.empty()) r.notes.push_back(m.device_note);
  const RunContext& ctx = m.context;
  if (!ctx.weights.empty())
    r.notes.push_back(pair_note(m.target, m.small, ctx) +
                      " (the 'small' draft is --draft-weights; the noisy one is the target's copy)");
  else
    r.notes.push_back(fmt::format(
        "seed {}: target MiniGPT(seed), small draft MiniGPT(SplitMix64(seed, 1)); prompt i has {} "
        "random tokens from stream 100 + i. K = {}. Reference: the target alone, greedy, one token "
        "per forward with its KV cache. Both models have random weights, so the small draft agrees "
        "with the target rarely (low α): the test is of the loop's bookkeeping, not of a good draft.",
        ctx.seed, kPromptLen, m.options.k));
}

}  // namespace

SpecGreedyMeasured measure_spec_greedy(const SpecGreedyOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, faults); });
}

std::vector<Expectation> judge_spec_greedy(const SpecGreedyMeasured& m) {
  const bool device = !m.device_note.empty();
  std::vector<Expectation> rows;
  for (const GreedyDraft& d : m.drafts) {
    rows.push_back({fmt::format("tokens differing from target greedy, draft {}, {} prompts × {} tokens", d.name,
                                m.options.prompts, m.options.new_tokens),
                    kSource, "tokens", 0.0, 0.0,
                    device ? "exact, as the claim says; on the device the 1-token and (K + 1)-token forwards are "
                             "different cuBLAS products, so a near-tie between two logits could flip an argmax: a "
                             "differing token there needs its logit margin read before the loop is blamed"
                           : "exact: both sides take argmaxes of logits that kvlab's forwards compute in the same "
                             "order for 1 and K + 1 tokens (design.md, Numerics); any differing token fails",
                    static_cast<double>(d.differing), std::nullopt, ""});
    rows.push_back({fmt::format("runs whose cache invariant broke (length ≠ sequence − 1), draft {}", d.name),
                    "000 §7.6", "runs", 0.0, 0.0, "exact: a count", static_cast<double>(d.invariant_breaks),
                    std::nullopt, ""});
  }
  return rows;
}

const CheckDef<SpecGreedyOptions, SpecGreedyMeasured>& spec_greedy_check() {
  using O = SpecGreedyOptions;
  static const CheckDef<O, SpecGreedyMeasured> def{
      .spec = {.name = "spec-greedy",
               .order = 210,
               .source = kSource,
               .summary = "temperature 0: speculative decoding = the target's greedy decoding, token for token",
               .claim_zh = "温度为 0 时，投机解码与目标模型的贪心解码逐 token 一致",
               .description =
                   "Two mini-GPTs (target: 2 layers, d_model 64; draft: 1 layer, d_model 32, and the target\n"
                   "itself), greedy, --prompts seeded prompts of 5 tokens, --new-tokens each, --k drafts\n"
                   "per step: the tokens must equal the target's own greedy decoding exactly, and the\n"
                   "cache invariant (length = sequence − 1 at each step) must hold. 5 + --new-tokens +\n"
                   "--k − 1 must fit block_size 64.",
               .derivation =
                   "At temperature 0 the processed target distribution p̃ is one-hot on the target's argmax, and so\n"
                   "is the draft's q̃. A draft token x is accepted with probability min(1, p̃(x)/q̃(x)): 1 when x is\n"
                   "the target's argmax, 0 otherwise; on rejection the residual max(0, p̃ - q̃) is one-hot on the\n"
                   "argmax. So every emitted token is the target's argmax given the same prefix: exactly the target's\n"
                   "greedy decoding, whatever the draft, provided the rolled-back caches hold the accepted prefix\n"
                   "(cache length = sequence length - 1 at the top of every step).\n"
                   "Source: 000 §7.5, §7.6.\n",
               .claim =
                   "At temperature 0 (greedy target and draft) speculative decoding emits exactly the target's "
                   "own greedy decoding, token for token, whatever the draft; the caches are rolled back so that "
                   "cache length = sequence length − 1 at the top of every step.",
               .traits = {.dtype = true, .draft_weights = true, .cuda = true}},
      .options = {{"--prompts", &O::prompts, Allowed::integers(1, 64), "Seeded prompts"},
                  {"--new-tokens", &O::new_tokens, Allowed::integers(1, kBlock), "Tokens generated per prompt"},
                  {"--k", &O::k, Allowed::integers(1, 16), "Draft tokens per step"}},
      .constraints =
          [](const O& o) {
            if (kPromptLen + o.new_tokens + o.k - 1 > kBlock)
              throw InputError(fmt::format(
                  "--new-tokens, --k: prompt {} + --new-tokens {} + --k {} − 1 = {} positions exceed the "
                  "models' block_size {}",
                  kPromptLen, o.new_tokens, o.k, kPromptLen + o.new_tokens + o.k - 1, kBlock));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_spec_greedy(o, ctx); },
      .judge = judge_spec_greedy,
      .present = present,
      .cuda_gap = [](const O&, const RunContext& ctx) { return weights_device_gap(ctx, true); }};
  return def;
}

Result run_spec_greedy(const SpecGreedyOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  return run_check(spec_greedy_check(), o, ctx, [&faults](const SpecGreedyOptions& opts, const RunContext& c) {
    return measure_spec_greedy(opts, c, faults);
  });
}

KVLAB_REGISTER_SPEC(spec_greedy_check);

}  // namespace kvlab::checks::spec_greedy
