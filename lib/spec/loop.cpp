#include "spec/loop.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "spec/rejection_detail.hpp"

namespace kvlab::spec {

void validate_sampler(const std::string& field, const SamplerConfig& s) {
  if (!std::isfinite(s.temperature) || s.temperature < 0.0 || s.temperature > 1e6)
    throw InputError(fmt::format("{}temperature: must be a finite number in [0, 1e6] (got {})",
                                 field, s.temperature));
  if (s.top_k < 0)
    throw InputError(fmt::format("{}top-k: must be >= 0 (got {})", field, s.top_k));
  if (!std::isfinite(s.top_p) || s.top_p <= 0.0 || s.top_p > 1.0)
    throw InputError(fmt::format("{}top-p: must be in (0, 1] (got {})", field, s.top_p));
}

std::vector<double> process_logits(std::span<const double> logits, const SamplerConfig& s) {
  const std::size_t v = logits.size();
  for (double x : logits)  // a NaN would sort anywhere and make greedy pick token 0 on both sides
    if (!std::isfinite(x)) throw NonFiniteError("process_logits: non-finite logit (NaN or inf)");
  std::vector<double> out(v, 0.0);
  if (s.temperature == 0.0) {  // greedy: the first maximum
    const auto it = std::max_element(logits.begin(), logits.end());
    out[static_cast<std::size_t>(it - logits.begin())] = 1.0;
    return out;
  }
  // Token order by logit, descending, ties by lower id: used by top-k and top-p only, so plain
  // temperature sampling (most calls) skips the sort.
  const bool truncates = (s.top_k > 0 && static_cast<std::size_t>(s.top_k) < v) || s.top_p < 1.0;
  std::vector<std::size_t> order;
  if (truncates) {
    order.resize(v);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  }
  const double mx = truncates ? logits[order[0]] : *std::max_element(logits.begin(), logits.end());
  double z = 0.0;
  for (std::size_t i = 0; i < v; ++i) z += out[i] = std::exp((logits[i] - mx) / s.temperature);
  for (auto& x : out) x /= z;
  std::size_t keep = v;
  if (s.top_k > 0) keep = std::min(keep, static_cast<std::size_t>(s.top_k));
  if (s.top_p < 1.0) {
    double mass = 0.0;
    std::size_t n = 0;
    while (n < keep) {
      mass += out[order[n++]];
      if (mass >= s.top_p) break;
    }
    keep = n;
  }
  if (keep < v) {
    for (std::size_t i = keep; i < v; ++i) out[order[i]] = 0.0;
    double kept = 0.0;
    for (std::size_t i = 0; i < v; ++i) kept += out[i];
    for (auto& x : out) x /= kept;
  }
  return out;
}

namespace {

template <class T>
std::vector<double> row(const Mat<T>& logits, Eigen::Index r) {
  std::vector<double> out(static_cast<std::size_t>(logits.cols()));
  for (Eigen::Index c = 0; c < logits.cols(); ++c) out[static_cast<std::size_t>(c)] = logits(r, c);
  return out;
}

std::size_t draw(const std::vector<double>& d, const SamplerConfig& s, Rng& rng) {
  if (s.temperature == 0.0)
    return static_cast<std::size_t>(std::max_element(d.begin(), d.end()) - d.begin());
  return rng.categorical(d);
}

void validate_prompt(std::span<const int> prompt, int vocab, int max_new, int k,
                     int block_size) {
  if (prompt.empty()) throw InputError("prompt: must hold at least one token");
  for (int t : prompt)
    if (t < 0 || t >= vocab)
      throw InputError(fmt::format("prompt: token id {} is outside the vocabulary [0, {})", t, vocab));
  if (max_new < 1) throw InputError(fmt::format("max_new_tokens: must be >= 1 (got {})", max_new));
  if (k < 0) throw InputError(fmt::format("k: must be >= 0 (got {})", k));
  const long long need = static_cast<long long>(prompt.size()) + max_new + k - 1;
  if (need > block_size)
    throw InputError(fmt::format(
        "max_new_tokens: prompt length {} + max_new_tokens {} + K − 1 = {} positions exceed the "
        "model's block_size {}",
        prompt.size(), max_new, need, block_size));
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Every input check of speculative_decode, before anything is allocated or computed.
void validate_spec(const ModelConfig& target, const ModelConfig& draft, std::span<const int> prompt,
                   const SpecConfig& config) {
  const int vocab = target.vocab_size;
  if (draft.vocab_size != vocab)
    throw InputError(fmt::format(
        "vocab_size: the draft's vocabulary ({}) differs from the target's ({}); speculative "
        "decoding needs one shared vocabulary",
        draft.vocab_size, vocab));
  if (config.k < 1) throw InputError(fmt::format("k: must be >= 1 (got {})", config.k));
  validate_sampler("target ", config.target_sampler);
  validate_sampler("draft ", config.draft_sampler);
  validate_prompt(prompt, vocab, config.max_new_tokens, config.k, std::min(target.block_size, draft.block_size));
}

}  // namespace

template <class T>
SpecRun speculative_decode(SequenceModel<T>& target, SequenceModel<T>& draft, std::span<const int> prompt,
                           const SpecConfig& config, Rng& rng, const SpecFaults& faults) {
  validate_spec(target.config(), draft.config(), prompt, config);
  const int k = config.k;

  if (target.length() != 0 || draft.length() != 0)
    throw std::invalid_argument("speculative_decode: the target's and the draft's caches must start empty");
  std::vector<int> seq(prompt.begin(), prompt.end());
  if (seq.size() > 1) {  // prefill all but the last token, which is the first step's input
    const std::span<const int> head(seq.data(), seq.size() - 1);
    target.forward(head);
    draft.forward(head);
  }
  SpecRun run;
  auto& st = run.stats;
  const std::size_t goal = prompt.size() + static_cast<std::size_t>(config.max_new_tokens);
  const bool greedy_draft = config.draft_sampler.temperature == 0.0;
  SamplerConfig soft = config.draft_sampler;
  soft.temperature = 1.0;

  std::vector<std::vector<double>> qs(static_cast<std::size_t>(k)), ps(static_cast<std::size_t>(k) + 1);
  std::vector<std::size_t> drafts(static_cast<std::size_t>(k));
  while (seq.size() < goal) {
    const int base = static_cast<int>(seq.size()) - 1;
    if (target.length() != base || draft.length() != base)
      throw InvariantError(fmt::format(
          "speculative loop: at the top of step {} the caches hold {} (target) and {} (draft) "
          "positions for a sequence of {} tokens; the invariant is cache length = {}",
          st.steps, target.length(), draft.length(), seq.size(), base));
    const int last = seq.back();
    // 1. Draft: feed last, d_1, ..., d_{K−1}; draw d_1 .. d_K.
    int cur = last;
    auto t0 = Clock::now();
    for (int i = 0; i < k; ++i) {
      const Mat<T> lg = draft.forward(std::span<const int>(&cur, 1));
      ++st.draft_forwards;
      const auto logits = row(lg, 0);
      auto q = process_logits(logits, config.draft_sampler);
      const std::size_t tok = draw(q, config.draft_sampler, rng);
      if (greedy_draft && faults.soft_q_for_greedy_draft) q = process_logits(logits, soft);
      qs[static_cast<std::size_t>(i)] = std::move(q);
      drafts[static_cast<std::size_t>(i)] = tok;
      cur = static_cast<int>(tok);
    }
    st.seconds_draft += since(t0);
    // 2. Target: one forward over [last, d_1 .. d_K] gives K + 1 distributions.
    std::vector<int> tin{last};
    for (auto d : drafts) tin.push_back(static_cast<int>(d));
    t0 = Clock::now();
    const Mat<T> tl = target.forward(tin);
    ++st.target_forwards;
    st.seconds_target += since(t0);
    for (int i = 0; i <= k; ++i)
      ps[static_cast<std::size_t>(i)] = process_logits(row(tl, i), config.target_sampler);
    if (faults.bonus_from_last_draft_row) ps[static_cast<std::size_t>(k)] = ps[static_cast<std::size_t>(k) - 1];
    // 3. Verify.
    std::vector<Dist> pv(ps.begin(), ps.end()), qv(qs.begin(), qs.end());
    const StepOutcome out = detail::verify_draft(pv, qv, drafts, rng, exact_accept_probability);
    if (config.on_step) config.on_step(StepTrace{ps, qs, drafts, out.accepted, out.bonus});
    for (std::size_t i = 0; i < out.accepted; ++i) seq.push_back(static_cast<int>(drafts[i]));
    const bool dropped = out.bonus && faults.drop_bonus;
    if (!dropped) seq.push_back(static_cast<int>(out.next));
    ++st.steps;
    st.drafted += k;
    st.accepted += static_cast<std::int64_t>(out.accepted);
    st.evaluated += static_cast<std::int64_t>(out.accepted) + (out.bonus ? 0 : 1);
    st.emitted += static_cast<std::int64_t>(out.emitted()) - (dropped ? 1 : 0);
    if (dropped) {  // d_K is now the last token: it leaves the target cache, the draft never had it
      target.truncate(base + k);
      continue;
    }
    // 4. Roll back to the accepted prefix: keep last + the accepted drafts; `next` is not cached.
    const int keep = base + 1 + static_cast<int>(out.accepted);
    if (out.bonus) {
      ++st.bonus;
      // The target cache already holds last, d_1 .. d_K; the draft's lacks d_K.
      if (!faults.skip_bonus_feed) {
        const int dk = static_cast<int>(drafts[static_cast<std::size_t>(k) - 1]);
        t0 = Clock::now();
        draft.forward(std::span<const int>(&dk, 1));
        ++st.draft_forwards;
        st.seconds_draft += since(t0);
      }
    } else {
      if (!faults.skip_draft_truncate) draft.truncate(keep);
      if (!faults.skip_target_truncate) target.truncate(keep);
    }
  }
  run.tokens.assign(seq.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                    seq.begin() + static_cast<std::ptrdiff_t>(goal));  // overshoot cut
  return run;
}

template <class T>
SpecRun speculative_decode(const MiniGPT<T>& target, const MiniGPT<T>& draft, std::span<const int> prompt,
                           const SpecConfig& config, Rng& rng, const SpecFaults& faults) {
  validate_spec(target.config(), draft.config(), prompt, config);  // before the caches are allocated
  const int max_len = static_cast<int>(prompt.size()) + config.max_new_tokens + config.k;
  CpuSequenceModel<T> t(target, max_len), d(draft, max_len);
  return speculative_decode<T>(t, d, prompt, config, rng, faults);
}

template <class T>
std::vector<int> autoregressive_decode(SequenceModel<T>& model, std::span<const int> prompt, int max_new_tokens,
                                       const SamplerConfig& sampler, Rng& rng) {
  validate_sampler("", sampler);
  validate_prompt(prompt, model.config().vocab_size, max_new_tokens, 0, model.config().block_size);
  if (model.length() != 0) throw std::invalid_argument("autoregressive_decode: the cache must start empty");
  std::vector<int> out;
  Mat<T> lg = model.forward(prompt);
  for (int i = 0; i < max_new_tokens; ++i) {
    const auto d = process_logits(row(lg, lg.rows() - 1), sampler);
    const int tok = static_cast<int>(draw(d, sampler, rng));
    out.push_back(tok);
    if (i + 1 < max_new_tokens) lg = model.forward(std::span<const int>(&tok, 1));
  }
  return out;
}

template <class T>
std::vector<int> autoregressive_decode(const MiniGPT<T>& model, std::span<const int> prompt,
                                       int max_new_tokens, const SamplerConfig& sampler, Rng& rng) {
  validate_sampler("", sampler);  // before the cache is allocated
  validate_prompt(prompt, model.config().vocab_size, max_new_tokens, 0, model.config().block_size);
  CpuSequenceModel<T> m(model, static_cast<int>(prompt.size()) + max_new_tokens);
  return autoregressive_decode<T>(m, prompt, max_new_tokens, sampler, rng);
}

template SpecRun speculative_decode<double>(SequenceModel<double>&, SequenceModel<double>&, std::span<const int>,
                                            const SpecConfig&, Rng&, const SpecFaults&);
template SpecRun speculative_decode<float>(SequenceModel<float>&, SequenceModel<float>&, std::span<const int>,
                                           const SpecConfig&, Rng&, const SpecFaults&);
template std::vector<int> autoregressive_decode<double>(SequenceModel<double>&, std::span<const int>, int,
                                                        const SamplerConfig&, Rng&);
template std::vector<int> autoregressive_decode<float>(SequenceModel<float>&, std::span<const int>, int,
                                                       const SamplerConfig&, Rng&);
template SpecRun speculative_decode<double>(const MiniGPT<double>&, const MiniGPT<double>&,
                                            std::span<const int>, const SpecConfig&, Rng&,
                                            const SpecFaults&);
template SpecRun speculative_decode<float>(const MiniGPT<float>&, const MiniGPT<float>&,
                                           std::span<const int>, const SpecConfig&, Rng&,
                                           const SpecFaults&);
template std::vector<int> autoregressive_decode<double>(const MiniGPT<double>&, std::span<const int>,
                                                        int, const SamplerConfig&, Rng&);
template std::vector<int> autoregressive_decode<float>(const MiniGPT<float>&, std::span<const int>,
                                                       int, const SamplerConfig&, Rng&);

}  // namespace kvlab::spec
