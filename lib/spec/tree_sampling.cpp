#include "spec/tree_sampling.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::spec {
namespace {

std::int64_t checked_outcomes(int vocab, int n_tokens) {
  if (vocab < 1 || n_tokens < 1)
    throw InputError(fmt::format("n_tokens: vocab {} and n_tokens {} must be >= 1", vocab, n_tokens));
  std::int64_t m = 1;
  for (int i = 0; i < n_tokens; ++i) {
    m *= vocab;
    if (m > (std::int64_t{1} << 20))
      throw InputError(fmt::format("n_tokens: V^n = {}^{} exceeds 2^20 outcomes", vocab, n_tokens));
  }
  return m;
}

void check_branching(std::span<const int> branching) {
  if (branching.empty()) throw InputError("branching: the tree needs at least one level");
  for (int b : branching)
    if (b < 1) throw InputError(fmt::format("branching: every width must be >= 1 (got {})", b));
}

// Target continuation: law of the next r tokens after `path`.
std::vector<double> target_law(const NextDist& target, std::vector<int>& path, int vocab, int r) {
  if (r == 0) return {1.0};
  const Dist p = target(path);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(vocab) * 8);
  for (int x = 0; x < vocab; ++x) {
    path.push_back(x);
    const auto sub = target_law(target, path, vocab, r - 1);
    path.pop_back();
    for (double s : sub) out.push_back(p[static_cast<std::size_t>(x)] * s);
  }
  return out;
}

// Law of the next r tokens from an accepted node at `depth` (its children not yet drawn).
std::vector<double> node_law(const NextDist& target, const NextDist& draft,
                             std::span<const int> branching, std::vector<int>& path, int depth,
                             int vocab, int r, const MultiCandidateRule& rule) {
  if (r == 0) return {1.0};
  if (depth == static_cast<int>(branching.size())) return target_law(target, path, vocab, r);
  const Dist p = target(path);
  const Dist q = draft(path);
  const auto v = static_cast<std::size_t>(vocab);
  std::vector<double> accepted(v, 0.0), p_cur(p.begin(), p.end());
  double reach = 1.0;  // P(every earlier child rejected)
  for (int i = 0; i < branching[static_cast<std::size_t>(depth)]; ++i) {
    double reject = 0.0;
    for (std::size_t x = 0; x < v; ++x) {
      const double a = rule.accept(p_cur, q, x);
      accepted[x] += reach * q[x] * a;
      reject += q[x] * (1.0 - a);
    }
    reach *= reject;
    if (rule.carry_residual) p_cur = rule.residual(p_cur, q);
  }
  const std::vector<double> last = rule.carry_residual ? p_cur : rule.residual(p, q);
  std::vector<double> out;
  for (int x = 0; x < vocab; ++x) {
    path.push_back(x);
    const auto below = node_law(target, draft, branching, path, depth + 1, vocab, r - 1, rule);
    const auto plain = target_law(target, path, vocab, r - 1);
    path.pop_back();
    const auto ux = static_cast<std::size_t>(x);
    for (std::size_t s = 0; s < below.size(); ++s)
      out.push_back(accepted[ux] * below[s] + reach * last[ux] * plain[s]);
  }
  return out;
}

}  // namespace

TokenTree draw_token_tree(const NextDist& draft, std::span<const int> branching, Rng& rng) {
  check_branching(branching);
  std::int64_t level = 1, nodes = 0;
  for (int b : branching) {
    level *= b;
    nodes += level;
    if (nodes > kMaxTreeNodes)
      throw InputError(fmt::format("branching: the tree would exceed {} nodes", kMaxTreeNodes));
  }
  TokenTree t;
  std::vector<int> frontier{-1};
  std::vector<int> path;
  for (std::size_t d = 0; d < branching.size(); ++d) {
    std::vector<int> next;
    for (int parent : frontier) {
      path.clear();
      if (parent >= 0)
        for (int n : tree_path(t, parent)) path.push_back(t.token[static_cast<std::size_t>(n)]);
      const Dist q = draft(path);
      for (int i = 0; i < branching[d]; ++i) {
        next.push_back(t.size());
        t.token.push_back(static_cast<int>(rng.categorical(q)));
        t.parent.push_back(parent);
        t.depth.push_back(static_cast<int>(d) + 1);
      }
    }
    frontier = std::move(next);
  }
  return t;
}

std::vector<int> verify_token_tree(const TokenTree& tree, const NextDist& target,
                                   const NextDist& draft, Rng& rng, const MultiCandidateRule& rule) {
  std::vector<std::vector<int>> children(static_cast<std::size_t>(tree.size()) + 1);  // [0] = root
  for (int i = 0; i < tree.size(); ++i)
    children[static_cast<std::size_t>(tree.parent[static_cast<std::size_t>(i)] + 1)].push_back(i);
  std::vector<int> out;
  int node = -1;
  for (;;) {
    const Dist p = target(out);
    const auto& kids = children[static_cast<std::size_t>(node + 1)];
    if (kids.empty()) {  // a leaf: the bonus token from p
      out.push_back(static_cast<int>(rng.categorical(p)));
      return out;
    }
    const Dist q = draft(out);
    std::vector<double> p_cur(p.begin(), p.end());
    int accepted = -1;
    for (int c : kids) {
      const auto x = static_cast<std::size_t>(tree.token[static_cast<std::size_t>(c)]);
      if (rng.uniform() < rule.accept(p_cur, q, x)) {
        accepted = c;
        break;
      }
      if (rule.carry_residual) p_cur = rule.residual(p_cur, q);
    }
    if (accepted < 0) {
      const std::vector<double> last = rule.carry_residual ? p_cur : rule.residual(p, q);
      out.push_back(static_cast<int>(rng.categorical(last)));
      return out;
    }
    out.push_back(tree.token[static_cast<std::size_t>(accepted)]);
    node = accepted;
  }
}

std::vector<double> tree_step_law(const NextDist& target, const NextDist& draft,
                                  std::span<const int> branching, int vocab, int n_tokens,
                                  const MultiCandidateRule& rule) {
  check_branching(branching);
  checked_outcomes(vocab, n_tokens);
  std::vector<int> path;
  return node_law(target, draft, branching, path, 0, vocab, n_tokens, rule);
}

std::vector<double> sequence_law(const NextDist& target, int vocab, int n_tokens) {
  checked_outcomes(vocab, n_tokens);
  std::vector<int> path;
  return target_law(target, path, vocab, n_tokens);
}

}  // namespace kvlab::spec
