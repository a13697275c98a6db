// The mini-GPT forward for `--device cuda`: the model of model/gpt.hpp, its weights and
// KV cache held in one device's memory, computed by that device's operations
// (kernels/model_ops.hpp). On a GPU the operations are cuBLAS and kvlab's kernels; in the unit
// tests the same forward runs on device/host_ops.hpp, so the code below is tested without a GPU.
//
//   forward(seq, tokens)   tokens of sequence seq at positions length(seq).. (prefill, a chunk,
//                          or one decode token); logits [T, vocab]
//   decode(tokens)         one token for each of sequences 0 .. B-1, each at its own length
//                          (batched decode, ragged lengths); logits [B, vocab]
//   per layer              LN1 → Q, K, V (SGEMM) → RoPE → KV append → GQA attention over the
//                          cache → W_o, residual → LN2 → W_fc → GELU → W_proj, residual
//
// The cache is one K and one V buffer per layer, [slots, n_kv_head * head_dim], float32 or bf16.
// Contiguous: max_ctx slots per sequence. Paged (000 §5.2): blocks of block_size positions, each
// sequence's blocks taken from the pool in a seeded random order, found through its block table,
// so a kernel that ignored the table would read another sequence's rows. The cache starts as NaN
// (every byte 0xFF): a position read before it was written poisons the logits.
//
// float32 compute (the device's dtype). Scope as FastGpt: causal, learned positions or RoPE,
// MHA/GQA/MQA; no sliding window, no CLA (InputError).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "kernels/model_ops.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"
#include "model/sequence_model.hpp"

namespace kvlab::gpu {

/// The KV cache a DeviceGpt allocates.
struct DeviceCacheSpec {
  int batch = 1;             ///< sequences, >= 1
  int max_ctx = 64;          ///< positions per sequence, >= 1 (learned positions: <= block_size)
  bool paged = false;        ///< block table (paged) or one slab of max_ctx slots per sequence
  int block_size = 16;       ///< paged: positions per block, >= 1
  kernels::Storage storage = kernels::Storage::f32;
  std::uint64_t seed = 0;    ///< paged: the order in which the pool's blocks are handed out
};

/// Why a model of config `c` cannot run as a DeviceGpt ("" when it can): a sliding window, CLA, a
/// bidirectional mask, or a head shape the decode-attention kernel does not take
/// (kernels::attention_shape_problem). The checks ask it to keep `--device auto` on the CPU.
std::string device_gap(const ModelConfig& c);

/// Bytes of one of K or V for one layer under `spec`: slots x n_kv_head x head_dim x 4 (f32) or 2 (bf16).
std::size_t device_cache_layer_bytes(const ModelConfig& c, const DeviceCacheSpec& spec);

class DeviceGpt {
 public:
  /// Uploads `model`'s weights to `ops`' memory and allocates the cache and the activations (rows
  /// up to max(batch, max_ctx)). `ops` must outlive this object. Throws InputError for a sliding
  /// window, CLA, a bidirectional mask, a size outside [1, 1,048,576] or max_ctx > block_size with
  /// learned positions; CudaError (kernels/gpu_kernels.hpp) when the device fails, e.g. out of memory.
  DeviceGpt(const MiniGPT<float>& model, kernels::ModelOps& ops, const DeviceCacheSpec& spec);
  ~DeviceGpt();
  DeviceGpt(const DeviceGpt&) = delete;
  DeviceGpt& operator=(const DeviceGpt&) = delete;

  /// Logits [T, vocab] of `tokens` of sequence `seq`, at positions length(seq) .. length(seq) + T - 1;
  /// their K and V are appended to the cache. Throws InputError for seq outside [0, batch), T < 1,
  /// a token id outside [0, vocab_size) or length(seq) + T > max_ctx; InputError "SOURCE: the
  /// forward on the device gives non-finite values ..." when the model had a source() (a weights
  /// file) and a logit is NaN or ±inf.
  Mat<float> forward(int seq, std::span<const int> tokens);
  /// One decode step: tokens[b] at position length(b) for b in 0 .. B-1, B = tokens.size() <=
  /// batch; logits [B, vocab]. Same errors as forward, the non-finite one included.
  Mat<float> decode(std::span<const int> tokens);
  /// Forgets positions len .. of sequence seq (speculative decoding's rollback): their slots are
  /// poisoned with NaN again and rewritten by the next forward. Throws InputError for len outside [0, length(seq)].
  void truncate(int seq, int len);
  int length(int seq) const;

  /// K or V of cache layer `layer`, sequence `seq`, positions 0 .. length(seq) - 1, downloaded and
  /// widened to float32: [length(seq), n_kv_head * head_dim]. Throws InputError for a bad index.
  Mat<float> keys(int layer, int seq) const;
  Mat<float> values(int layer, int seq) const;

  const ModelConfig& config() const { return c_; }
  const DeviceCacheSpec& cache_spec() const { return spec_; }
  /// The device's name, from the ops ("cuda: NVIDIA H200", "host-f32").
  std::string device() const { return ops_.name(); }

 private:
  /// Device memory owned by this model (released through ops_).
  struct Buffer {
    void* p = nullptr;
    float* f() const { return static_cast<float*>(p); }
  };
  struct Layer {
    Buffer ln1_g, ln1_b, w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o, ln2_g, ln2_b, w_fc, b_fc, w_proj, b_proj;
    Buffer k_cache, v_cache;
  };
  Buffer alloc(std::size_t bytes);
  Buffer upload(const float* host, std::size_t n);
  kernels::CacheRows rows_for(const std::vector<int>& seqs, const std::vector<int>& pos) const;
  Mat<float> run(const std::vector<int>& tokens, const kernels::CacheRows& rows);
  Mat<float> cached(int layer, int seq, bool values) const;
  std::size_t slot_of(int seq, int pos) const;  ///< the cache slot of sequence seq's position pos
  void check_seq(int seq, const char* what) const;

  ModelConfig c_;
  std::string source_;  // the model's source(): a file whose forward overflows is named in the error
  kernels::ModelOps& ops_;
  DeviceCacheSpec spec_;
  int rows_cap_ = 1, q_w_ = 1, kv_w_ = 1;
  int blocks_per_seq_ = 1, num_blocks_ = 1, block_size_ = 1;
  std::vector<int> table_;       // [batch, blocks_per_seq_]: the physical block of each logical block
  std::vector<int> lengths_;     // [batch]
  std::vector<Buffer> owned_;    // every allocation, released in the destructor
  Buffer wte_, wpe_, lnf_g_, lnf_b_, w_lm_;
  std::vector<Layer> layers_;
  Buffer x_, h_, q_, k_, v_, att_, tmp_, m_, logits_;  // activations [rows_cap, ...]
};

/// Sequence `seq` of a DeviceGpt (not owned) as a SequenceModel: what the speculative loop and
/// autoregressive_decode drive on the device.
class DeviceSequence final : public SequenceModel<float> {
 public:
  explicit DeviceSequence(DeviceGpt& model, int seq = 0) : model_(model), seq_(seq) {}
  const ModelConfig& config() const override { return model_.config(); }
  Mat<float> forward(std::span<const int> tokens) override { return model_.forward(seq_, tokens); }
  int length() const override { return model_.length(seq_); }
  void truncate(int len) override { model_.truncate(seq_, len); }

 private:
  DeviceGpt& model_;
  int seq_;
};

}  // namespace kvlab::gpu
