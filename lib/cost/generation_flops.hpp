// FLOPs of generating T tokens through one transformer layer, without and with a KV cache
// (004 §1.1, §0.1; 003 Q5). One layer: MHA with n_head·head_dim = d, MLP width 4d, causal mask.
//
// Per token processed, the linear layers do 12·d² multiply-adds (Q, K, V, O: 4·d²; MLP: 8·d²);
// a query at position p (it sees p + 1 keys) does 2·(p + 1)·d in attention (q·k and weights·V).
// FLOPs = 2 × multiply-adds; LayerNorm, softmax, GELU (O(T·d)) are left out.
//
//   naive step t (recompute the t-token prefix):  24·t·d² + 2·t(t + 1)·d
//   cached step t (one token at position t − 1):  24·d²   + 4·t·d
//   cumulative over t = 1..T:
//     naive   12·T(T + 1)·d² + (2/3)·T(T + 1)(T + 2)·d     = O(T²d² + T³d)
//     cached  24·T·d²        + 2·T(T + 1)·d               = O(Td² + T²d)
#pragma once

#include <cstdint>

namespace kvlab {

/// Cumulative FLOPs of naive generation (each step recomputes the whole prefix) of T tokens
/// through one layer of width d. Throws InputError when the count overflows 64 bits.
std::uint64_t naive_generation_flops(std::uint64_t T, std::uint64_t d);

/// Cumulative FLOPs of cached generation (each step processes one token against the cache) of T
/// tokens through one layer of width d. Throws InputError when the count overflows 64 bits.
std::uint64_t cached_generation_flops(std::uint64_t T, std::uint64_t d);

}  // namespace kvlab
