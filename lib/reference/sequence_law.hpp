// The exact law of the next n tokens of an autoregressive sampler, by enumeration, and the cells a
// sampler's draws are judged on: the oracle the speculative-decoding checks (spec-exact,
// spec-sampler) compare the loop's output against. The model enters through a callback that gives
// the next-token law after a prefix, so the enumeration, the product of the conditional
// probabilities and the pooling are written once whatever computes the logits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlab::reference {

namespace detail {
template <class NextLaw>
void enumerate_sequences(NextLaw& next_law, int vocab, std::size_t prompt_len, std::vector<int>& seq, int left,
                         double prob, std::vector<double>& law) {
  if (left == 0) {
    std::size_t i = 0;
    for (std::size_t j = prompt_len; j < seq.size(); ++j)
      i = i * static_cast<std::size_t>(vocab) + static_cast<std::size_t>(seq[j]);
    law[i] = prob;
    return;
  }
  const std::vector<double> p = next_law(static_cast<const std::vector<int>&>(seq));
  for (int x = 0; x < vocab; ++x) {
    if (p[static_cast<std::size_t>(x)] == 0.0) continue;  // its whole subtree has probability 0
    seq.push_back(x);
    enumerate_sequences(next_law, vocab, prompt_len, seq, left - 1, prob * p[static_cast<std::size_t>(x)], law);
    seq.pop_back();
  }
}
}  // namespace detail

/// P(x_1 .. x_n | prompt) = Π_i p(x_i | prompt, x_1 .. x_{i−1}) for every sequence of n tokens over
/// a vocabulary of `vocab`, indexed with the first token most significant (x_1·V^(n−1) + … + x_n);
/// V^n entries (the caller bounds it). `next_law(seq)` returns the next-token law after `seq`
/// (the prompt followed by the tokens so far), `vocab` probabilities; it is called depth first, in
/// token order, once per prefix of positive probability, so a caller may keep a cache that follows
/// the prefix (truncate it to seq.size() − 1, then forward the last token). The product is taken
/// left to right from 1; a subtree under a token of probability 0 is skipped (its entries stay 0).
/// Source: 000 §7.6 (the law speculative decoding must reproduce); Leviathan et al. 2023, App. A.1.
template <class NextLaw>
std::vector<double> sequence_law(int vocab, int n_tokens, const std::vector<int>& prompt, NextLaw&& next_law) {
  std::size_t outcomes = 1;
  for (int i = 0; i < n_tokens; ++i) outcomes *= static_cast<std::size_t>(vocab);
  std::vector<double> law(outcomes, 0.0);
  std::vector<int> seq = prompt;
  detail::enumerate_sequences(next_law, vocab, prompt.size(), seq, n_tokens, 1.0, law);
  return law;
}

/// A partition of the outcomes into the cells a sample is judged on, fixed from the exact law
/// before any draw.
struct Cells {
  std::vector<std::int64_t> cell_of;  ///< outcome -> its cell
  std::vector<double> law;            ///< cell -> its probability
};

/// Each outcome expected at least `min_expected` times in `samples` draws (p·samples >= min_expected)
/// its own cell, in outcome order; every other outcome in one pooled cell, last, of their summed
/// probability (summed in outcome order; the pooled cell exists even when empty). TV over a fixed
/// partition is at most TV over the outcomes, and the Bretagnolle–Huber–Carol bound holds for it
/// with M = its number of cells. Source: the usual rule for Pearson's χ² (expected counts >= 5).
inline Cells pool_rare_outcomes(const std::vector<double>& law, std::int64_t samples, double min_expected = 5.0) {
  const double nd = static_cast<double>(samples);
  Cells c;
  c.cell_of.assign(law.size(), 0);
  double pooled = 0.0;
  for (std::size_t i = 0; i < law.size(); ++i) {
    const double p = law[i];
    if (p * nd >= min_expected) {
      c.cell_of[i] = static_cast<std::int64_t>(c.law.size());
      c.law.push_back(p);
    } else {
      c.cell_of[i] = -1;
      pooled += p;
    }
  }
  for (auto& cell : c.cell_of)
    if (cell < 0) cell = static_cast<std::int64_t>(c.law.size());
  c.law.push_back(pooled);
  return c;
}

/// The partition that keeps every outcome as its own cell (cell_of = identity, law as given).
inline Cells one_cell_per_outcome(const std::vector<double>& law) {
  Cells c;
  c.cell_of.resize(law.size());
  for (std::size_t i = 0; i < law.size(); ++i) c.cell_of[i] = static_cast<std::int64_t>(i);
  c.law = law;
  return c;
}

}  // namespace kvlab::reference
