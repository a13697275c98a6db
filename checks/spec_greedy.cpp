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
#include "framework/options.hpp"

namespace kvlab::checks {
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

template <class T>
Result run_impl(const SpecGreedyOptions& o, const RunContext& ctx, const spec::SpecFaults& faults) {
  Result r;
  r.check = "spec-greedy";
  r.source = kSource;
  r.claim =
      "At temperature 0 (greedy target and draft) speculative decoding emits exactly the target's "
      "own greedy decoding, token for token, whatever the draft; the caches are rolled back so that "
      "cache length = sequence length − 1 at the top of every step.";
  const int need = kPromptLen + o.new_tokens + o.k - 1;
  const auto [target, small] = check_pair<T>(
      target_config(), draft_config(), spec::derive_seed(ctx.seed, 1), ctx, "spec-greedy",
      {{"block_size", [need](const ModelConfig& c) { return c.block_size >= need; },
        fmt::format(">= prompt {} + --new-tokens + --k − 1 = {}", kPromptLen, need)}});
  // The target with noise N(0, 0.01²) added to its LM head: agrees with the target on most
  // tokens but not all, so steps end with 1 .. K − 1 drafts accepted (rollback to a non-empty prefix).
  MiniGPT<T> near = target;
  {
    Rng noise(spec::derive_seed(ctx.seed, 2));
    auto& w = near.weights().w_lm;
    for (Eigen::Index i = 0; i < w.size(); ++i)
      w.data()[i] += static_cast<T>(0.01 * noise.normal());
  }
  spec::SpecConfig sc;
  sc.k = o.k;
  sc.max_new_tokens = o.new_tokens;
  sc.target_sampler.temperature = 0.0;
  sc.draft_sampler.temperature = 0.0;

  Table table{"per prompt and draft (greedy)",
              {"prompt", "draft", "differing tokens", "first difference", "steps", "α observed",
               "tokens/step", "bonus steps", "draft fwd", "target fwd"},
              {}};
  Table timing{"timing (seconds in the forwards, all prompts)", {"draft", "draft s", "target s"}, {}};
  const struct {
    const char* name;
    const MiniGPT<T>* model;
  } drafts[] = {{"small (1 layer, d 32)", &small},
                {"target + noisy LM head", &near},
                {"target itself", &target}};
  // --device cuda: every model on the device (backend/device_gpt.hpp), each with its own cache,
  // emptied before each run; the loop and the reference decode drive them as SequenceModels.
  std::unique_ptr<kernels::ModelOps> ops;
  std::vector<std::unique_ptr<gpu::DeviceGpt>> on_device;  // the target, then one per draft
  if constexpr (std::is_same_v<T, float>) {
    if (ctx.device == Device::cuda) {
      ops = device_ops(ctx);
      // The loop holds at most prompt + new tokens + K − 1 positions (the target after its last verify).
      const gpu::DeviceCacheSpec spec{.max_ctx = kPromptLen + o.new_tokens + o.k - 1};
      on_device.push_back(std::make_unique<gpu::DeviceGpt>(target, *ops, spec));
      for (const auto& d : drafts) on_device.push_back(std::make_unique<gpu::DeviceGpt>(*d.model, *ops, spec));
    }
  }
  const auto empty_device = [](gpu::DeviceGpt& g) -> gpu::DeviceGpt& {
    g.truncate(0, 0);
    return g;
  };
  for (const auto& d : drafts) {
    const std::size_t di = static_cast<std::size_t>(&d - drafts) + 1;  // its device model
    std::int64_t differing = 0, invariant_breaks = 0;
    spec::SpecStats total;
    std::string first_break;
    for (int i = 0; i < o.prompts; ++i) {
      const auto prompt = random_tokens(spec::derive_seed(ctx.seed, 100 + static_cast<std::uint64_t>(i)),
                                        kPromptLen, target.config().vocab_size);
      Rng rng(spec::derive_seed(ctx.seed, 200 + static_cast<std::uint64_t>(i)));
      std::vector<int> ref;
      if constexpr (std::is_same_v<T, float>) {
        if (!on_device.empty()) {
          gpu::DeviceSequence t(empty_device(*on_device[0]));
          ref = spec::autoregressive_decode<float>(t, prompt, o.new_tokens, sc.target_sampler, rng);
        }
      }
      if (on_device.empty()) ref = spec::autoregressive_decode(target, prompt, o.new_tokens, sc.target_sampler, rng);
      spec::SpecRun run;
      try {
        if constexpr (std::is_same_v<T, float>) {
          if (!on_device.empty()) {
            gpu::DeviceSequence t(empty_device(*on_device[0])), dr(empty_device(*on_device[di]));
            run = spec::speculative_decode<float>(t, dr, prompt, sc, rng, faults);
          }
        }
        if (on_device.empty()) run = spec::speculative_decode(target, *d.model, prompt, sc, rng, faults);
      } catch (const spec::InvariantError& e) {
        ++invariant_breaks;
        if (first_break.empty()) first_break = e.what();
        table.rows.push_back({std::int64_t{i}, std::string(d.name), std::string("—"),
                              std::string("invariant broken"), std::string("—"), std::string("—"),
                              std::string("—"), std::string("—"), std::string("—"), std::string("—")});
        differing += o.new_tokens;
        continue;
      }
      std::int64_t diff = 0;
      std::string first = "—";
      for (std::size_t t = 0; t < ref.size(); ++t)
        if (t >= run.tokens.size() || run.tokens[t] != ref[t]) {
          if (diff++ == 0) first = fmt::format("at {}", t);
        }
      if (run.tokens.size() != ref.size()) diff += 1;
      differing += diff;
      const auto& s = run.stats;
      total += s;
      table.rows.push_back({std::int64_t{i}, std::string(d.name), diff, first, s.steps,
                            s.alpha_observed(), s.tokens_per_step(), s.bonus, s.draft_forwards,
                            s.target_forwards});
    }
    r.expect({fmt::format("tokens differing from target greedy, draft {}, {} prompts × {} tokens",
                          d.name, o.prompts, o.new_tokens),
              kSource, "tokens", 0.0, 0.0,
              ops ? "exact, as the claim says; on the device the 1-token and (K + 1)-token forwards are "
                    "different cuBLAS products, so a near-tie between two logits could flip an argmax: a "
                    "differing token there needs its logit margin read before the loop is blamed"
                  : "exact: both sides take argmaxes of logits that kvlab's forwards compute in the same order "
                    "for 1 and K + 1 tokens (design.md, Numerics); any differing token fails",
              static_cast<double>(differing), std::nullopt, ""});
    r.expect({fmt::format("runs whose cache invariant broke (length ≠ sequence − 1), draft {}", d.name),
              "000 §7.6", "runs", 0.0, 0.0, "exact: a count", static_cast<double>(invariant_breaks),
              std::nullopt, ""});
    if (!first_break.empty()) r.notes.push_back("invariant broken: " + first_break);
    const std::string key = d.model == &target ? "self" : d.model == &near ? "near" : "small";
    r.metric("alpha_observed_" + key, total.alpha_observed());
    r.metric("tokens_per_step_" + key, total.tokens_per_step());
    r.metric_exact("bonus_steps_" + key, static_cast<std::uint64_t>(total.bonus));
    r.metric("seconds_draft_" + key, total.seconds_draft);
    r.metric("seconds_target_" + key, total.seconds_target);
    timing.rows.push_back({std::string(d.name), total.seconds_draft, total.seconds_target});
  }
  r.tables.push_back(std::move(table));
  r.tables.push_back(std::move(timing));
  if (ops) r.notes.push_back(device_note(*ops));
  if (!ctx.weights.empty())
    r.notes.push_back(pair_note(target.config(), small.config(), ctx) +
                      " (the 'small' draft is --draft-weights; the noisy one is the target's copy)");
  else
    r.notes.push_back(fmt::format(
      "seed {}: target MiniGPT(seed), small draft MiniGPT(SplitMix64(seed, 1)); prompt i has {} "
      "random tokens from stream 100 + i. K = {}. Reference: the target alone, greedy, one token "
      "per forward with its KV cache. Both models have random weights, so the small draft agrees "
      "with the target rarely (low α): the test is of the loop's bookkeeping, not of a good draft.",
      ctx.seed, kPromptLen, o.k));
  return r;
}

}  // namespace

Result run_spec_greedy(const SpecGreedyOptions& o, const RunContext& ctx,
                       const spec::SpecFaults& faults) {
  require_range("--prompts", o.prompts, 1, 64);
  require_range("--k", o.k, 1, 16);
  require_range("--new-tokens", o.new_tokens, 1, kBlock);
  if (kPromptLen + o.new_tokens + o.k - 1 > kBlock)
    throw InputError(fmt::format(
        "--new-tokens, --k: prompt {} + --new-tokens {} + --k {} − 1 = {} positions exceed the "
        "models' block_size {}",
        kPromptLen, o.new_tokens, o.k, kPromptLen + o.new_tokens + o.k - 1, kBlock));
  return with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, faults); });
}

namespace {

class SpecGreedyCheck final : public Check {
 public:
  std::string name() const override { return "spec-greedy"; }
  std::string source() const override { return kSource; }
  std::string summary() const override {
    return "temperature 0: speculative decoding = the target's greedy decoding, token for token";
  }
  std::string derivation() const override {
    return "At temperature 0 the processed target distribution p̃ is one-hot on the target's argmax, and so\n"
           "is the draft's q̃. A draft token x is accepted with probability min(1, p̃(x)/q̃(x)): 1 when x is\n"
           "the target's argmax, 0 otherwise; on rejection the residual max(0, p̃ - q̃) is one-hot on the\n"
           "argmax. So every emitted token is the target's argmax given the same prefix: exactly the target's\n"
           "greedy decoding, whatever the draft, provided the rolled-back caches hold the accepted prefix\n"
           "(cache length = sequence length - 1 at the top of every step).\n"
           "Source: 000 §7.5, §7.6.\n";
  }
  std::string description() const override {
    return "Two mini-GPTs (target: 2 layers, d_model 64; draft: 1 layer, d_model 32, and the target\n"
           "itself), greedy, --prompts seeded prompts of 5 tokens, --new-tokens each, --k drafts\n"
           "per step: the tokens must equal the target's own greedy decoding exactly, and the\n"
           "cache invariant (length = sequence − 1 at each step) must hold. 5 + --new-tokens +\n"
           "--k − 1 must fit block_size 64.";
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  bool uses_draft_weights() const override { return true; }
  void bind(OptionSet& sub) override {
    sub.add_option("--prompts", opts_.prompts, "Seeded prompts (default 4)")->check(IntRange(1, 64));
    sub.add_option("--new-tokens", opts_.new_tokens, "Tokens generated per prompt (default 24)")
        ->check(IntRange(1, kBlock));
    sub.add_option("--k", opts_.k, "Draft tokens per step (default 4)")->check(IntRange(1, 16));
  }
  bool has_cuda() const override { return true; }
  std::string cuda_gap(const RunContext& ctx) const override { return weights_device_gap(ctx, true); }
  Result run(const RunContext& ctx) override { return run_spec_greedy(opts_, ctx); }

 private:
  SpecGreedyOptions opts_;
};

}  // namespace

KVLAB_REGISTER_CHECK(210, SpecGreedyCheck);

}  // namespace kvlab::checks
