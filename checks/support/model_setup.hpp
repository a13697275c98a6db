// Helpers the model checks share: seeded token ids, dtype dispatch, the rounding bound.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"
#include "model/weights_io.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

/// n token ids drawn uniformly from [0, vocab) with a generator seeded by `seed`.
inline std::vector<int> random_tokens(std::uint64_t seed, int n, int vocab) {
  Rng rng(seed);
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = static_cast<int>(rng.uniform() * vocab);
  return ids;
}

/// Calls f.template operator()<double>() or <float>() as `dtype` says.
template <class F>
auto with_dtype(Dtype dtype, F&& f) {
  return dtype == Dtype::f64 ? f.template operator()<double>() : f.template operator()<float>();
}

/// One condition a check's claim puts on the shape of a --weights model, e.g.
/// {"block_size", [](auto& c) { return c.block_size >= 41; }, ">= 41 (--prompt + --new-tokens + 1)"}.
struct ConfigNeed {
  std::string field;                              ///< ModelConfig field name, as in docs/weights.md
  std::function<bool(const ModelConfig&)> ok;
  std::string allowed;                            ///< what the check needs, for the message
};

/// Throws InputError "OPTION FILE: FIELD = VALUE, CHECK needs ALLOWED" for the first need the
/// config fails (the CLI's exit 2); OPTION is "--weights" or "--draft-weights".
inline void require_config(const ModelConfig& c, const std::string& path, const std::string& check,
                           std::initializer_list<ConfigNeed> needs, const std::string& option = "--weights") {
  for (const auto& n : needs)
    if (!n.ok(c))
      throw InputError(fmt::format("{} {}: {} = {}, {} needs {}", option, path, n.field, config_field(c, n.field),
                                   check, n.allowed));
}

/// load_gpt<T>(path), its InputError prefixed with "OPTION: " (the option the user gave); the
/// model's source() is "OPTION PATH", so a forward that overflows names the option and the file.
template <class T>
MiniGPT<T> load_weights(const std::string& path, const std::string& option = "--weights") {
  try {
    MiniGPT<T> m = load_gpt<T>(path);
    m.set_source(option + " " + path);
    return m;
  } catch (const InputError& e) {
    throw InputError(option + ": " + e.what());
  }
}

/// The model a check runs on: with ctx.weights, the model in that file (load_gpt; its config
/// replaces `cfg`, after require_config with `needs`); otherwise MiniGPT(cfg, ctx.seed). Throws
/// InputError for a bad file or a shape the check cannot use.
template <class T>
MiniGPT<T> check_model(const ModelConfig& cfg, const RunContext& ctx, const std::string& check,
                       std::initializer_list<ConfigNeed> needs = {}) {
  if (ctx.weights.empty()) return MiniGPT<T>(cfg, ctx.seed);
  MiniGPT<T> m = load_weights<T>(ctx.weights);
  require_config(m.config(), ctx.weights, check, needs);
  return m;
}

/// A target and its draft (the speculative checks).
template <class T>
struct ModelPair {
  MiniGPT<T> target, draft;
};

/// The pair a speculative check runs on: with ctx.weights and ctx.draft_weights, the models in
/// those files (config from each file, `needs` checked on both, naming the option); otherwise
/// MiniGPT(target_cfg, ctx.seed) and MiniGPT(draft_cfg, draft_seed). Throws InputError when only
/// one of the two files is given, for a bad file, a shape the check cannot use, or two vocabulary
/// sizes (a draft proposes the target's token ids, so they must match).
template <class T>
ModelPair<T> check_pair(const ModelConfig& target_cfg, const ModelConfig& draft_cfg, std::uint64_t draft_seed,
                        const RunContext& ctx, const std::string& check, std::initializer_list<ConfigNeed> needs = {}) {
  if (ctx.weights.empty() != ctx.draft_weights.empty())
    throw InputError("--weights, --draft-weights: " + check +
                     " takes both (the target and the draft) or neither (a seeded random pair)");
  if (ctx.weights.empty()) return {MiniGPT<T>(target_cfg, ctx.seed), MiniGPT<T>(draft_cfg, draft_seed)};
  ModelPair<T> p{load_weights<T>(ctx.weights, "--weights"), load_weights<T>(ctx.draft_weights, "--draft-weights")};
  require_config(p.target.config(), ctx.weights, check, needs, "--weights");
  require_config(p.draft.config(), ctx.draft_weights, check, needs, "--draft-weights");
  if (p.target.config().vocab_size != p.draft.config().vocab_size)
    throw InputError(fmt::format("--weights, --draft-weights: the target {} has vocab_size {}, the draft {} has {}; "
                                 "a draft proposes the target's token ids, so they must match",
                                 ctx.weights, p.target.config().vocab_size, ctx.draft_weights,
                                 p.draft.config().vocab_size));
  return p;
}

/// The note of a check that ran on --weights and --draft-weights: both files and shapes.
inline std::string pair_note(const ModelConfig& t, const ModelConfig& d, const RunContext& ctx) {
  return fmt::format("pair: target {} (--weights): {} layers, d_model {}, {} / {} heads; draft {} (--draft-weights): "
                     "{} layers, d_model {}, {} / {} heads; vocab {}; the check's shape options do not apply",
                     ctx.weights, t.n_layer, t.d_model, t.n_head, t.n_kv_head, ctx.draft_weights, d.n_layer, d.d_model,
                     d.n_head, d.n_kv_head, t.vocab_size);
}

/// The note a check prints instead of its random model's description when it ran on --weights:
/// the file and its shape; the check's own shape options did not apply.
inline std::string weights_note(const ModelConfig& c, const std::string& path) {
  return fmt::format("model: {} (--weights): {} layers, d_model {}, {} query / {} K/V heads of {}, {} positions, "
                     "block_size {}, vocab {}; the check's shape options do not apply",
                     path, c.n_layer, c.d_model, c.n_head, c.n_kv_head, c.head_dim,
                     c.positional == Positional::rope ? "RoPE" : "learned", c.block_size, c.vocab_size);
}

/// The target of the speculative-decoding checks whose output law is enumerated on a small
/// vocabulary (spec-exact, spec-sampler, typical-acceptance, tree-verify): 2 layers, d_model 16,
/// 2 heads × head_dim 8 (MHA), block_size 16, `vocab` tokens.
inline ModelConfig small_spec_target(int vocab, Positional positional = Positional::learned) {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.n_kv_head = 2;
  c.head_dim = 8;
  c.vocab_size = vocab;
  c.block_size = 16;
  c.positional = positional;
  return c;
}

/// Its draft: 1 layer, d_model 8, 2 query heads over one K/V head (MQA) of head_dim 4.
inline ModelConfig small_spec_draft(int vocab) {
  ModelConfig c = small_spec_target(vocab);
  c.n_layer = 1;
  c.d_model = 8;
  c.n_kv_head = 1;
  c.head_dim = 4;
  return c;
}

/// Largest reduction a logit of `config` passes through per layer: the MLP's 4*d_model inputs,
/// plus the attention projections (d_model, n_head*head_dim) and a softmax over up to block_size
/// keys. Used for the rounding bound of two computations that are equal in exact arithmetic.
inline double reduction_length(const ModelConfig& c) {
  return static_cast<double>(c.n_layer) *
         (4.0 * c.d_model + c.d_model + c.n_head * c.head_dim + c.block_size);
}

/// Rounding bound for "cached and full forward are equal up to rounding": two orderings of a sum of
/// n terms differ by at most about 2 n u sum|terms| (Higham, Accuracy and Stability of Numerical
/// Algorithms, §3.1, first order); taking sum|terms| <= scale (the largest |logit|, since LayerNorm
/// keeps activations O(1)) and n = reduction_length(config), the bound is 2 n u scale.
inline double rounding_bound(const ModelConfig& c, Dtype dtype, double scale) {
  return 2.0 * reduction_length(c) * unit_roundoff(dtype) * scale;
}

}  // namespace kvlab::checks
