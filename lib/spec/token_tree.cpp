#include "spec/token_tree.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {

TokenTree cartesian_tree(const std::vector<std::vector<int>>& candidates) {
  std::int64_t nodes = 0, level = 1;
  for (std::size_t d = 0; d < candidates.size(); ++d) {
    if (candidates[d].empty())
      throw InputError(fmt::format("candidates: head {} proposes no token", d));
    level *= static_cast<std::int64_t>(candidates[d].size());
    nodes += level;
    if (level > kMaxTreeNodes || nodes > kMaxTreeNodes)
      throw InputError(fmt::format("candidates: the tree would exceed {} nodes", kMaxTreeNodes));
  }
  TokenTree t;
  std::vector<int> frontier{-1};  // parents of the next level (−1 = the root)
  for (std::size_t d = 0; d < candidates.size(); ++d) {
    std::vector<int> next;
    for (int p : frontier)
      for (int tok : candidates[d]) {
        next.push_back(t.size());
        t.token.push_back(tok);
        t.parent.push_back(p);
        t.depth.push_back(static_cast<int>(d) + 1);
      }
    frontier = std::move(next);
  }
  return t;
}

std::vector<int> tree_leaves(const TokenTree& tree) {
  std::vector<char> has_child(static_cast<std::size_t>(tree.size()), 0);
  for (int p : tree.parent)
    if (p >= 0) has_child[static_cast<std::size_t>(p)] = 1;
  std::vector<int> leaves;
  for (int i = 0; i < tree.size(); ++i)
    if (!has_child[static_cast<std::size_t>(i)]) leaves.push_back(i);
  return leaves;
}

std::vector<int> tree_path(const TokenTree& tree, int node) {
  std::vector<int> path;
  for (int n = node; n >= 0; n = tree.parent[static_cast<std::size_t>(n)]) path.push_back(n);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<int> tree_positions(const TokenTree& tree, int prefix_len) {
  std::vector<int> pos(tree.depth.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = prefix_len - 1 + tree.depth[i];
  return pos;
}

AttentionMask tree_attention_mask(const TokenTree& tree, int prefix_len) {
  const int n = tree.size();
  AttentionMask m(n, prefix_len + n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < prefix_len; ++j) m.set(i, j, true);
    for (int a = i; a >= 0; a = tree.parent[static_cast<std::size_t>(a)]) m.set(i, prefix_len + a, true);
  }
  return m;
}

TokenTree prune_tree(const TokenTree& tree, const std::vector<double>& score, int keep) {
  const int n = tree.size();
  if (static_cast<int>(score.size()) != n)
    throw InputError(fmt::format("score: {} entries for a tree of {} nodes", score.size(), n));
  if (keep < 1 || keep > n)
    throw InputError(fmt::format("keep: must be in [1, {}] for this tree (got {})", n, keep));
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    if (score[ua] != score[ub]) return score[ua] > score[ub];
    return tree.depth[ua] < tree.depth[ub];
  });
  std::vector<char> kept(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < keep; ++i) kept[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;
  // Ancestor closure: a no-op for path-probability scores, kept so that any score gives a tree.
  for (int i = n - 1; i >= 0; --i)
    if (kept[static_cast<std::size_t>(i)] && tree.parent[static_cast<std::size_t>(i)] >= 0)
      kept[static_cast<std::size_t>(tree.parent[static_cast<std::size_t>(i)])] = 1;
  TokenTree out;
  std::vector<int> new_index(static_cast<std::size_t>(n), -1);
  for (int i = 0; i < n; ++i) {  // parents precede children in `tree`, so in `out` too
    const auto ui = static_cast<std::size_t>(i);
    if (!kept[ui]) continue;
    new_index[ui] = out.size();
    out.token.push_back(tree.token[ui]);
    out.parent.push_back(tree.parent[ui] < 0 ? -1 : new_index[static_cast<std::size_t>(tree.parent[ui])]);
    out.depth.push_back(tree.depth[ui]);
  }
  return out;
}

}  // namespace kvlab::spec
