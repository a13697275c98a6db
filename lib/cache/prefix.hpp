// Prefix caching, the hashing half (000 §3.4; vLLM, arXiv 2309.06180 §4.4, and its automatic
// prefix caching): a full block of block_size token ids is named by a hash of those ids chained
// with the hash of the block before it, so one hash names the whole prefix up to the block's end.
// Two blocks with the same tokens after different prefixes get different hashes (their K and V
// differ: attention saw different tokens before them).
//
// The block pool (cache/paged.hpp) keeps hash -> physical block; this file has the hash and a
// plain reference for what an ideal prefix cache can reuse, which the checks compare against.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvlab {

/// Hash of the empty prefix: the parent of a sequence's first block.
inline constexpr std::uint64_t kPrefixRootHash = 0xcbf29ce484222325ULL;  // FNV-1a offset basis

/// Hash of one block: 64-bit FNV-1a over the parent's hash (8 bytes, little-endian) and the
/// block's token ids (4 bytes each, little-endian). Fixed arithmetic, so the same on every
/// platform. With `chain_parent` false the parent is left out (a deliberate bug the unit tests
/// use: then equal blocks after different prefixes collide).
std::uint64_t prefix_block_hash(std::uint64_t parent, std::span<const int> tokens,
                                bool chain_parent = true);

/// Length of the longest common prefix of a and b (token ids).
int common_prefix(std::span<const int> a, std::span<const int> b);

/// Tokens of `prompt` an ideal prefix cache can reuse, computed on token lists alone (no hashes,
/// no pool): the longest common prefix of `prompt` with any of `cached`, where cached[i] is the
/// i-th earlier sequence cut to its full blocks (⌊len/block_size⌋·block_size tokens), capped at
/// prompt.size() − 1 because the last prompt token must be computed to give the next token's
/// logits. Throws std::invalid_argument when block_size < 1.
int reference_prefix_reuse(std::span<const int> prompt,
                           const std::vector<std::vector<int>>& cached, int block_size);

}  // namespace kvlab
