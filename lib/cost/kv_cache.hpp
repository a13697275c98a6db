// KV-cache size: how many bytes the keys and values of past tokens occupy.
//
//   MHA / GQA / MQA (004 §1.4; 000 §2.1):  bytes = 2 · L · n_kv · head_dim · (batch · ctx) · bytes/elem
//       the 2 is one K and one V; n_kv = H (MHA), G (GQA), 1 (MQA)
//   MLA (000 §2.2, §4.4.3):                bytes = L · (d_c + d_r) · (batch · ctx) · bytes/elem
//       one latent c^KV (d_c = kv_lora_rank) shared by K and V, plus the decoupled RoPE key
//       (d_r = qk_rope_head_dim) shared by all heads: no factor 2
//
// Every count is a std::uint64_t computed with checked_mul, in bits so that int4 (half a byte) is
// exact: a size that does not fit in 64 bits is an InputError naming the sizes, never a wrong
// number. Cache layout assumed by kv_cache_tensors, per layer:
//   MHA/GQA/MQA: K [batch, n_kv, ctx, head_dim], V [batch, n_kv, ctx, head_dim]
//   MLA:         c_kv [batch, ctx, kv_lora_rank], k_rope [batch, ctx, qk_rope_head_dim]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/catalogue.hpp"

namespace kvlab {

/// Element type of the cached K/V (or latent) values.
enum class CacheDtype { fp32, fp16, bf16, fp8, int8, int4 };

/// "fp32" | "fp16" | "bf16" | "fp8" | "int8" | "int4" -> CacheDtype; throws InputError
/// "kv-dtype: must be one of ..." otherwise.
CacheDtype parse_cache_dtype(const std::string& s);
/// The name parse_cache_dtype accepts, e.g. "bf16".
const char* cache_dtype_name(CacheDtype d);
/// Bits per cached element: 32, 16, 16, 8, 8, 4 (000 §2.1: fp16 = 2 B, fp8/int8 = 1 B, int4 = 0.5 B).
std::uint64_t cache_dtype_bits(CacheDtype d);
/// Every CacheDtype, widest first.
std::vector<CacheDtype> all_cache_dtypes();

/// What one token leaves in one layer's cache.
struct KvLayout {
  bool mla = false;                 ///< multi-head latent attention (no per-head K/V)
  std::uint64_t n_layer = 0;        ///< L
  std::uint64_t kv_heads = 0;       ///< K/V heads after any override (0 for MLA)
  std::uint64_t head_dim = 0;       ///< per-head width (0 for MLA)
  std::uint64_t latent_dim = 0;     ///< MLA d_c (kv_lora_rank); 0 otherwise
  std::uint64_t rope_dim = 0;       ///< MLA d_r (qk_rope_head_dim); 0 otherwise
  std::uint64_t elements_per_layer = 0;  ///< 2·kv_heads·head_dim, or d_c + d_r for MLA
};

/// The layout of `m`'s cache (an attention-free model: no heads, 0 elements); `kv_heads` overrides the model's K/V head count (e.g. 64 for
/// the MHA variant of a GQA model). Throws InputError naming "kv-heads" when the override does not
/// divide num_attention_heads, is 0, or is given for an MLA model (which has no K/V heads).
KvLayout kv_layout(const ModelSpec& m, std::optional<std::uint64_t> kv_heads = std::nullopt);

/// One cache query: how many sequences, how long, stored how.
struct KvQuery {
  std::uint64_t batch = 1;       ///< sequences, >= 1
  std::uint64_t ctx = 4096;      ///< cached positions per sequence (prompt + generated), >= 1
  CacheDtype dtype = CacheDtype::bf16;
  std::optional<std::uint64_t> kv_heads;  ///< override of the model's K/V heads (not for MLA)
};

/// The size of a KV cache, exact. Per-token figures count every attention layer caching every
/// position; the totals apply each layer's window or chunk (cost/layers.hpp): for a model whose
/// layers all attend fully, total_bits = tokens · bits_per_token as before.
struct KvCacheSize {
  KvLayout layout;
  std::uint64_t elements_per_token = 0;  ///< all attention layers: L_attn · elements_per_layer
  std::uint64_t bits_per_token = 0;      ///< elements_per_token · dtype bits
  double bytes_per_token = 0.0;          ///< bits_per_token / 8 (ends in .5 only for int4 and an odd count)
  std::uint64_t tokens = 0;              ///< batch · ctx
  std::uint64_t total_bits = 0;          ///< what the layers hold: Σ_groups bits/token · batch · positions held
  std::uint64_t total_bytes = 0;         ///< ceil(total_bits / 8): a partial byte still occupies one
  std::uint64_t total_bits_if_all_full = 0;   ///< tokens · bits_per_token (no window applied)
  std::uint64_t total_bytes_if_all_full = 0;  ///< ceil(total_bits_if_all_full / 8)
};

/// The size of `m`'s cache for `q`: per token by the closed form at the top of this file, in
/// total over the layer groups of cost/layers.hpp (windows, chunks and attention-free layers
/// applied). Throws InputError for batch or ctx of 0, a bad kv-heads override, or a size over 64
/// bits.
KvCacheSize kv_cache_size(const ModelSpec& m, const KvQuery& q);

/// K+V bytes per token over all layers at 16 bits, the model's own K/V heads: the quantity the
/// catalogue's kv_bytes_per_token_16bit records independently (data/facts.md).
std::uint64_t kv_bytes_per_token_16bit(const ModelSpec& m);

/// One tensor a cache allocates: which layer, its name ("K", "V", "c_kv", "k_rope") and shape.
struct KvTensor {
  std::uint64_t layer = 0;
  std::string name;
  std::vector<std::uint64_t> shape;  ///< [batch, n_kv, ctx, head_dim] or [batch, ctx, width]
};

/// The tensors a preallocated cache for `m` and `q` holds, layer by layer (layout at the top of
/// this file), read from m.layers one layer at a time: a sliding or chunked layer's ctx is
/// min(ctx, W or C), an attention-free layer has no tensor. Summing their element counts is a second route to kv_cache_size's total that does
/// not use the closed form; checks compare the two. Same errors as kv_layout.
std::vector<KvTensor> kv_cache_tensors(const ModelSpec& m, const KvQuery& q);

/// Elements in `tensors`, summed with overflow checks.
std::uint64_t count_elements(const std::vector<KvTensor>& tensors);

/// Bytes of the weights: n_params · bytes_per_param (004 §1.5: "2N bytes" at bf16).
/// Throws InputError unless both are finite and positive.
double weight_bytes(double n_params, double bytes_per_param);

/// Binary and decimal units, for display and for the document's GB/GiB.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kKiB = 1024.0;
inline constexpr double kGB = 1e9;
inline constexpr double kMB = 1e6;

}  // namespace kvlab
