// greedy-generate — 004 §3.5 test 2; 004 §1.6: cached greedy generation is the naive one, token for
// token, also past block_size.
//
// Claim: under greedy decoding, generation through the KV cache outputs exactly the tokens of Day
// 3's naive generate (recompute the whole window every step), including after the sequence grows
// past block_size. With learned absolute positions the window then slides, every token's position
// changes and the cached K/V go stale (004 §1.6), so the cached generator re-prefills the window
// at every such step: same tokens, no speedup.
// Expected: the number of generated tokens that differ between the two is exactly 0 (tolerance 0:
// token ids are integers; both paths compute each logit row in the same order, design.md
// "Numerics"); the cached generator re-prefills at exactly the steps where the window has slid
// (an integer count from the rule, tolerance 0). The positions each path feeds are shown.
//
//   kvlab greedy-generate [--prompt 8] [--new-tokens 40] [--block-size 32] [--kv-heads 8]
//   kvlab greedy-generate --weights data/weights/target.safetensors   (prints the text, bytes)
#include "checks/greedy_generate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "support/device_model.hpp"
#include "support/model_setup.hpp"
#include "train/corpus.hpp"

namespace kvlab::checks::greedy_generate {
namespace {

// Option ranges: the naive path feeds up to block_size positions per token; at the largest values
// (256 new tokens × a 128-token window, 2 layers of d_model 64) a run stays within a few seconds.
constexpr int kMaxPrompt = 128;
constexpr int kMaxNew = 256;
constexpr int kMaxBlock = 128;
constexpr double kEmbeddingScale = 10.0;

/// Bytes as text: printable ASCII as is, \n and \t escaped, anything else \xNN.
std::string escape_bytes(std::span<const int> ids) {
  std::string out;
  for (int b : ids) {
    if (b == '\n') out += "\\n";
    else if (b == '\t') out += "\\t";
    else if (b == '"' || b == '\\') out += std::string("\\") + static_cast<char>(b);
    else if (b >= 0x20 && b < 0x7f) out += static_cast<char>(b);
    else out += fmt::format("\\x{:02x}", b & 0xff);
  }
  return out;
}

/// A byte prompt of n tokens: the start of validation fortune number seed mod N of the fortunes
/// corpus (lib/train/corpus.hpp), repeated if short; a fixed English sentence without the corpus.
std::vector<int> text_prompt(std::uint64_t seed, int n) {
  std::string text = "The best way to predict the future is to invent it.\n";
  if (const auto corpus = train::load_fortunes()) {
    std::vector<std::size_t> starts = {0};  // each fortune ends with "%\n"
    const auto& v = corpus->validation;
    for (std::size_t i = 1; i + 1 < v.size(); ++i)
      if (v[i - 1] == '%' && v[i] == '\n' && (i < 2 || v[i - 2] == '\n')) starts.push_back(i + 1);
    const std::size_t s = starts[seed % starts.size()];
    text.assign(v.begin() + static_cast<std::ptrdiff_t>(s), v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), s + 4096)));
  }
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(text[static_cast<std::size_t>(i) % text.size()]));
  return out;
}

// The seeded mini-GPT of the options (embeddings scaled), or the --weights file's model.
template <class T>
MiniGPT<T> greedy_model(const GreedyGenerateOptions& o, const RunContext& ctx) {
  ModelConfig base;
  base.n_kv_head = o.kv_heads;
  base.block_size = o.block_size;
  MiniGPT<T> model = check_model<T>(
      base, ctx, "greedy-generate",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (naive = cached holds for causal models)"},
       {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (full attention)"},
       {"positional", [](const ModelConfig& c) { return c.positional == Positional::learned; },
        "learned (the claim is about the learned-position window sliding)"}});
  if (ctx.weights.empty()) {
    // nanoGPT's N(0, 0.02²) embeddings are as small as the biases every position shares, and a
    // random model then repeats one id; embeddings ×kEmbeddingScale make its output follow its input.
    model.weights().wte *= T(kEmbeddingScale);
    model.weights().wpe *= T(kEmbeddingScale);
  }
  return model;
}

// Runs both schedules of `m` from m.prompt: on the host (the cached one through make_cache's
// cache), or, for float32 with --device cuda, on one device model whose cache a fresh call empties.
// A generator that throws leaves its error in m (naive: NaN logits, e.g. a device slot never
// written; cached: a broken generator, e.g. decoding past block_size).
template <class T>
void generate(GreedyGenerateMeasured& m, const MiniGPT<T>& model, const GenerationCacheMaker<T>& make_cache) {
  std::unique_ptr<kernels::ModelOps> ops;
  std::unique_ptr<gpu::DeviceGpt> device_model;
  ScheduleForward<T> on_device;
  if constexpr (std::is_same_v<T, float>) {
    if (m.context.device == Device::cuda) {
      ops = device_ops(m.context);
      device_model = std::make_unique<gpu::DeviceGpt>(model, *ops, gpu::DeviceCacheSpec{.max_ctx = m.config.block_size});
      on_device = [&g = *device_model](std::span<const int> tokens, int start_pos, bool fresh) {
        if (fresh) g.truncate(0, 0);
        if (start_pos != g.length(0))
          throw std::invalid_argument(fmt::format("start_pos {} but the device cache holds {}", start_pos, g.length(0)));
        return g.forward(0, tokens);
      };
      m.on_device = true;
      m.device_note = device_note(*ops);
    }
  }
  try {
    m.naive = on_device ? run_schedule<T>(m.prompt, m.naive_calls, on_device)
                        : run_schedule<T>(model, m.prompt, m.naive_calls);
  } catch (const NonFiniteError& e) {
    m.naive_error = e.what();
    m.naive = m.prompt;  // the prompt only: the tables show no generated token
  }
  try {
    m.cached = on_device ? run_schedule<T>(m.prompt, m.cached_calls, on_device)
                         : run_schedule<T>(model, m.prompt, m.cached_calls, make_cache);
  } catch (const std::exception& e) {
    m.cached_error = e.what();
  }
}

// Generated tokens that differ (NaN when a generator failed), the first such step, and the
// cached generator's re-prefills.
void compare(GreedyGenerateMeasured& m) {
  m.differing = std::numeric_limits<double>::quiet_NaN();
  if (m.cached_error.empty() && m.naive_error.empty()) {
    m.differing = 0;
    for (std::size_t i = m.prompt.size(); i < m.naive.size(); ++i) {
      if (i < m.cached.size() && m.cached[i] == m.naive[i]) continue;
      m.differing += 1;
      if (m.first_diff < 0) m.first_diff = static_cast<std::int64_t>(i - m.prompt.size());
    }
    if (m.cached.size() != m.naive.size()) m.differing += std::abs(static_cast<double>(m.cached.size()) - m.naive.size());
  }
  for (std::size_t j = 1; j < m.cached_calls.size(); ++j) m.reprefills += m.cached_calls[j].fresh_cache ? 1 : 0;
  m.naive_count = count_schedule(m.config, m.naive_calls);
  m.cached_count = count_schedule(m.config, m.cached_calls);
}

template <class T>
GreedyGenerateMeasured measure_impl(const GreedyGenerateOptions& o, const RunContext& ctx,
                                    const GreedyGenerateParts& parts, const GenerationCacheMaker<T>& make_cache) {
  const MiniGPT<T> model = greedy_model<T>(o, ctx);
  GreedyGenerateMeasured m{.options = o, .context = ctx, .config = model.config()};
  // A byte-level model from --weights starts from English text (a fortune), others from ids.
  m.bytes = !ctx.weights.empty() && m.config.vocab_size == 256;
  m.prompt = m.bytes ? text_prompt(ctx.seed, o.prompt) : random_tokens(ctx.seed + 1, o.prompt, m.config.vocab_size);
  const auto window = position_window(m.config);
  m.naive_calls = generation_schedule(GenerationMode::naive, o.prompt, o.new_tokens, window);
  m.cached_calls = parts.cached_schedule ? parts.cached_schedule(o.prompt, o.new_tokens, window)
                                         : generation_schedule(GenerationMode::cached, o.prompt, o.new_tokens, window);
  generate<T>(m, model, make_cache);
  compare(m);
  return m;
}

std::int64_t fresh_calls(const std::vector<ForwardCall>& calls) {
  return std::count_if(calls.begin(), calls.end(), [](const ForwardCall& c) { return c.fresh_cache; });
}

void present_tables(const GreedyGenerateMeasured& m, Result& r) {
  const std::int64_t n = m.options.new_tokens, block = m.config.block_size;
  Table t{"what each generator fed the model", {"generator", "forward calls", "fresh caches", "positions fed", "FLOPs counted"}, {}};
  t.rows.push_back({std::string("naive (Day 3 generate)"), static_cast<std::int64_t>(m.naive_calls.size()),
                    fresh_calls(m.naive_calls), static_cast<std::int64_t>(m.naive_count.positions),
                    static_cast<double>(m.naive_count.total())});
  t.rows.push_back({std::string("cached (prefill, decode, re-prefill past block_size)"),
                    static_cast<std::int64_t>(m.cached_calls.size()),
                    static_cast<std::int64_t>(m.cached_calls.empty() ? 0 : 1 + m.reprefills),
                    static_cast<std::int64_t>(m.cached_count.positions), static_cast<double>(m.cached_count.total())});
  r.tables.push_back(std::move(t));

  Table tokens{"generated tokens (first 16 and last 16)", {"step", "position in sequence", "naive", "cached", "window slid"}, {}};
  for (std::int64_t j = 0; j < n; ++j) {
    if (j >= 16 && j < n - 16) continue;
    const std::size_t i = m.prompt.size() + static_cast<std::size_t>(j);
    tokens.rows.push_back({j, static_cast<std::int64_t>(i),
                           i < m.naive.size() ? Cell{std::int64_t{m.naive[i]}} : Cell{std::string("—")},
                           i < m.cached.size() ? Cell{std::int64_t{m.cached[i]}} : Cell{std::string("—")},
                           std::string(m.options.prompt + j > block ? "yes" : "no")});
  }
  r.tables.push_back(std::move(tokens));
}

void present(const GreedyGenerateMeasured& m, Result& r) {
  const GreedyGenerateOptions& o = m.options;
  const RunContext& ctx = m.context;
  const ModelConfig& cfg = m.config;
  r.metric("differing_tokens", m.differing);
  r.metric_exact("generated_tokens", static_cast<std::uint64_t>(o.new_tokens));
  r.metric_exact("reprefills", static_cast<std::uint64_t>(m.reprefills));
  r.metric_exact("positions_naive", m.naive_count.positions);
  r.metric_exact("positions_cached", m.cached_count.positions);
  present_tables(m, r);

  const std::span<const int> generated = std::span(m.naive).subspan(static_cast<std::size_t>(o.prompt));
  std::vector<int> distinct(generated.begin(), generated.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (!ctx.weights.empty()) {
    r.notes.push_back(fmt::format("model: {} ({} layers, d_model {}, {} query / {} K/V heads, block_size {}, vocab {}), "
                                  "{}; --block-size and --kv-heads do not apply; {} distinct ids generated",
                                  ctx.weights, cfg.n_layer, cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.block_size,
                                  cfg.vocab_size, dtype_name(ctx.dtype), distinct.size()));
    if (m.bytes) {
      r.notes.push_back("prompt (bytes): \"" + escape_bytes(m.prompt) + "\"");
      r.notes.push_back("generated (naive = cached): \"" + escape_bytes(generated) + "\"");
    }
  } else {
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, {} K/V heads, learned positions (embeddings ×{:g}), "
                                  "block_size {}, vocab {}, {}, seed {} (prompt ids from seed {}); {} distinct ids generated",
                                  o.kv_heads, kEmbeddingScale, cfg.block_size, cfg.vocab_size, dtype_name(ctx.dtype),
                                  ctx.seed, ctx.seed + 1, distinct.size()));
  }
  if (m.on_device) r.notes.push_back(m.device_note);
  if (m.first_diff >= 0) r.notes.push_back(fmt::format("first differing generated token: step {}", m.first_diff));
  if (!m.naive_error.empty()) r.notes.push_back("the naive generator failed: " + m.naive_error);
  if (!m.cached_error.empty()) r.notes.push_back("the cached generator failed: " + m.cached_error);
  r.notes.push_back("past block_size the cached generator recomputes the window every step, as the naive one: "
                    "the same tokens, but the cache no longer saves work (004 §1.6). RoPE keeps cached K valid "
                    "(abs-pos-window, rope-relative).");
}

// Steps j = 1 .. n − 1 see a sequence of prompt + j tokens; the window has slid, and the cached
// generator re-prefills it, once that exceeds block_size: j >= block − prompt + 1.
std::int64_t first_slid_step(const GreedyGenerateMeasured& m) {
  return std::max<std::int64_t>(1, m.config.block_size - m.options.prompt + 1);
}

std::string claim(const GreedyGenerateMeasured& m) {
  const std::int64_t n = m.options.new_tokens, prompt = m.options.prompt, block = m.config.block_size;
  const std::string claim = fmt::format(
      "Greedy generation of {} tokens after a {}-token prompt: the KV-cached generator outputs exactly the naive "
      "generator's tokens",
      n, prompt);
  if (n > first_slid_step(m))
    return claim + fmt::format(", also past block_size = {} (where it re-prefills the slid window every step).", block);
  return claim + fmt::format(". This run never feeds more than block_size = {} positions, so the window never "
                             "slides: give --new-tokens above {} to test past it.", block, first_slid_step(m));
}

}  // namespace

GreedyGenerateMeasured measure_greedy_generate(const GreedyGenerateOptions& o, const RunContext& ctx,
                                               const GreedyGenerateParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() {
    GenerationCacheMaker<T> maker;
    if constexpr (std::is_same_v<T, double>) maker = parts.cache_f64;
    else maker = parts.cache_f32;
    return measure_impl<T>(o, ctx, parts, maker);
  });
}

std::vector<Expectation> judge_greedy_generate(const GreedyGenerateMeasured& m) {
  const std::int64_t n = m.options.new_tokens, block = m.config.block_size;
  const std::int64_t total = m.options.prompt + n;
  const std::int64_t first_slid = first_slid_step(m);
  Expectation same{
      .quantity = fmt::format("generated tokens that differ, cached vs naive ({} tokens, {} past block_size {})", n,
                              std::max<std::int64_t>(0, total - block), block),
      .source = "004 §3.5 (test 2)",
      .unit = "tokens",
      .expected = 0,
      .tolerance = 0,
      .why = m.on_device ? "token ids are integers: equal or not. On the device the naive path's T-row and the cached "
                           "path's 1-row products are different cuBLAS calls, so a near-tie between two logits "
                           "could flip an argmax: a differing token there needs its logit margin read before the "
                           "cache is blamed"
                         : "token ids are integers: equal or not",
      .measured = m.differing};
  same.document = "完全相同 (identical), 包括超过 block_size 之后";
  Expectation reprefills{.quantity = "re-prefills of the slid window by the cached generator",
                         .source = "004 §1.6",
                         .unit = "steps",
                         .expected = static_cast<double>(std::max<std::int64_t>(0, n - first_slid)),
                         .tolerance = 0,
                         .why = "integer count: one per step whose sequence exceeds block_size (max(0, n − max(1, "
                                "block − prompt + 1)))",
                         .measured = static_cast<double>(m.reprefills)};
  return {same, reprefills};
}

const CheckDef<GreedyGenerateOptions, GreedyGenerateMeasured>& greedy_generate_check() {
  static const CheckDef<GreedyGenerateOptions, GreedyGenerateMeasured> def{
      .spec = {.name = "greedy-generate",
               .order = 350,
               .source = "004 §3.5 (test 2), §1.6",
               .summary = "cached greedy generation = naive generation, token for token, past block_size too",
               .claim_zh = "带缓存的贪心生成与朴素生成逐 token 一致，超过 block_size 后亦然",
               .description =
                   "Generates greedily twice from one seeded mini-GPT with learned positions: naively (the\n"
                   "whole window recomputed every step) and through the KV cache (prefill, then one token per\n"
                   "step; past block_size the window slides and is re-prefilled). Counts differing tokens.",
               .derivation =
                   "A causal model's K/V at position i depend only on tokens 0..i at their positions (004 §1.2),\n"
                   "so decoding token t against the cache computes the same last-row logits as recomputing the\n"
                   "window, and the argmax picks the same id. Past block_size a learned-position model crops\n"
                   "the window: every kept token moves to a new position, its K/V change (004 §1.6), and the\n"
                   "cache must be rebuilt: re-prefilling the window gives again exactly the naive logits.\n"
                   "Source: 004 §3.5 test 2, §1.6.",
               .traits = {.dtype = true, .weights = true, .cuda = true}},
      .options = {{"--prompt", &GreedyGenerateOptions::prompt, Allowed::integers(1, kMaxPrompt), "Prompt tokens"},
                  {"--new-tokens", &GreedyGenerateOptions::new_tokens, Allowed::integers(1, kMaxNew),
                   "Tokens generated"},
                  {"--block-size", &GreedyGenerateOptions::block_size, Allowed::integers(1, kMaxBlock),
                   "Window of learned positions"},
                  {"--kv-heads", &GreedyGenerateOptions::kv_heads, Allowed::integers(1, 8),
                   "K/V heads (divisor of 8: 8 MHA, 2 GQA, 1 MQA)"}},
      .constraints =
          [](const GreedyGenerateOptions& o) {
            if (8 % o.kv_heads != 0)
              throw InputError(
                  fmt::format("--kv-heads: must divide the 8 query heads: 1, 2, 4 or 8 (got {})", o.kv_heads));
          },
      .measure = [](const GreedyGenerateOptions& o, const RunContext& ctx) { return measure_greedy_generate(o, ctx); },
      .judge = judge_greedy_generate,
      .present = present,
      .claim = claim,
      .cuda_gap = [](const GreedyGenerateOptions&, const RunContext& ctx) { return weights_device_gap(ctx); }};
  return def;
}

Result run_greedy_generate(const GreedyGenerateOptions& o, const RunContext& ctx, const GreedyGenerateParts& parts) {
  return run_check(greedy_generate_check(), o, ctx, [&parts](const GreedyGenerateOptions& opts, const RunContext& c) {
    return measure_greedy_generate(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(greedy_generate_check);

}  // namespace kvlab::checks::greedy_generate
