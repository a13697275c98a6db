#include "model/generate.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"

namespace kvlab {

OpCount& OpCount::operator+=(const OpCount& o) {
  const char* what = "FLOP count";
  qkv = checked_add(qkv, o.qkv, what);
  out_proj = checked_add(out_proj, o.out_proj, what);
  mlp = checked_add(mlp, o.mlp, what);
  attn_scores = checked_add(attn_scores, o.attn_scores, what);
  attn_values = checked_add(attn_values, o.attn_values, what);
  lm_head = checked_add(lm_head, o.lm_head, what);
  positions = checked_add(positions, o.positions, what);
  calls = checked_add(calls, o.calls, what);
  return *this;
}

OpCount count_forward(const ModelConfig& c, std::int64_t n_new, std::int64_t start_pos) {
  if (n_new < 1) throw InputError(fmt::format("count_forward: n_new must be >= 1 (got {})", n_new));
  if (start_pos < 0) throw InputError(fmt::format("count_forward: start_pos must be >= 0 (got {})", start_pos));
  const char* what = "FLOP count";
  const auto mul = [what](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, what); };
  const std::uint64_t n = static_cast<std::uint64_t>(n_new), s = static_cast<std::uint64_t>(start_pos);
  const std::uint64_t d = static_cast<std::uint64_t>(c.d_model);
  const std::uint64_t q_w = mul(static_cast<std::uint64_t>(c.n_head), static_cast<std::uint64_t>(c.head_dim));
  const std::uint64_t kv_w = static_cast<std::uint64_t>(c.kv_width());
  const std::uint64_t layers = static_cast<std::uint64_t>(c.n_layer);

  // Keys seen by the n queries: causal, query i sees s + i + 1 keys: Σ = n·s + n(n + 1)/2;
  // bidirectional, each sees all s + n.
  const std::uint64_t pairs = c.causal ? checked_add(mul(n, s), mul(n, n + 1) / 2, what) : mul(n, s + n);
  const std::uint64_t per_pair = mul(2, mul(static_cast<std::uint64_t>(c.n_head), static_cast<std::uint64_t>(c.head_dim)));

  OpCount k;
  k.qkv = mul(layers, mul(mul(2, n), mul(d, checked_add(q_w, mul(2, kv_w), what))));
  k.out_proj = mul(layers, mul(mul(2, n), mul(q_w, d)));
  k.mlp = mul(layers, mul(mul(2, n), mul(d, mul(8, d))));
  k.attn_scores = mul(layers, mul(pairs, per_pair));
  k.attn_values = k.attn_scores;
  k.lm_head = mul(mul(2, n), mul(d, static_cast<std::uint64_t>(c.vocab_size)));
  k.positions = n;
  k.calls = 1;
  return k;
}

const char* generation_mode_name(GenerationMode m) { return m == GenerationMode::naive ? "naive" : "cached"; }

std::vector<ForwardCall> generation_schedule(GenerationMode mode, std::int64_t prompt, std::int64_t n_new,
                                             std::optional<std::int64_t> block_size) {
  if (prompt < 1) throw InputError(fmt::format("generation: prompt must be >= 1 token (got {})", prompt));
  if (n_new < 0) throw InputError(fmt::format("generation: new tokens must be >= 0 (got {})", n_new));
  if (block_size && *block_size < 1) throw InputError("generation: block_size must be >= 1");
  std::vector<ForwardCall> calls;
  calls.reserve(static_cast<std::size_t>(n_new));
  // The window of an n-token sequence: its last min(n, block_size) tokens.
  const auto window_begin = [&](std::int64_t n) { return block_size ? std::max<std::int64_t>(0, n - *block_size) : 0; };
  for (std::int64_t j = 0; j < n_new; ++j) {
    const std::int64_t n = prompt + j;  // tokens in the sequence before this step
    const std::int64_t begin = window_begin(n);
    if (mode == GenerationMode::naive || j == 0 || begin > 0) {
      // Recompute the whole window at positions 0..: naive always; cached for the prefill and,
      // once the window slides, every step (the learned positions of the cached K/V moved).
      calls.push_back({begin, n - begin, 0, true});
    } else {
      calls.push_back({n - 1, 1, n - 1, false});  // decode the newest token at its true position
    }
  }
  return calls;
}

OpCount count_schedule(const ModelConfig& c, const std::vector<ForwardCall>& schedule) {
  OpCount total;
  for (const ForwardCall& call : schedule) total += count_forward(c, call.n_tokens, call.start_pos);
  return total;
}

template <class T>
int argmax_row(const Mat<T>& logits, Eigen::Index row) {
  return checked_argmax(logits.row(row), "argmax_row: logits");
}

template <class T>
std::vector<int> run_schedule(std::span<const int> prompt, const std::vector<ForwardCall>& schedule,
                              const ScheduleForward<T>& forward) {
  std::vector<int> seq(prompt.begin(), prompt.end());
  seq.reserve(seq.size() + schedule.size());
  bool first = true;
  for (const ForwardCall& call : schedule) {
    if (call.begin < 0 || call.n_tokens < 1 || call.begin + call.n_tokens > static_cast<std::int64_t>(seq.size()))
      throw std::invalid_argument(fmt::format("run_schedule: call [{}, {}) outside the {}-token sequence",
                                              call.begin, call.begin + call.n_tokens, seq.size()));
    const std::span<const int> tokens(seq.data() + call.begin, static_cast<std::size_t>(call.n_tokens));
    const Mat<T> logits = forward(tokens, static_cast<int>(call.start_pos), call.fresh_cache || first);
    first = false;
    seq.push_back(argmax_row(logits, logits.rows() - 1));
  }
  return seq;
}

template <class T>
std::vector<int> run_schedule(const MiniGPT<T>& model, std::span<const int> prompt,
                              const std::vector<ForwardCall>& schedule, const GenerationCacheMaker<T>& make_cache) {
  std::int64_t reach = 1;  // the most positions a cache ever holds
  for (const ForwardCall& call : schedule) reach = std::max(reach, call.start_pos + call.n_tokens);
  const auto& c = model.config();
  std::unique_ptr<KVCache<T>> cache;
  const ScheduleForward<T> forward = [&](std::span<const int> tokens, int start_pos, bool fresh) {
    if (fresh)
      cache = make_cache ? make_cache(c.n_layer, c.kv_width(), static_cast<int>(reach))
                         : model.make_cache(CacheKind::prealloc, static_cast<int>(reach));
    return model.forward(tokens, start_pos, *cache);
  };
  return run_schedule<T>(prompt, schedule, forward);
}

std::optional<std::int64_t> position_window(const ModelConfig& c) {
  if (c.positional == Positional::learned) return c.block_size;
  return std::nullopt;
}

template int argmax_row<double>(const Mat<double>&, Eigen::Index);
template int argmax_row<float>(const Mat<float>&, Eigen::Index);
template std::vector<int> run_schedule<double>(std::span<const int>, const std::vector<ForwardCall>&,
                                               const ScheduleForward<double>&);
template std::vector<int> run_schedule<float>(std::span<const int>, const std::vector<ForwardCall>&,
                                              const ScheduleForward<float>&);
template std::vector<int> run_schedule<double>(const MiniGPT<double>&, std::span<const int>,
                                               const std::vector<ForwardCall>&, const GenerationCacheMaker<double>&);
template std::vector<int> run_schedule<float>(const MiniGPT<float>&, std::span<const int>,
                                              const std::vector<ForwardCall>&, const GenerationCacheMaker<float>&);

}  // namespace kvlab
