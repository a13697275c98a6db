// The mini-GPT's fast float32 CPU path: the same model as MiniGPT<float> (model/gpt.hpp),
// computed for speed rather than for bit-reproducibility. The float64 reference path (MiniGPT)
// stays what the checks compare against; this one is what `cpu-roofline` and `bench decode` time.
//
//   - weights stored transposed, one contiguous row per output feature (W^T [out, in]); Q, K and
//     V fused into one [q_w + 2 kv_w, d] matrix, so a decode step streams every weight once;
//   - matrix products split the output features across threads (OpenMP), each thread streaming
//     its own rows of W^T once for all B rows of the batch (lib/model/f32_kernels.hpp); products
//     with many rows (prefill) go to OpenBLAS's sgemm where it was found at build time;
//   - the KV cache is one preallocated [n_layer, max_batch, max_ctx, kv_w] block for K and one
//     for V; decode splits each sequence's cached positions into chunks (flash-decoding), each
//     chunk's K and V rows read once, front to back, for all heads, then the chunks are joined;
//     an extend of up to 16 rows over 1024 or more cached positions (a verify step at long
//     context) takes the same chunks, each read once for all its rows;
//   - every buffer is allocated in the constructor (2 MiB huge pages for the large ones,
//     core/huge_pages.hpp): decode() and prefill() allocate nothing.
//
//   - extend_window: the same model reading only a window of its own cache (the first `sink`
//     positions and the most recent ones), the long-context self-draft of speculative decoding
//     (000 §8.5: StreamingLLM's attention sinks, MagicDec, TriForce's second level).
//
// Scope: causal, learned positions or RoPE, MHA/GQA/MQA; no sliding window, no CLA (InputError).
// Source: 004 §3 (the mini-GPT), §1.5 (decode is bandwidth-bound); 000 §3.1, §8.5.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/huge_pages.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"
#include "model/sequence_model.hpp"

namespace kvlab {

/// How the fast path stores its weight matrices (Q/K/V, output, MLP and LM head; LayerNorms,
/// biases and embeddings stay float32).
enum class FastWeights {
  f32,   ///< float32, 4 bytes per weight
  int8,  ///< symmetric per-row absmax int8 (model/f32_kernels.hpp, quantize_rows): 1 byte
  int4,  ///< symmetric per-row absmax int4, two per byte: half a byte
};

/// A variant of the model the fast path builds from the same reference weights: the self-drafts of
/// speculative decoding that need no second trained model (000 §8.6): quantized weights, or the
/// first `layers` blocks only followed by the final LayerNorm and the head (layer-skip early exit).
struct FastOptions {
  FastWeights weights = FastWeights::f32;
  int layers = 0;  ///< blocks kept, in [1, n_layer]; 0 = all
};

/// Bytes and FLOPs of one forward call of the fast path, counted as the roofline counts them
/// (004 §1.5): every weight read once (4 bytes each, f32), the KV cache read for every sequence
/// and the new K/V rows written; 2 FLOPs per weight per token, 4·ctx·q_w per token per layer for
/// attention (q·k and weights·V). LayerNorm, GELU and softmax are not counted (O(d) per token).
struct StepCost {
  double bytes = 0.0;  ///< bytes moved to or from memory
  double flops = 0.0;  ///< floating-point operations
};

/// A decode step of `batch` sequences that each hold `ctx` cached positions (the new token
/// attends to ctx + 1). Throws std::invalid_argument for batch < 1 or ctx < 0.
StepCost decode_step_cost(const ModelConfig& c, int batch, int ctx);
/// A verify step (FastGpt::extend): `rows` new tokens of one sequence over `ctx` cached positions,
/// logits for every row: every weight read once, the cache read and the rows' K/V written; token t
/// attends to ctx + t + 1 positions. Throws std::invalid_argument for rows < 1 or ctx < 0.
StepCost verify_step_cost(const ModelConfig& c, int rows, int ctx);
/// A prefill of one prompt of `len` tokens from position 0 (causal attention: token t attends to
/// t + 1 positions), with the LM head applied to the last token only (FastGpt::prefill without
/// all_logits). Throws std::invalid_argument for len < 1.
StepCost prefill_cost(const ModelConfig& c, int len);
/// Parameters the fast path streams per step: every matrix and vector except the embedding tables
/// (of which a step reads only B rows).
std::uint64_t streamed_parameters(const ModelConfig& c);

/// Which library multiplied the large matrix products (prefill), for the report.
const char* fast_gemm_backend();
/// Threads the fast path uses (OpenMP's max threads; 1 without OpenMP).
int fast_threads();

/// The cached positions a windowed forward attends to (StreamingLLM, Xiao et al. 2023, "Efficient
/// Streaming Language Models with Attention Sinks"; the draft of MagicDec, Sadhukhan et al. 2024,
/// arXiv 2408.11049; 000 §8.5): the token at position p sees positions 0 .. sink − 1 (the attention
/// sinks) and p − recent + 1 .. p (itself and the recent − 1 before it), in all sink + recent keys
/// at most; when sink + recent ≥ p + 1 it sees all of 0 .. p, as the full forward does.
struct AttentionWindow {
  int sink = 4;      ///< leading positions always attended, >= 0
  int recent = 252;  ///< most recent positions attended (the token's own included), >= 1
};

class FastGpt {
 public:
  /// Copies `ref`'s weights (f32) into the fast layout and allocates the cache and buffers for
  /// `max_batch` sequences of up to `max_ctx` positions and prompts of up to `max_prompt` tokens.
  /// Throws InputError when the config uses a sliding window, CLA or no causal mask, or when a
  /// size is outside [1, 1,048,576] or max_ctx exceeds block_size with learned positions.
  /// `max_cached_tokens` (0: max_batch x max_ctx) bounds the cache's allocation: set_shape
  /// then trades batch against context within it.
  /// `opts` picks the weight format and the blocks kept (InputError for layers outside
  /// [0, n_layer], or for quantized weights with d_model not a multiple of 8); config() then
  /// reports the blocks kept as n_layer.
  FastGpt(const MiniGPT<float>& ref, int max_batch, int max_ctx, int max_prompt, std::int64_t max_cached_tokens = 0,
          FastOptions opts = {});

  /// Lays the cache out for `batch` sequences of up to `ctx` positions (batch <= max_batch,
  /// ctx <= max_ctx, batch x ctx <= max_cached_tokens) and empties it (length 0). Throws
  /// InputError otherwise.
  void set_shape(int batch, int ctx);

  /// One decode step of tokens.size() = B <= the shape's batch sequences, all at position length():
  /// logits [B, vocab] row-major into `logits` (B * vocab floats). Appends one position to every
  /// sequence 0..B-1. Throws InputError for a bad token id, B outside [1, max_batch] or a full
  /// cache. Allocates nothing.
  void decode(std::span<const int> tokens, std::span<float> logits);
  /// Prefill of sequence 0 from position 0 (resets its length to T): logits of the last token into
  /// `last_logits` (vocab floats), or of every token into `all_logits` when it is non-empty
  /// ([T, vocab]). Throws InputError for a bad token id or T outside [1, max_prompt]. Allocates
  /// nothing.
  void prefill(std::span<const int> prompt, std::span<float> last_logits, std::span<float> all_logits = {});
  /// The verify step of speculative decoding (and a chunked prefill): tokens.size() = T new tokens
  /// of sequence 0 at positions length() .. length() + T − 1, over the cached prefix, in one pass
  /// over the weights; logits of every new token into `logits` ([T, vocab] row-major). Appends T
  /// positions. Over 1024 or more cached positions, up to 16 rows attend as decode does, chunk by
  /// chunk (each row's attention then equals decode's at its position bit for bit); otherwise
  /// through per-head GEMMs. Throws InputError for a bad token id, T outside [1, max(max_batch, max_prompt)]
  /// or a cache that cannot hold T more positions. Allocates nothing.
  void extend(std::span<const int> tokens, std::span<float> logits);
  /// The long-context self-draft's forward (000 §8.5): tokens.size() = T tokens of sequence 0 at
  /// positions pos .. pos + T − 1, each attending only to `window` of the cached positions 0 .. its
  /// own (the cache is read in place, not copied), with this model's weights; logits of every token
  /// into `logits` ([T, vocab] row-major). The cache is this model's own: positions below length()
  /// hold its K/V, computed with full attention, and are read, never written (the caller must pass
  /// there the tokens the model holds at those positions); positions from length() on get the
  /// draft's own K/V, which a later extend (the verify step) overwrites. length() does not change:
  /// the caller keeps the draft's length (WindowDraftSequence). Positions between length() and pos
  /// must have been written by earlier calls. Costs, per token and layer, min(sink + recent, p + 1)
  /// cached K and V rows instead of p + 1. With sink + recent ≥ pos + T the logits equal those of
  /// decode (one token) bit for bit. Throws InputError for a bad token id, T outside
  /// [1, max(max_batch, max_prompt)], pos < 0 or pos + T beyond the shape's ctx, sink < 0 or
  /// recent < 1. Allocates nothing.
  void extend_window(std::span<const int> tokens, int pos, AttentionWindow window, std::span<float> logits);
  /// Keeps positions 0 .. len − 1 of every sequence (the rollback after rejected drafts). Throws
  /// InputError for len outside [0, length()].
  void truncate(int len);
  /// Bytes of weights one step streams (matrices in their format, plus the float32 vectors): what
  /// the draft's cost ratio c is about.
  double streamed_weight_bytes() const;
  FastWeights weight_format() const { return opts_.weights; }
  /// Sets every sequence's length to `len` without computing (the benchmark fills the cache with
  /// seeded values once, fill_cache, and times steps at any context). Throws InputError outside
  /// [0, ctx of the current shape].
  void set_length(int len);  // within the current shape's ctx
  /// Fills the whole cache with seeded N(0, 1) values (what a benchmark at context len reads).
  void fill_cache(std::uint64_t seed);
  int length() const { return len_; }
  const ModelConfig& config() const { return c_; }
  int max_batch() const { return max_batch_; }
  int max_ctx() const { return max_ctx_; }

 private:
  /// A weight matrix W^T [out, in] in the model's format: f32 rows, or quantized bytes and scales.
  struct Matrix {
    StreamedFloats f;
    std::vector<std::uint8_t, StreamedAllocator<std::uint8_t>> q;
    StreamedFloats scale;
    int out = 0, in = 0;
  };
  Matrix make_matrix(StreamedFloats wt, int out, int in) const;
  void linear(const Matrix& w, const float* x, int rows, const float* bias, float* y, int ldy) const;
  /// How layer_forward's rows map to positions: decode (row b = sequence b's token at pos0),
  /// prefill (row t = sequence 0's token at pos0 + t, full causal attention) or window (as prefill,
  /// each row attending to `window` only, K/V written only at positions >= len_).
  enum class Pass { decode, prefill, window };
  void layer_forward(int rows, int layer, Pass pass, int pos0, AttentionWindow window = {});
  float* k_at(int layer, int b, int t) { return k_.data() + ((static_cast<std::size_t>(layer) * batch_cap_ + b) * ctx_cap_ + t) * kv_w_; }
  float* v_at(int layer, int b, int t) { return v_.data() + ((static_cast<std::size_t>(layer) * batch_cap_ + b) * ctx_cap_ + t) * kv_w_; }

  struct Layer {
    StreamedFloats ln1_g, ln1_b, bqkv, bo, ln2_g, ln2_b, bfc, bproj;
    Matrix wqkv_t, wo_t, wfc_t, wproj_t;
  };
  ModelConfig c_;
  FastOptions opts_;
  int max_batch_, max_ctx_, max_prompt_, max_rows_, q_w_, kv_w_, threads_;
  int len_ = 0;
  int batch_cap_ = 0, ctx_cap_ = 0;   // the current shape (set_shape)
  std::int64_t cache_tokens_ = 0;
  StreamedFloats wte_, wpe_, lnf_g_, lnf_b_, zero_vocab_;
  Matrix wlm_t_;
  std::vector<Layer> layers_;
  StreamedFloats k_, v_;                        // [n_layer, batch_cap, ctx_cap, kv_w]
  StreamedFloats x_, h_, qkv_, att_, m_;        // [max_rows, ...] activations
  static constexpr int kDecodeChunk = 128;      // cached positions per decode attention task
  StreamedFloats scores_;                       // [threads, n_head, kDecodeChunk] decode scratch
  StreamedFloats part_m_, part_l_;              // [tasks, n_head] per-chunk softmax max and sum
  StreamedFloats part_out_;                     // [tasks, n_head * head_dim] per-chunk outputs
  StreamedFloats rope_cos_, rope_sin_;          // [max_ctx, head_dim / 2] (RoPE)
  // A verify step (few rows) over a long cached prefix: decode's chunked attention, every chunk of
  // K/V rows read once for all rows, instead of per-head GEMMs that pack the cache's K/V slices.
  static constexpr int kVerifyRows = 16;        // rows up to which it is used
  static constexpr int kVerifyFrom = 1024;      // cached positions from which it is used
  StreamedFloats verify_m_, verify_l_, verify_out_;  // [kVerifyRows, chunks, ...]; empty: not used
  static constexpr int kPrefillBlock = 256;     // prefill queries per attention block
  StreamedFloats prefill_scores_;               // [threads, kPrefillBlock, max_ctx] (prefill)
};

/// The fast path as one sequence for a decoding loop (model/sequence_model.hpp): sequence 0 of a
/// FastGpt (not owned; it must outlive this, with its shape's batch >= 1), forward = extend, so
/// that spec/loop.hpp's speculative loop runs on it unchanged. forward allocates the returned
/// logits (the loop's own distributions allocate too).
/// `context` > 0: the model's first `context` cached positions are a fixed prefix (a long document
/// prefilled once) that the sequence starts after: length() counts the positions after it and
/// truncate never cuts into it. The model must hold at least `context` positions at construction
/// (InputError otherwise).
class FastSequence final : public SequenceModel<float> {
 public:
  explicit FastSequence(FastGpt& model, int context = 0) : model_(model), context_(context) {
    if (context < 0 || context > model.length())
      throw InputError("context: the model must hold the prefix (0 <= context <= its length)");
  }
  const ModelConfig& config() const override { return model_.config(); }
  Mat<float> forward(std::span<const int> tokens) override {
    Mat<float> out(static_cast<Eigen::Index>(tokens.size()), model_.config().vocab_size);
    model_.extend(tokens, std::span<float>(out.data(), static_cast<std::size_t>(out.size())));
    return out;
  }
  int length() const override { return model_.length() - context_; }
  void truncate(int len) override {
    if (len < 0) throw InputError("truncate: length must be >= 0");
    model_.truncate(context_ + len);
  }

 private:
  FastGpt& model_;
  int context_;
};

/// The long-context self-draft as a sequence for spec/loop.hpp: the target FastGpt itself (not
/// owned), reading only `window` of the cache it shares with the target (FastGpt::extend_window).
/// The target's sequence writes the cache (its verify step overwrites the draft's K/V rows) and
/// rolls it back (truncate); the draft keeps only its own length, after the same `context` prefix
/// as the target's FastSequence. A draft step then reads the weights and sink + recent K/V rows
/// per layer, where the target's reads the weights and every cached row (000 §8.5, MagicDec).
/// Throws as FastSequence's constructor; forward throws as extend_window.
class WindowDraftSequence final : public SequenceModel<float> {
 public:
  WindowDraftSequence(FastGpt& target, AttentionWindow window, int context = 0)
      : model_(target), window_(window), context_(context) {
    if (context < 0 || context > target.length())
      throw InputError("context: the model must hold the prefix (0 <= context <= its length)");
  }
  const ModelConfig& config() const override { return model_.config(); }
  Mat<float> forward(std::span<const int> tokens) override {
    Mat<float> out(static_cast<Eigen::Index>(tokens.size()), model_.config().vocab_size);
    model_.extend_window(tokens, context_ + len_, window_, std::span<float>(out.data(), static_cast<std::size_t>(out.size())));
    len_ += static_cast<int>(tokens.size());
    return out;
  }
  int length() const override { return len_; }
  void truncate(int len) override {
    if (len < 0 || len > len_) throw InputError("truncate: length must be in [0, the draft's length]");
    len_ = len;
  }

 private:
  FastGpt& model_;
  AttentionWindow window_;
  int context_;
  int len_ = 0;
};

}  // namespace kvlab
