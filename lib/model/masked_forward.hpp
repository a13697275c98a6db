// A mini-GPT forward over a batch of new tokens with explicit positions and an arbitrary attention
// mask: the target's one forward over a flattened token tree (000 §8.2 tree attention; SpecInfer,
// arXiv:2305.09781, §4; Medusa, arXiv:2401.10774, §2.1.2).
//
//   forward_masked(model, tokens, positions, mask, cache)
//     x = wte[tokens] + wpe[positions]  (learned positions; under RoPE q and k are rotated by
//         each token's own position)                              [T, d_model]
//     every block as MiniGPT::forward, with masked_attention over the S cached keys followed by
//     the T new ones, instead of the causal mask                    -> logits [T, vocab_size]
//
// A token tree after a prompt of P tokens: prefill the prompt with MiniGPT::forward, then call
// this with the tree's nodes (parents before children), position P − 1 + depth for each node, and
// a mask that lets node i read the P prompt keys, its ancestors and itself (spec/token_tree.hpp).
// Row i of the logits is then the target's next-token logits after prompt + the path to node i.
// It computes every per-token piece exactly as MiniGPT::forward (same weights, same order), so
// each row equals, bit for bit, the last row of MiniGPT::forward over prompt + that path.
#pragma once

#include <span>

#include "attention/masked.hpp"
#include "cache/kv_cache.hpp"
#include "core/tensor.hpp"
#include "model/gpt.hpp"

namespace kvlab {

/// Logits [tokens.size(), vocab_size] of `tokens` at `positions` (one per token) under `mask`
/// ([T, S + T], S = cache.length(0): key j < S is cached position j, key S + t is new token t);
/// the new tokens' K and V are appended to `cache` in every layer, in token order.
/// Throws InputError for a token id outside [0, vocab_size), a negative position or, with learned
/// positions, one >= block_size; std::invalid_argument when positions or mask have the wrong
/// shape, a token is allowed no key, or the cache does not match the model.
template <class T>
Mat<T> forward_masked(const MiniGPT<T>& model, std::span<const int> tokens,
                      std::span<const int> positions, const AttentionMask& mask, KVCache<T>& cache);

}  // namespace kvlab
