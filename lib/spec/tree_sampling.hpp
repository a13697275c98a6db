// Multi-candidate speculative sampling over a token tree (SpecInfer's multi-step speculative
// sampling, Miao et al., arXiv:2305.09781, §4; 000 §8.2-8.3):
// the tree is verified from the root down; at each reached node the children are tried one after
// another with rejection sampling, and after a rejected child the next one is checked against
// the residual norm(max(0, p − q)) instead of p. When every child is rejected the step emits a
// token from the last residual; at a leaf (or a node whose child was accepted all the way down)
// the bonus token comes from p.
//
// Exactness (SpecInfer §4 proves it) needs the children of a node to be drawn i.i.d. from the
// draft's q at that node: then attempt i emits x with probability R_{i−1}·min(p_{i−1}, q)(x),
// R_i = R_{i−1}·Σ max(0, p_{i−1} − q), p_i = norm(max(0, p_{i−1} − q)), and
//   Σ_i R_{i−1} min(p_{i−1}, q) + R_b p_b = p  (telescoping: min(a, c) + max(0, a − c) = a),
// so the next token is p-distributed whatever happens below; by induction over depth the whole
// emitted sequence is distributed as the target's.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/rng.hpp"
#include "spec/acceptance.hpp"
#include "spec/step_law.hpp"
#include "spec/token_tree.hpp"

namespace kvlab::spec {

/// The next-token distribution (shape [V]) after the fixed prefix followed by `path` (token ids);
/// the returned view must stay valid while the caller uses it (e.g. a row of a precomputed table).
using NextDist = std::function<Dist(std::span<const int> path)>;

/// The per-node rule. SpecInfer's is the default; carry_residual = false verifies every sibling
/// against the original p (and draws the replacement from residual(p, q)), which is not exact.
struct MultiCandidateRule {
  AcceptRule accept = exact_accept_probability;
  ResidualFn residual = residual_distribution;
  bool carry_residual = true;
};

/// Draws a token tree: every node of depth d (the root for d = 0) gets branching[d] children drawn
/// i.i.d. from draft(path to it); depth = branching.size(). Breadth-first. Throws InputError for
/// an empty branching, a width < 1, or more than kMaxTreeNodes nodes.
TokenTree draw_token_tree(const NextDist& draft, std::span<const int> branching, Rng& rng);

/// Verifies `tree` with multi-candidate rejection sampling (one uniform per tried child, one
/// categorical draw for the final token); returns the emitted tokens: the accepted path, then the
/// replacement or bonus token (1 .. depth + 1 tokens). target and draft give p and q at each node.
std::vector<int> verify_token_tree(const TokenTree& tree, const NextDist& target,
                                   const NextDist& draft, Rng& rng,
                                   const MultiCandidateRule& rule = {});

/// The exact law of the first n_tokens tokens when one tree step (tree drawn as draw_token_tree
/// does, verified as verify_token_tree does, rule `rule`) is followed by plain sampling from the
/// target: shape [V^n_tokens], sequence index Σ x_i V^(n−1−i) (first token most significant).
/// Equal to sequence_law(target, ...) when the rule is exact. Throws InputError for n_tokens < 1,
/// V^n_tokens > 2^20, or a width < 1.
std::vector<double> tree_step_law(const NextDist& target, const NextDist& draft,
                                  std::span<const int> branching, int vocab, int n_tokens,
                                  const MultiCandidateRule& rule = {});

/// The law of the first n_tokens tokens sampled from the target alone (same shape and index).
std::vector<double> sequence_law(const NextDist& target, int vocab, int n_tokens);

}  // namespace kvlab::spec
