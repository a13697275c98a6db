// tree-verify: a token tree verified in ONE target forward with a tree attention mask (node i at
// position P − 1 + depth, reading the prompt, its ancestors and itself; model/masked_forward.hpp)
// gives the logits of verifying each root-to-leaf path separately, and SpecInfer's multi-candidate
// rejection sampling over a drawn tree keeps the output law exactly the target's.
//
// Part 1 uses the target and draft mini-GPTs of spec-exact (V = 8, a 3-token prompt): head d
// proposes the --top-k most likely tokens of the draft d + 1 tokens ahead along its greedy chain
// (Medusa's shape); pruning keeps the --keep nodes of highest path probability (Medusa §2.3.3).
// Part 2 draws a tree of --depth levels with --width i.i.d. children per node; p and q at every
// node come from ONE masked forward each over the complete V-ary tree of that depth.
#include "tree_verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/numerics.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "model/gpt.hpp"
#include "model/masked_forward.hpp"
#include "spec/loop.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::tree_verify {
namespace {

constexpr char kSource[] = "000 §8.2, §8.3; SpecInfer arXiv 2305.09781 §4";
constexpr int kVocab = 8;
constexpr int kPromptLen = 3;
constexpr double kFalseAlarm = 1e-4;
constexpr int kMaxHeads = 4;
constexpr std::int64_t kMaxSamples = 2'000'000;
// Work budget: a sampled step costs about (tree nodes + depth + 1) draws of ~0.1 µs plus a fixed
// ~0.5 µs; samples × (nodes + 8) <= 2e7 is about 2 s here.
constexpr std::int64_t kWorkBudget = 20'000'000;
constexpr double u = unit_roundoff<double>();

ModelConfig target_config(Positional pos) { return small_spec_target(kVocab, pos); }

ModelConfig draft_config() { return small_spec_draft(kVocab); }

std::int64_t tree_nodes(int k, int n) {
  std::int64_t nodes = 0, level = 1;
  for (int d = 0; d < n; ++d) nodes += level *= k;
  return nodes;
}

std::int64_t ipow(int b, int e) {
  std::int64_t r = 1;
  for (int i = 0; i < e; ++i) r *= b;
  return r;
}

std::vector<double> row_of(const auto& m, Eigen::Index r) {
  std::vector<double> v(static_cast<std::size_t>(m.cols()));
  for (Eigen::Index c = 0; c < m.cols(); ++c) v[static_cast<std::size_t>(c)] = m(r, c);
  return v;
}

// The draft's next-token distribution after `seq` at temperature t (last row of a full forward).
template <class T>
std::vector<double> next_dist(const MiniGPT<T>& m, const std::vector<int>& seq, double t) {
  auto cache = m.make_cache(CacheKind::prealloc, static_cast<int>(seq.size()));
  const Mat<T> lg = m.forward(seq, 0, *cache);
  spec::SamplerConfig s;
  s.temperature = t;
  return spec::process_logits(row_of(lg, lg.rows() - 1), s);
}

// One target forward over prompt + flattened tree (the prompt prefilled first).
template <class T>
Mat<double> tree_forward(const MiniGPT<T>& m, const std::vector<int>& prompt, const spec::TokenTree& tree,
                         const TreeVerifyParts& parts, Mat<double>* root_row = nullptr) {
  const int p = static_cast<int>(prompt.size());
  auto cache = m.make_cache(CacheKind::prealloc, p + tree.size());
  const Mat<T> pre = m.forward(prompt, 0, *cache);
  if (root_row) *root_row = pre.bottomRows(1).template cast<double>();
  const AttentionMask mask = parts.mask ? parts.mask(tree, p) : spec::tree_attention_mask(tree, p);
  const std::vector<int> pos = parts.positions ? parts.positions(tree, p) : spec::tree_positions(tree, p);
  return forward_masked(m, tree.token, pos, mask, *cache).template cast<double>();
}

struct PathCompare {
  double max_diff = 0.0;
  double max_logit = 0.0;
  std::int64_t rows = 0, identical = 0, paths = 0;
};

// Every root-to-leaf path through its own causal forward, against the tree forward's rows.
template <class T>
PathCompare compare_paths(const MiniGPT<T>& m, const std::vector<int>& prompt,
                          const spec::TokenTree& tree, const Mat<double>& tree_logits) {
  PathCompare c;
  const int p = static_cast<int>(prompt.size());
  for (int leaf : spec::tree_leaves(tree)) {
    const auto path = spec::tree_path(tree, leaf);
    std::vector<int> seq = prompt;
    for (int n : path) seq.push_back(tree.token[static_cast<std::size_t>(n)]);
    auto cache = m.make_cache(CacheKind::prealloc, static_cast<int>(seq.size()));
    const Mat<double> lg = m.forward(seq, 0, *cache).template cast<double>();
    ++c.paths;
    for (std::size_t d = 0; d < path.size(); ++d) {
      const auto node = static_cast<Eigen::Index>(path[d]);
      const auto r = static_cast<Eigen::Index>(p + static_cast<int>(d));  // logits after node d
      const double diff = max_abs(lg.row(r) - tree_logits.row(node));
      c.max_diff = nan_max(c.max_diff, diff);
      c.max_logit = std::max(c.max_logit, max_abs(lg.row(r)));
      ++c.rows;
      c.identical += diff == 0.0 ? 1 : 0;
    }
  }
  return c;
}

// p̃ (or q̃) at every path of length 0 .. depth after the prompt, from ONE masked forward over the
// complete V-ary tree of that depth; row 0 is the empty path, row 1 + i is cartesian node i.
template <class T>
std::vector<std::vector<double>> complete_tree_table(const MiniGPT<T>& m, const std::vector<int>& prompt,
                                                     int depth, double temperature,
                                                     const TreeVerifyParts& parts) {
  std::vector<int> all(kVocab);
  std::iota(all.begin(), all.end(), 0);
  const spec::TokenTree tree = spec::cartesian_tree(std::vector<std::vector<int>>(static_cast<std::size_t>(depth), all));
  Mat<double> root;
  const Mat<double> lg = tree_forward(m, prompt, tree, parts, &root);
  spec::SamplerConfig s;
  s.temperature = temperature;
  std::vector<std::vector<double>> table;
  table.push_back(spec::process_logits(row_of(root, 0), s));
  for (Eigen::Index i = 0; i < lg.rows(); ++i) table.push_back(spec::process_logits(row_of(lg, i), s));
  return table;
}

// Row of complete_tree_table for a path: 1 + Σ_{e=1}^{ℓ−1} V^e + (path read in base V).
std::size_t table_index(std::span<const int> path) {
  if (path.empty()) return 0;
  std::size_t offset = 1, level = 1, num = 0;
  for (std::size_t e = 1; e < path.size(); ++e) offset += level *= kVocab;
  for (int t : path) num = num * kVocab + static_cast<std::size_t>(t);
  return offset + num;
}

double tv(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] - b[i]);
  return 0.5 * s;
}

// The heads' candidates along the draft's greedy chain: per head, the --top-k tokens of the draft's
// distribution and their probabilities.
struct Candidates {
  std::vector<std::vector<int>> tokens;
  std::vector<std::vector<double>> prob;
};

template <class T>
Candidates head_candidates(const MiniGPT<T>& draft, const std::vector<int>& prompt, const TreeVerifyOptions& o) {
  Candidates c;
  std::vector<int> seq = prompt;
  for (int d = 0; d < o.heads; ++d) {
    const auto q = next_dist(draft, seq, o.temperature);
    std::vector<int> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return q[static_cast<std::size_t>(a)] > q[static_cast<std::size_t>(b)]; });
    order.resize(static_cast<std::size_t>(o.top_k));
    std::vector<double> pr;
    for (int t : order) pr.push_back(q[static_cast<std::size_t>(t)]);
    c.tokens.push_back(order);
    c.prob.push_back(pr);
    seq.push_back(order[0]);
  }
  return c;
}

// Each node's path probability: the product of its heads' probabilities along the path.
std::vector<double> path_probability(const spec::TokenTree& tree, const Candidates& c) {
  std::vector<double> score(static_cast<std::size_t>(tree.size()));
  for (int i = 0; i < tree.size(); ++i) {
    const auto ui = static_cast<std::size_t>(i);
    const auto d = static_cast<std::size_t>(tree.depth[ui] - 1);
    const auto& cd = c.tokens[d];
    const auto rank = static_cast<std::size_t>(std::find(cd.begin(), cd.end(), tree.token[ui]) - cd.begin());
    score[ui] = tree.parent[ui] < 0 ? c.prob[d][rank] : score[static_cast<std::size_t>(tree.parent[ui])] * c.prob[d][rank];
  }
  return score;
}

double sum(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s;
}

// Part 1: the static tree of the heads' candidates and its pruned subtree, each through one
// masked forward of each target, against a causal forward per path.
template <class T>
void measure_trees(TreeVerifyMeasured& m, const MiniGPT<T>& target, const MiniGPT<T>& target_rope,
                   const MiniGPT<T>& draft, const TreeVerifyParts& parts) {
  const TreeVerifyOptions& o = m.options;
  const Candidates cand = head_candidates(draft, m.prompt, o);
  const spec::TokenTree full = spec::cartesian_tree(cand.tokens);
  const std::vector<double> score = path_probability(full, cand);
  const spec::TokenTree pruned = spec::prune_tree(full, score, o.keep);
  m.full_paths = static_cast<std::int64_t>(spec::tree_leaves(full).size());
  m.full_nodes = full.size();
  m.pruned_paths = static_cast<std::int64_t>(spec::tree_leaves(pruned).size());
  m.pruned_nodes = pruned.size();
  const double full_mass = sum(score), kept_mass = sum(path_probability(pruned, cand));
  const struct {
    const char* name;
    const MiniGPT<T>* model;
    const char* key;
  } targets[] = {{"learned positions", &target, "learned"}, {"RoPE", &target_rope, "rope"}};
  for (const auto& t : targets)
    for (const auto* tree : {&full, &pruned}) {
      const PathCompare c = compare_paths(*t.model, m.prompt, *tree, tree_forward(*t.model, m.prompt, *tree, parts));
      m.forwards.push_back({.target = t.name, .key = t.key, .tree = tree == &full ? "full" : "pruned",
                            .nodes = tree->size(), .paths = c.paths, .mass = tree == &full ? full_mass : kept_mass,
                            .rows = c.rows, .identical = c.identical, .max_diff = c.max_diff,
                            .bound = rounding_bound(t.model->config(), m.dtype, c.max_logit)});
    }
}

// Part 2: SpecInfer's multi-candidate rejection sampling on the learned-position target: the law
// of the first depth + 1 tokens (the step, then plain target sampling) in closed form over all
// V^(depth+1) sequences, with and without the residual carried between siblings, and --samples
// sampled steps.
template <class T>
void measure_sampling(TreeVerifyMeasured& m, const MiniGPT<T>& target, const MiniGPT<T>& draft,
                      const TreeVerifyParts& parts) {
  const TreeVerifyOptions& o = m.options;
  const auto pt = complete_tree_table(target, m.prompt, o.depth, o.temperature, parts);
  const auto qt = complete_tree_table(draft, m.prompt, o.depth, o.temperature, parts);
  const spec::NextDist p_at = [&](std::span<const int> path) { return spec::Dist(pt[table_index(path)]); };
  const spec::NextDist q_at = [&](std::span<const int> path) { return spec::Dist(qt[table_index(path)]); };
  const std::vector<int> branching(static_cast<std::size_t>(o.depth), o.width);
  const int n_tokens = o.depth + 1;
  const auto law_target = spec::sequence_law(p_at, kVocab, n_tokens);
  spec::MultiCandidateRule naive = parts.rule;
  naive.carry_residual = false;
  m.tv_law = tv(spec::tree_step_law(p_at, q_at, branching, kVocab, n_tokens, parts.rule), law_target);
  m.tv_naive_law = tv(spec::tree_step_law(p_at, q_at, branching, kVocab, n_tokens, naive), law_target);
  for (const auto* table : {&pt, &qt})
    for (const auto& d : *table) m.sum_deviation = nan_max(m.sum_deviation, std::abs(spec::sum_deviation(d)));
  for (double x : law_target) m.support += x > 0.0 ? 1 : 0;
  // Draw the tree, verify it, continue with the target to depth + 1 tokens.
  std::vector<std::int64_t> counts(law_target.size(), 0);
  Rng rng(spec::derive_seed(m.seed, 10));
  for (std::int64_t i = 0; i < o.samples; ++i) {
    const spec::TokenTree tree = spec::draw_token_tree(q_at, branching, rng);
    std::vector<int> seq = spec::verify_token_tree(tree, p_at, q_at, rng, parts.rule);
    m.emitted += static_cast<std::int64_t>(seq.size());
    m.accepted += static_cast<std::int64_t>(seq.size()) - 1;
    while (static_cast<int>(seq.size()) < n_tokens) seq.push_back(static_cast<int>(rng.categorical(p_at(seq))));
    std::size_t idx = 0;
    for (int k = 0; k < n_tokens; ++k) idx = idx * kVocab + static_cast<std::size_t>(seq[static_cast<std::size_t>(k)]);
    ++counts[idx];
  }
  std::vector<double> emp(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) emp[i] = static_cast<double>(counts[i]) / static_cast<double>(o.samples);
  m.tv_empirical = tv(emp, law_target);
}

template <class T>
TreeVerifyMeasured measure_impl(const TreeVerifyOptions& o, const RunContext& ctx, const TreeVerifyParts& parts) {
  TreeVerifyMeasured m{.options = o, .seed = ctx.seed, .dtype = ctx.dtype,
                       .prompt = random_tokens(spec::derive_seed(ctx.seed, 100), kPromptLen, kVocab)};
  const MiniGPT<T> target(target_config(Positional::learned), ctx.seed);
  const MiniGPT<T> target_rope(target_config(Positional::rope), ctx.seed);
  const MiniGPT<T> draft(draft_config(), spec::derive_seed(ctx.seed, 1));
  measure_trees(m, target, target_rope, draft, parts);
  measure_sampling(m, target, draft, parts);
  return m;
}

void present(const TreeVerifyMeasured& m, Result& r) {
  const TreeVerifyOptions& o = m.options;
  Table trees{"tree attention: one forward per tree against one forward per path",
              {"target", "tree", "nodes (tokens in the one forward)", "paths (forwards if verified one by one)",
               "Σ path probability (E[accepted], Medusa's estimate)", "rows compared", "bit-identical", "max |Δ logit|",
               "bound"},
              {}};
  for (const TreeForward& f : m.forwards) {
    trees.rows.push_back({f.target, f.tree, f.nodes, f.paths, f.mass, f.rows, f.identical, f.max_diff, f.bound});
    r.metric(fmt::format("max_abs_logit_diff_{}_{}", f.key, f.tree), f.max_diff);
  }
  r.metric_exact("full_tree_paths", static_cast<std::uint64_t>(m.full_paths));
  r.metric_exact("full_tree_nodes", static_cast<std::uint64_t>(m.full_nodes));
  r.metric_exact("pruned_tree_nodes", static_cast<std::uint64_t>(m.pruned_nodes));
  r.metric_exact("pruned_tree_paths", static_cast<std::uint64_t>(m.pruned_paths));
  r.tables.push_back(std::move(trees));
  const double beta = tv_bound_bhc(m.support, o.samples, kFalseAlarm), n = static_cast<double>(o.samples);
  r.tables.push_back({"multi-candidate rejection sampling (SpecInfer) over a drawn tree",
                      {"verifier", "TV(closed-form law, target law)", "TV(empirical, target law)", "bound β",
                       "tokens per step (mean)"},
                      {{std::string("residual carried between siblings (SpecInfer)"), m.tv_law, m.tv_empirical, beta,
                        static_cast<double>(m.emitted) / n},
                       {std::string("every sibling against the original p (not exact)"), m.tv_naive_law,
                        std::string("—"), beta, std::string("—")}}});
  r.metric("tv_tree_law", m.tv_law);
  r.metric("tv_tree_empirical", m.tv_empirical);
  r.metric("tv_bound", beta);
  r.metric("tv_naive_law", m.tv_naive_law);
  r.metric("tokens_per_step", static_cast<double>(m.emitted) / n);
  r.metric("accepted_per_step", static_cast<double>(m.accepted) / n);
  const double full_mass = m.forwards.empty() ? 0.0 : m.forwards[0].mass;
  const double kept_mass = m.forwards.size() < 2 ? 0.0 : m.forwards[1].mass;
  r.notes.push_back(fmt::format(
      "Pruning: the {}-node static tree keeps {} nodes ({} paths) holding {:.3f} of its {:.3f} expected accepted "
      "tokens (Σ of path probabilities, Medusa's estimate with the draft's probabilities standing in for the heads' "
      "accuracies). 000 §8.2 says the 5^N paths are pruned \"with typical acceptance\"; in Medusa the tree is pruned "
      "offline (§2.3.3) and typical acceptance decides at run time which path is accepted.",
      m.full_nodes, m.pruned_nodes, m.pruned_paths, kept_mass, full_mass));
  r.notes.push_back(fmt::format(
      "seed {}: targets MiniGPT(seed) (learned positions / RoPE), draft MiniGPT(SplitMix64(seed, 1)); prompt [{}, {}, "
      "{}]; heads = the draft's top-{} at temperature {} along its greedy chain.",
      m.seed, m.prompt[0], m.prompt[1], m.prompt[2], o.top_k, o.temperature));
}

// Relations between the options the table cannot state: --keep at most the tree's nodes, the work
// budget, and enough samples for the TV bound to be below TV's range.
void constraints(const TreeVerifyOptions& o) {
  const std::int64_t nodes = tree_nodes(o.top_k, o.heads);
  if (o.keep < 1 || o.keep > nodes)
    throw InputError(fmt::format("--keep: must be in [1, {}], the nodes of the top-{} × {}-head tree (got {})", nodes,
                                 o.top_k, o.heads, o.keep));
  const double work = static_cast<double>(o.samples) * static_cast<double>(tree_nodes(o.width, o.depth) + 8);
  if (work > static_cast<double>(kWorkBudget))
    throw InputError(fmt::format(
        "--samples, --width, --depth: --samples × (tree nodes + 8) = {:.3g} is over the work budget of {} (about 2 s "
        "here)",
        work, kWorkBudget));
  const double l = static_cast<double>(ipow(kVocab, o.depth + 1)) * std::log(2.0) + std::log(1.0 / kFalseAlarm);
  const auto min_n = static_cast<std::int64_t>(std::floor(l / 2.0)) + 1;  // 0.5 sqrt(2L/n) < 1
  if (o.samples < min_n)
    throw InputError(fmt::format(
        "--samples: must be at least {} for --depth {} (got {}): below, the TV bound covers TV's whole range and the "
        "check could not fail",
        min_n, o.depth, o.samples));
}

}  // namespace

TreeVerifyMeasured measure_tree_verify(const TreeVerifyOptions& o, const RunContext& ctx, const TreeVerifyParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts); });
}

std::vector<Expectation> judge_tree_verify(const TreeVerifyMeasured& m) {
  const TreeVerifyOptions& o = m.options;
  std::vector<Expectation> rows{
      {fmt::format("root-to-leaf paths of the top-{} static tree, N = {} heads", o.top_k, o.heads), "000 §8.2",
       "paths", static_cast<double>(ipow(o.top_k, o.heads)), 0.0,
       fmt::format("exact: a count (formula {}^{})", o.top_k, o.heads), static_cast<double>(m.full_paths),
       std::nullopt, "", "每 head 取 top-5，总 5^N 条路径 (top-5 per head, 5^N paths in total)"}};
  for (std::size_t i = 0; i + 1 < m.forwards.size(); i += 2) {  // per target: full, then pruned
    const TreeForward &full = m.forwards[i], &pruned = m.forwards[i + 1];
    const double worst = nan_max(nan_max(0.0, full.max_diff / full.bound), pruned.max_diff / pruned.bound);
    rows.push_back({fmt::format("tree forward vs per-path forwards, max |Δ logit| / bound, {} target (full and "
                                "pruned tree)",
                                full.target),
                    "000 §8.2", "× bound", 0.0, 1.0,
                    fmt::format("float rounding: bound 2·n·u·max|logit| (n = reduction length, u = {:.3g}), as "
                                "incremental-vs-full; up to {:.3g} here",
                                unit_roundoff(m.dtype), std::max({0.0, full.bound, pruned.bound})),
                    worst, std::nullopt, ""});
  }
  // First order: one rejection step's law is within (2V + 8)u of p per entry (spec-residual); a
  // node tries `width` children plus the final draw, levels depth + 1, entries V per node; plus the
  // distributions' own |Σ − 1| at every level.
  const int n_tokens = o.depth + 1;
  const double law_tol = 0.5 * n_tokens * (o.width + 1) * (2.0 * kVocab + 8.0) * kVocab * u +
                         n_tokens * (o.width + 1) * 2.0 * m.sum_deviation;
  rows.push_back({fmt::format("multi-candidate rejection sampling, TV(closed-form law, target law), {} levels × {} "
                              "i.i.d. children, V^{} sequences",
                              o.depth, o.width, n_tokens),
                  "SpecInfer §4", "", 0.0, law_tol,
                  "float64 rounding: ½·(depth + 1)(width + 1)(2V + 8)·V·u plus the distributions' |Σ − 1| (first "
                  "order)",
                  m.tv_law, std::nullopt, ""});
  rows.push_back({"multi-candidate rejection sampling, TV(empirical of sampled tree steps, target law)",
                  "SpecInfer §4", "", 0.0, tv_bound_bhc(m.support, o.samples, kFalseAlarm),
                  fmt::format("Bretagnolle–Huber–Carol, any n: P(TV ≥ β) ≤ 2^M e^(−2nβ²), M = {} sequences, n = {}, "
                              "false alarm {:g}",
                              m.support, o.samples, kFalseAlarm),
                  m.tv_empirical, std::nullopt, ""});
  return rows;
}

const CheckDef<TreeVerifyOptions, TreeVerifyMeasured>& tree_verify_check() {
  using O = TreeVerifyOptions;
  static const CheckDef<O, TreeVerifyMeasured> def{
      .spec = {.name = "tree-verify",
               .order = 260,
               .source = kSource,
               .summary = "tree attention = per-path verification (5^N paths); multi-candidate sampling is exact",
               .claim_zh = "树注意力 = 逐路径验证（5^N 条路径）；多候选采样仍是无损的",
               .description =
                   "A Medusa-style static tree (top --top-k of each of --heads heads) and its pruned\n"
                   "subtree (--keep nodes) through ONE masked target forward, against a causal forward per\n"
                   "root-to-leaf path (learned and RoPE targets); then SpecInfer's multi-candidate\n"
                   "rejection sampling over a drawn tree (--depth, --width): closed-form law = target law,\n"
                   "and --samples sampled steps within the Bretagnolle–Huber–Carol bound.",
               .derivation =
                   "Top-k from each of N heads, all combinations: k^N root-to-leaf paths (5^4 = 625),\n"
                   "Σ_{d=1..N} k^d nodes (780). A node's logits depend on the keys it attends to and its\n"
                   "position: reading prompt + ancestors at position P − 1 + depth, it computes exactly\n"
                   "the last row of a causal forward over prompt + its path.\n"
                   "Multi-candidate: children x_i ~ q i.i.d.; try i accepts with min(1, p_{i−1}/q),\n"
                   "p_i = norm(max(0, p_{i−1} − q)): P(X = x) = Σ_i R_{i−1} min(p_{i−1}, q)(x) + R_b p_b(x) = p(x)\n"
                   "(min(a, c) + max(0, a − c) = a telescopes); by induction over depth the sequence law is\n"
                   "the target's. — 000 §8.2-8.3; SpecInfer arXiv 2305.09781 §4",
               .traits = {.dtype = true,
                          .weights_refusal = "it enumerates complete token trees over a vocabulary of 8 and compares "
                                             "learned and RoPE targets of one seed; spec-exact runs the distribution "
                                             "test on a file pair"}},
      .options = {{"--heads", &O::heads, Allowed::integers(1, kMaxHeads), "Medusa heads N (tree depth), 1-4"},
                  {"--top-k", &O::top_k, Allowed::integers(1, kVocab), "Candidates per head, 1-8"},
                  {"--keep", &O::keep, Allowed::integers(1, tree_nodes(kVocab, kMaxHeads)),
                   "Nodes kept by pruning, at most the tree's"},
                  {"--depth", &O::depth, Allowed::integers(1, 2), "Levels of the sampled tree, 1-2"},
                  {"--width", &O::width, Allowed::integers(1, 4), "Children drawn per node, 1-4"},
                  {"--samples", &O::samples, Allowed::integers(1, kMaxSamples), "Sampled tree steps"},
                  {"--temperature", &O::temperature, Allowed::reals(0.01, 10.0), "Sampling temperature"}},
      .constraints = constraints,
      .measure = [](const O& o, const RunContext& ctx) { return measure_tree_verify(o, ctx); },
      .judge = judge_tree_verify,
      .present = present,
      .claim = [](const TreeVerifyMeasured& m) {
        return fmt::format(
            "A token tree flattened into ONE target forward with a tree attention mask (each node sees the prompt and "
            "its ancestors, position = depth) gives the logits of verifying every root-to-leaf path separately; the "
            "top-{} × {}-head static tree has {}^{} paths. Multi-candidate rejection sampling over a drawn tree keeps "
            "the output law exactly the target's.",
            m.options.top_k, m.options.heads, m.options.top_k, m.options.heads);
      }};
  return def;
}

Result run_tree_verify(const TreeVerifyOptions& o, const RunContext& ctx, const TreeVerifyParts& parts) {
  return run_check(tree_verify_check(), o, ctx, [&parts](const TreeVerifyOptions& opts, const RunContext& c) {
    return measure_tree_verify(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(tree_verify_check);

}  // namespace kvlab::checks::tree_verify
