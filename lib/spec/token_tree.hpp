// Token trees for tree-based speculative decoding (000 §8.2 Medusa's static tree; SpecInfer,
// Miao et al., arXiv:2305.09781, §3-4): the candidate continuations of one step, stored flat so
// that the target verifies all of them in one forward with a tree attention mask.
//
// Nodes are stored parents before children (breadth-first for the trees built here). The root is
// the last token already in the sequence and is not stored: a node of depth 1 is a candidate for
// the next token. After a prompt of P tokens, a depth-d node sits at position P − 1 + d (tree
// positions = depth, not the flat index), and reads the P prompt keys, its ancestors and itself.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/masked.hpp"

namespace kvlab::spec {

/// A token tree, shape [nodes] per field.
struct TokenTree {
  std::vector<int> token;   ///< token id of each node
  std::vector<int> parent;  ///< parent node index, −1 for a child of the root
  std::vector<int> depth;   ///< 1 for a child of the root
  int size() const { return static_cast<int>(token.size()); }
};

/// Medusa's static tree from per-head candidates (000 §8.2): head d (0-based) proposes
/// candidates[d] for the token d + 1 steps ahead, and every depth-d node gets all of
/// candidates[d] as children, so the tree holds Π_d |candidates[d]| root-to-leaf paths
/// (top-5 from each of N heads: 5^N) and Σ_d Π_{e<=d} |candidates[e]| nodes. Breadth-first.
/// Throws InputError when a level is empty or the tree would exceed kMaxTreeNodes nodes.
TokenTree cartesian_tree(const std::vector<std::vector<int>>& candidates);

/// Largest tree kvlab builds: 2^20 nodes.
inline constexpr std::int64_t kMaxTreeNodes = std::int64_t{1} << 20;

/// The nodes without children (each ends one root-to-leaf path), in index order.
std::vector<int> tree_leaves(const TokenTree& tree);

/// The node indices from the root's child down to `node` (shape [depth(node)]).
std::vector<int> tree_path(const TokenTree& tree, int node);

/// Tree positions after a prefix of `prefix_len` tokens: prefix_len − 1 + depth (shape [nodes]).
std::vector<int> tree_positions(const TokenTree& tree, int prefix_len);

/// The tree attention mask [nodes, prefix_len + nodes]: node i reads every prefix key, its
/// ancestors and itself (key prefix_len + j for node j), nothing else — not its siblings, not
/// other branches.
AttentionMask tree_attention_mask(const TokenTree& tree, int prefix_len);

/// The subtree of the `keep` nodes with the highest `score` (shape [nodes]; a path probability,
/// so a node never scores above its parent), ties broken by lower depth, then lower index: the
/// kept set then holds every kept node's ancestors. Medusa builds its sparse tree this way from
/// the heads' top-k accuracies (arXiv:2401.10774, §2.3.3). Re-indexed, parents before children.
/// Throws InputError unless 1 <= keep <= nodes and score has one entry per node.
TokenTree prune_tree(const TokenTree& tree, const std::vector<double>& score, int keep);

}  // namespace kvlab::spec
