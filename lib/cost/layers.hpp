// A model as a list of layer groups: the one description of what each layer keeps per token, from
// which the KV-cache size, the bytes a decode step reads and everything built on them follow.
//
// A config lists its layers (io/catalogue.hpp, ModelSpec::layers, read the way transformers reads
// the config: layer_types, sliding windows and their patterns, chunked attention, hybrid
// patterns); layer_groups() gathers the layers that cache the same thing into one group:
//
//   kind      per token and layer                 positions held at context n
//   full      2 · n_kv · head_dim elements (K, V)  n
//   sliding   2 · n_kv · head_dim                  min(n, W)  (W = the window, a rolling cache)
//   chunked   2 · n_kv · head_dim                  min(n, C)  (C = the chunk; the most a step
//                                                             needs, reached at the chunk's last
//                                                             token: the allocation, not the
//                                                             n mod C positions of the moment)
//   mla       d_c + d_r (latent + RoPE key)        n
//   none      0 (Mamba, linear attention / Gated DeltaNet, MLP-only: a fixed per-sequence state,
//              reported apart, never in the KV bytes)
//
// KV bits held by a group at batch B, context n, b bits per element:
//   count · elements_per_layer · B · positions_held(n) · b
// and the model's total is the sum over groups, ceil(bits / 8) bytes. "If every layer cached every
// position" replaces positions_held(n) by n (attention-free layers still hold nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"

namespace kvlab {

/// What one layer caches per token (table at the top of this file).
enum class LayerKind { full, sliding, chunked, mla, none };

/// "full" | "sliding" | "chunked" | "mla" | "none".
const char* layer_kind_name(LayerKind k);

/// Layers that cache the same thing per token.
struct LayerGroup {
  LayerKind kind = LayerKind::full;
  std::uint64_t count = 0;          ///< layers in the group, >= 1
  std::uint64_t span = 0;           ///< sliding: window W; chunked: chunk C; 0 otherwise
  std::uint64_t n_kv_head = 0;      ///< K/V heads (after any override); 0 for mla and none
  std::uint64_t head_dim = 0;       ///< per-head width; 0 for mla and none
  std::uint64_t latent_dim = 0;     ///< mla: d_c (kv_lora_rank); 0 otherwise
  std::uint64_t rope_dim = 0;       ///< mla: d_r (qk_rope_head_dim); 0 otherwise
  /// What mixes tokens in these layers: "attention", or for kind none the config's word for it
  /// ("mamba", "linear_attention", "mlp", ...).
  std::string mixer = "attention";
  std::vector<std::uint64_t> layers;  ///< the 0-based layer indices, ascending (count of them)

  /// Elements one token leaves in ONE layer of the group: 2 · n_kv · head_dim, d_c + d_r, or 0.
  std::uint64_t elements_per_layer() const;
};

/// The layer groups of `m`, in the order of each group's first layer; the counts sum to m.n_layer.
/// `kv_heads` overrides the K/V heads of every attention layer (not for MLA). Same errors as
/// kv_layout (InputError naming "kv-heads").
std::vector<LayerGroup> layer_groups(const ModelSpec& m,
                                     std::optional<std::uint64_t> kv_heads = std::nullopt);

/// Positions one sequence's cache holds in a layer of `g` at context `ctx`: ctx (full, mla),
/// min(ctx, W) (sliding), min(ctx, C) (chunked), 0 (none).
std::uint64_t positions_held(const LayerGroup& g, std::uint64_t ctx);

/// One group's share of a cache query.
struct GroupKv {
  LayerGroup group;
  std::uint64_t positions = 0;      ///< positions_held(group, ctx), per sequence
  std::uint64_t bits_per_token = 0; ///< count · elements_per_layer · dtype bits
  std::uint64_t total_bits = 0;     ///< bits_per_token · batch · positions
  std::uint64_t total_bits_if_full = 0;  ///< bits_per_token · batch · ctx
};

/// A cache query answered group by group, exact.
struct KvHeld {
  std::vector<GroupKv> groups;
  std::uint64_t total_bits = 0;            ///< sum of the groups' total_bits
  std::uint64_t total_bytes = 0;           ///< ceil(total_bits / 8)
  std::uint64_t total_bits_if_full = 0;    ///< every attention layer caching every position
  std::uint64_t total_bytes_if_full = 0;   ///< ceil(total_bits_if_full / 8)
};

/// The KV cache `m` holds for `q`, group by group (formula at the top of this file). Throws
/// InputError for batch or ctx of 0, a bad kv-heads override, or a size over 64 bits.
KvHeld kv_held(const ModelSpec& m, const KvQuery& q);

/// "0-3, 5, 7-9": a sorted list of layer indices, runs collapsed; "0, 2, 4, ..., 46 (every 2nd)"
/// for an arithmetic progression of 4 or more.
std::string layer_list_text(const std::vector<std::uint64_t>& layers);

}  // namespace kvlab
