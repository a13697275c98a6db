// The mini-GPT's shape (004 §3, nanoGPT layout): validated when built.
#pragma once

#include <string>

namespace kvlab {

/// How positions enter the model: a learned absolute table added to the token embedding (GPT-2,
/// the course's Day 3 mini-GPT), or rotary embeddings applied to q and k (RoPE, base rope_theta).
enum class Positional { learned, rope };

/// "learned" | "rope"; throws InputError naming `positional` otherwise.
Positional parse_positional(const std::string& s);

/// Sizes of a mini-GPT. One grouped-query attention covers MHA (n_kv_head = n_head), GQA and MQA
/// (n_kv_head = 1). Query projection [d_model, n_head*head_dim]; K and V projections
/// [d_model, n_kv_head*head_dim]; MLP width 4*d_model.
struct ModelConfig {
  int n_layer = 2;
  int d_model = 64;
  int n_head = 8;
  int n_kv_head = 8;
  int head_dim = 8;
  int vocab_size = 96;
  int block_size = 64;  ///< maximum sequence length (size of the learned position table)
  Positional positional = Positional::learned;
  double rope_theta = 10000.0;
  /// Causal mask (decoder-only). false makes attention bidirectional (BERT-style, 004 §1.2):
  /// every position sees every other, and the KV cache argument no longer holds.
  bool causal = true;

  /// Throws InputError naming the first invalid field and its allowed values: every size in
  /// [1, 65536] (block_size and vocab_size up to 1,048,576), n_head divisible by n_kv_head,
  /// head_dim even under RoPE, rope_theta finite and > 1.
  void validate() const;

  /// Query heads served by each K/V head: n_head / n_kv_head (the GQA group size).
  int group_size() const { return n_head / n_kv_head; }
  /// Width of one token's K (or V) in one layer: n_kv_head * head_dim elements.
  int kv_width() const { return n_kv_head * head_dim; }
};

}  // namespace kvlab
