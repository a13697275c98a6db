// Greedy generation with the mini-GPT, naive and cached (004 §0.1, §1.6, §3.5; 003 Q5), and the
// FLOPs each forward call performs, counted from the shapes it multiplies.
//
// Both generators follow a schedule: one forward call per generated token, saying which tokens of
// the sequence it feeds, at which start position, into a fresh or a kept cache.
//
//   naive  (Day 3's generate): step j feeds the whole window, the last min(n, block_size) tokens
//          of the n-token sequence, at positions 0.., into a fresh cache: Σ n positions.
//   cached (004 §3): step 0 prefills the prompt (cropped to block_size); step j feeds only the
//          newest token at position n − 1, keeping the cache. With learned positions a sequence
//          longer than block_size slides its window: every position moves, the cached K/V are
//          stale (004 §1.6), so each such step re-prefills the window into a fresh cache.
//
// The next token is the argmax of the last row of logits (lowest id on ties), so generation is
// deterministic and two generators agree exactly when their last-row logits pick the same id.
//
// FLOPs (count_forward) are 2 per multiply-add of the forward's matrix products, per layer:
//   qkv      2·n·d·(q_w + 2·kv_w)          (MHA: 6·n·d²)         q_w = n_head·head_dim
//   out_proj 2·n·q_w·d                     (MHA: 2·n·d²)         kv_w = n_kv_head·head_dim
//   mlp      2·n·d·4d + 2·n·4d·d = 16·n·d²
//   attention, QKᵀ and AV: 2·head_dim each per (query, key it sees, query head); query i of a call
//            at start_pos sees start_pos + i + 1 keys under the causal mask, all keys otherwise
// and once per call the LM head, 2·n·d·vocab. LayerNorm, GELU, softmax, biases and the embedding
// sums are not counted (lower order, as in the course's count, 000 §3.1).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/config.hpp"
#include "model/gpt.hpp"

namespace kvlab {

/// FLOPs of forward calls by operation, summed over all layers (lm_head: once per call). Exact.
struct OpCount {
  std::uint64_t qkv = 0;          ///< Q, K, V projections, FLOP
  std::uint64_t out_proj = 0;     ///< attention output projection W_o, FLOP
  std::uint64_t mlp = 0;          ///< up (d → 4d) and down (4d → d) projections, FLOP
  std::uint64_t attn_scores = 0;  ///< QKᵀ, FLOP
  std::uint64_t attn_values = 0;  ///< AV, FLOP
  std::uint64_t lm_head = 0;      ///< final projection to the vocabulary, FLOP
  std::uint64_t positions = 0;    ///< token positions fed through the blocks (rows of the calls)
  std::uint64_t calls = 0;        ///< forward calls

  /// The blocks' FLOPs: every term but lm_head.
  std::uint64_t layer_flops() const { return qkv + out_proj + mlp + attn_scores + attn_values; }
  std::uint64_t linear_flops() const { return qkv + out_proj + mlp; }
  std::uint64_t attention_flops() const { return attn_scores + attn_values; }
  std::uint64_t total() const { return layer_flops() + lm_head; }
  OpCount& operator+=(const OpCount& o);
};

/// The FLOPs of MiniGPT::forward over n_new tokens at positions start_pos.. with a cache that
/// already holds start_pos positions, for a model shaped `c` (formulas at the top of this file).
/// Needs no weights: only c's sizes and c.causal are read. Throws InputError when n_new < 1,
/// start_pos < 0 or a count overflows 64 bits.
OpCount count_forward(const ModelConfig& c, std::int64_t n_new, std::int64_t start_pos);

/// One forward call of a generation loop: feed sequence[begin, begin + n_tokens) at positions
/// start_pos.., into a fresh cache when fresh_cache, else into the one kept from the last call.
struct ForwardCall {
  std::int64_t begin = 0;
  std::int64_t n_tokens = 0;
  std::int64_t start_pos = 0;
  bool fresh_cache = true;
};

enum class GenerationMode { naive, cached };
/// "naive" or "cached".
const char* generation_mode_name(GenerationMode m);

/// The calls a generator makes for `n_new` tokens after a `prompt`-token prompt (one call per
/// token, in order), as described at the top of this file. block_size: the window of learned
/// positions; nullopt for no window (RoPE). Throws InputError when prompt < 1 or n_new < 0.
std::vector<ForwardCall> generation_schedule(GenerationMode mode, std::int64_t prompt,
                                             std::int64_t n_new, std::optional<std::int64_t> block_size);

/// Sum of count_forward over a schedule's calls for model shape `c`.
OpCount count_schedule(const ModelConfig& c, const std::vector<ForwardCall>& schedule);

/// Makes a generator's cache: (n_layer, width, max_len) -> an empty cache.
template <class T>
using GenerationCacheMaker = std::function<std::unique_ptr<KVCache<T>>(int n_layer, int width, int max_len)>;

/// Index of the largest entry of row `row` of `logits` (lowest index on ties). Throws
/// NonFiniteError (core/finite.hpp) when the row holds a NaN or ±inf.
template <class T>
int argmax_row(const Mat<T>& logits, Eigen::Index row);

/// Runs `schedule` on `model`: each call feeds its tokens and appends the argmax of the last row
/// of logits. Returns prompt + generated tokens. `make_cache` defaults to a PreallocCache sized
/// to the longest call's reach. Throws what MiniGPT::forward throws (e.g. InputError when a
/// schedule runs past block_size with learned positions), std::invalid_argument when a call
/// reaches past the sequence.
template <class T>
std::vector<int> run_schedule(const MiniGPT<T>& model, std::span<const int> prompt,
                              const std::vector<ForwardCall>& schedule,
                              const GenerationCacheMaker<T>& make_cache = {});

/// One forward call of a schedule, whatever runs the model (the CPU MiniGPT, the device's
/// DeviceGpt): logits [tokens.size(), vocab] of `tokens` at positions start_pos.., into an empty
/// cache when `fresh`, else appended to the cache the last call left.
template <class T>
using ScheduleForward = std::function<Mat<T>(std::span<const int> tokens, int start_pos, bool fresh)>;

/// Runs `schedule` through `forward`: each call feeds its tokens and appends the argmax of the last
/// row of logits. Returns prompt + generated tokens. Throws std::invalid_argument when a call
/// reaches past the sequence, and what `forward` throws.
template <class T>
std::vector<int> run_schedule(std::span<const int> prompt, const std::vector<ForwardCall>& schedule,
                              const ScheduleForward<T>& forward);

/// The window of learned positions a model shaped `c` has: block_size, or nullopt under RoPE.
std::optional<std::int64_t> position_window(const ModelConfig& c);

}  // namespace kvlab
