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
  /// Sliding-window attention (Mistral; 004 §2.7, 003 part 2): 0 = off; W > 0 lets the query at
  /// absolute position p see only the keys at p-W+1 .. p (W keys, itself included). With RoPE the
  /// positions keep counting past W (a RollingCache of W positions is enough); with learned
  /// positions the window works too, but positions still stop at block_size (forward's InputError).
  int sliding_window = 0;
  /// Cross-layer attention (CLA, 003 part 2 and Q3): each group of cla_share adjacent layers has
  /// one K/V projection (in its first layer) and one cache layer, read by every layer of the
  /// group. 1 = off (every layer its own K/V). Layers l and l' share iff l / cla_share ==
  /// l' / cla_share.
  int cla_share = 1;

  /// Throws InputError naming the first invalid field and its allowed values: every size in
  /// [1, 65536] (block_size and vocab_size up to 1,048,576), n_head divisible by n_kv_head,
  /// head_dim even under RoPE, rope_theta finite and > 1, sliding_window in [0, 1,048,576] (and
  /// causal when > 0), cla_share in [1, n_layer].
  void validate() const;

  /// Query heads served by each K/V head: n_head / n_kv_head (the GQA group size).
  int group_size() const { return n_head / n_kv_head; }
  /// Width of one token's K (or V) in one layer: n_kv_head * head_dim elements.
  int kv_width() const { return n_kv_head * head_dim; }
  /// Layers that own a K/V projection and a cache layer: ceil(n_layer / cla_share).
  int n_kv_layer() const { return (n_layer + cla_share - 1) / cla_share; }
  /// The cache layer (and K/V projection) layer `layer` reads: layer / cla_share.
  int kv_layer(int layer) const { return layer / cla_share; }
};

}  // namespace kvlab
