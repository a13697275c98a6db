// spec-speedup: tokens per speculative step and the speedup E[τ]/(1 + K·c) over K = 1 .. 8, with two
// real mini-GPTs on this CPU. Target: 2 layers, d_model 64 (vocab 96, block 64); draft: 1 layer,
// d_model 16, its own seed, c = 0.044 of the target's weight FLOPs per token. Both sample at
// --temperature (random weights give near-flat logits; 0.2 makes the two disagree enough for
// α ≈ 0.6–0.7, the document's range). Bounds: Freedman's martingale inequality at family false
// alarm 1e-4, Bonferroni over the 17 statistical rows, the pooled one included (core/martingale.hpp). Timing is shown,
// never judged (wall-clock on a shared CPU).
#include "spec_speedup.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/martingale.hpp"
#include "core/numerics.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"
#include "spec/acceptance.hpp"
#include "spec/expected_tokens.hpp"
#include "spec/monte_carlo.hpp"
#include "support/model_setup.hpp"
#include "support/spec_pooled.hpp"

namespace kvlab::checks::spec_speedup {
namespace {

constexpr char kSource[] = "000 §7.4, §9.2";
constexpr int kPromptLen = 4;
constexpr int kBlock = 64;
constexpr int kMaxK = 8;
constexpr int kMaxNewTokens = kBlock - kPromptLen - kMaxK + 1;
static_assert(kMaxNewTokens == 53, "the --new-tokens help names the range");
constexpr int kMaxPrompts = 32;  // 32 × 53 tokens × K = 1..8: ~1.5 s here
constexpr double kFalseAlarm = 1e-4;
// (α, tokens/step) × K and the pooled row: every row that can be judged, whichever the data leave
// judged alone (the union bound runs over all of them).
constexpr int kStatRows = 2 * kMaxK + 1;
// The document's "about 2×" (003 part 5) and vanilla SD's 1.6–2.2× (000 §9.2).
const Stated kAbout2x = Stated::parse("2", "约 2 倍的无损提速 (about 2×)");

ModelConfig target_config() { return ModelConfig{}; }  // 2 layers, d_model 64, n_head 8 × head_dim 8, vocab 96

ModelConfig draft_config() {
  ModelConfig c;
  c.n_layer = 1;
  c.d_model = 16;
  c.n_head = 2;
  c.n_kv_head = 2;
  c.head_dim = 8;
  return c;
}

// Multiply-adds per token through the weights (attention over the context left out: at most
// 2·n_head·head_dim·64 per layer here, under 10% of a layer's 12 d² for the target).
double weight_flops(const ModelConfig& c) {
  const double d = c.d_model, q = c.n_head * c.head_dim, kv = c.n_kv_head * c.head_dim;
  return 2.0 * (c.n_layer * (d * q + 2.0 * d * kv + q * d + 8.0 * d * d) + d * c.vocab_size);
}

double cost_ratio_flops(const SpecSpeedupMeasured& m) { return weight_flops(m.draft) / weight_flops(m.target); }

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One K over every prompt: the loop with an on_step that sums each step's exact acceptance
// probabilities, E[τ | drafts] and the α of each verified position.
template <class T>
SpeedupK run_k(const MiniGPT<T>& target, const MiniGPT<T>& draft, const std::vector<std::vector<int>>& prompts, int k,
               const SpecSpeedupMeasured& m, const SpecSpeedupParts& parts) {
  SpeedupK pk;
  pk.k = k;
  pk.pos_sum.assign(static_cast<std::size_t>(k), 0.0);
  pk.pos_sq.assign(static_cast<std::size_t>(k), 0.0);
  pk.pos_n.assign(static_cast<std::size_t>(k), 0);
  spec::SpecConfig sc;
  sc.k = k;
  sc.max_new_tokens = m.options.new_tokens;
  sc.target_sampler.temperature = sc.draft_sampler.temperature = m.options.temperature;
  std::vector<double> r(static_cast<std::size_t>(k));
  sc.on_step = [&](const spec::StepTrace& s) {
    // E[τ | drafts]: given d_1 .. d_K the acceptances are independent, r_i = min(1, p̃/q̃).
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = spec::exact_accept_probability(s.target[i], s.draft[i], s.drafts[i]);
    pk.sum_m += parts.expected_tokens(r);
    pk.var_m += spec::tokens_variance_positional(r);
    // α of each verified position: Σ min(p̃, q̃) of its two distributions.
    const std::size_t verified = std::min(s.accepted + 1, r.size());
    for (std::size_t i = 0; i < verified; ++i) {
      const double a = spec::acceptance_rate(s.target[i], s.draft[i]);
      pk.sum_a += a;
      pk.var_a += a * (1.0 - a);
      pk.pos_sum[i] += a;
      pk.pos_sq[i] += a * a;
      ++pk.pos_n[i];
    }
  };
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    Rng rng(spec::derive_seed(m.context.seed, 1000 * static_cast<std::uint64_t>(k) + i));
    const auto t0 = Clock::now();
    const auto run = spec::speculative_decode(target, draft, prompts[i], sc, rng, parts.faults);
    pk.seconds_total += since(t0);
    pk += run.stats;
  }
  pk.positional_observed = parts.expected_tokens(std::vector<double>(r.size(), pk.alpha()));
  pk.positional_exact = parts.expected_tokens(std::vector<double>(r.size(), pk.alpha_exact()));
  return pk;
}

template <class T>
SpecSpeedupMeasured measure_impl(const SpecSpeedupOptions& o, const RunContext& ctx, const SpecSpeedupParts& parts) {
  const int need = kPromptLen + o.new_tokens + kMaxK - 1;
  const auto [target, draft] = check_pair<T>(
      target_config(), draft_config(), spec::derive_seed(ctx.seed, 1), ctx, "spec-speedup",
      {{"block_size", [need](const ModelConfig& c) { return c.block_size >= need; },
        fmt::format(">= prompt {} + --new-tokens + {} − 1 = {}", kPromptLen, kMaxK, need)}});
  SpecSpeedupMeasured m{.options = o, .context = ctx, .target = target.config(), .draft = draft.config()};
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < o.prompts; ++i)
    prompts.push_back(random_tokens(spec::derive_seed(ctx.seed, 100 + static_cast<std::uint64_t>(i)), kPromptLen,
                                    target.config().vocab_size));
  // Baseline: the target alone, one token per forward with its KV cache (timing only).
  spec::SamplerConfig sampler;
  sampler.temperature = o.temperature;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    Rng rng(spec::derive_seed(ctx.seed, 200 + i));
    const auto t0 = Clock::now();
    (void)spec::autoregressive_decode(target, prompts[i], o.new_tokens, sampler, rng);
    m.seconds_baseline += since(t0);
  }
  for (int k = 1; k <= kMaxK; ++k) m.ks.push_back(run_k(target, draft, prompts, k, m, parts));
  return m;
}

// One K's Freedman bounds, at false alarm 1e-4 / 17 rows each:
//   - accepted − Σ a is a martingale with increments in [−1, 1] and conditional variance a(1 − a);
//     verified positions per run <= tokens emitted <= new_tokens + K (the last step overshoots);
//   - τ − E[τ | drafts] is a martingale difference in [−K, K] with Var[τ | drafts] <= K²/4, and
//     steps per run <= new_tokens (each emits >= 1).
struct KBounds {
  double alpha = 0.0, tokens = 0.0;  ///< ± on α observed and on tokens per step
  double max_var_m = 0.0;
};

KBounds bounds_of(const SpeedupK& pk, const SpecSpeedupOptions& o) {
  const double per = kFalseAlarm / kStatRows, k = pk.k;
  const double max_var_a = o.prompts * (o.new_tokens + k) / 4.0;
  const double max_var_m = o.prompts * o.new_tokens * k * k / 4.0;
  const double ev = static_cast<double>(std::max<std::int64_t>(pk.evaluated, 1));
  const double steps = static_cast<double>(std::max<std::int64_t>(pk.steps, 1));
  return {freedman_radius(pk.var_a, 1.0, max_var_a, per) / ev, freedman_radius(pk.var_m, k, max_var_m, per) / steps,
          max_var_m};
}

Expectation alpha_row(const SpeedupK& pk, const KBounds& b, int grid_points) {
  Expectation e{fmt::format("α observed vs exact α of the verified positions, K = {}", pk.k), "000 §7.2, §7.4", "",
                pk.alpha_exact(), b.alpha,
                fmt::format("Freedman (accepted − Σ a is a martingale, increments in [−1, 1], Σ a(1 − a) = {:.3g}), "
                            "false alarm {:g}/{}, {} grid points; ± = t / {} verified positions",
                            pk.var_a, kFalseAlarm, kStatRows, grid_points, pk.evaluated),
                rate_or_nan(static_cast<double>(pk.accepted), pk.evaluated), std::nullopt, ""};
  e.attainable = {0.0, 1.0};  // an acceptance rate
  return e;
}

Expectation per_step_row(const SpeedupK& pk, const KBounds& b) {
  Expectation e{fmt::format("tokens per step vs E[τ | drafts] (per-position acceptance), K = {}", pk.k), "000 §7.4",
                "tokens/step", pk.predicted_per_step(), b.tokens,
                fmt::format("Freedman (τ − E[τ | drafts] in [−K, K], Σ Var[τ | drafts] = {:.3g}), false alarm "
                            "{:g}/{}, {} grid points; ± = t / {} steps",
                            pk.var_m, kFalseAlarm, kStatRows, freedman_grid_points(static_cast<double>(pk.k), b.max_var_m),
                            pk.steps),
                rate_or_nan(static_cast<double>(pk.emitted), pk.steps), std::nullopt, ""};
  e.attainable = {1.0, pk.k + 1.0};  // a step emits 1 .. K + 1 tokens
  return e;
}

// The per-step rows whose bound is wider than anything a step can emit (few steps, a high α):
// they could not fail, so they are shown in the table and judged only in the pooled row.
std::vector<int> ks_judged_only_pooled(const SpecSpeedupMeasured& m) {
  std::vector<int> ks;
  for (const SpeedupK& pk : m.ks)
    if (!per_step_row(pk, bounds_of(pk, m.options)).can_fail()) ks.push_back(pk.k);
  return ks;
}

// Every K together: Σ over all steps of τ − E[τ | drafts] is one martingale (increments in
// [−K_max, K_max]). Added only when a K is not judged alone; a fault confined to that K moves it
// only when large, since the other K's steps outnumber it.
Expectation pooled_row(const SpecSpeedupMeasured& m) {
  PooledSteps all;
  for (const SpeedupK& pk : m.ks) all.add(pk.steps, pk.emitted, pk.sum_m, pk.var_m, bounds_of(pk, m.options).max_var_m);
  return pooled_tokens_row(fmt::format("tokens per step vs E[τ | drafts], K = 1..{} pooled", kMaxK), all, kMaxK,
                           kFalseAlarm / kStatRows,
                           fmt::format("{:g}/{}", kFalseAlarm, kStatRows));
}

// Per K: α observed against the exact α of the verified positions, tokens per step against
// E[τ | drafts] (the per-position form of (1 − α^(K+1))/(1 − α), spec/positional); a K whose
// tokens-per-step row could not fail is judged in the pooled row instead.
void statistical_rows(const SpecSpeedupMeasured& m, std::vector<Expectation>& rows) {
  const SpecSpeedupOptions& o = m.options;
  const int grid_a = freedman_grid_points(1.0, o.prompts * (o.new_tokens + kMaxK) / 4.0);
  for (const SpeedupK& pk : m.ks) {
    const KBounds b = bounds_of(pk, o);
    rows.push_back(alpha_row(pk, b, grid_a));
    if (Expectation e = per_step_row(pk, b); e.can_fail()) rows.push_back(std::move(e));
  }
  if (!ks_judged_only_pooled(m).empty()) rows.push_back(pooled_row(m));
}

// The best K at the FLOP cost ratio, by E[τ](α exact)/(1 + K·c) (the library's closed form; a K
// whose α is not a number is passed over: its own rows fail).
int best_k_flops(const SpecSpeedupMeasured& m) {
  const double c = cost_ratio_flops(m);
  int best_k = 1;
  double best = -1.0;
  for (const SpeedupK& pk : m.ks) {
    if (!std::isfinite(pk.alpha_exact())) continue;
    const double s = spec::expected_tokens(pk.alpha_exact(), pk.k) / (1.0 + pk.k * c);
    if (s > best) best = s, best_k = pk.k;
  }
  return best_k;
}

// 003 part 5: "about 2× lossless speedup". Measured: the per-position E[τ] the loop's rows use (the
// part under test) at a_1 = .. = a_K = α exact; expected: the geometric closed form. Best over K on
// each side, at the FLOP cost ratio.
double best_positional_speedup(const SpecSpeedupMeasured& m) {
  double best = 0.0;
  for (const SpeedupK& pk : m.ks) best = std::max(best, pk.positional_exact / (1.0 + pk.k * cost_ratio_flops(m)));
  return best;
}

Expectation speedup_row(const SpecSpeedupMeasured& m) {
  const double c = cost_ratio_flops(m), u = unit_roundoff<double>();
  double best_closed = 0.0;
  for (const SpeedupK& pk : m.ks) {
    const double a = pk.alpha_exact();
    const double etau = a >= 1.0 ? pk.k + 1.0 : (1.0 - std::pow(a, pk.k + 1.0)) / (1.0 - a);
    best_closed = std::max(best_closed, etau / (1.0 + pk.k * c));
  }
  return {fmt::format("predicted speedup E[τ](α exact)/(1 + K·c) at the best K ({}), c = {:.4f} by weight FLOPs",
                      best_k_flops(m), c),
          "003 part 5; 000 §7.4", "×", best_closed, (4.0 * kMaxK + 8) * u * best_closed,
          "float64: the closed form and the per-position sum each within (2K + 4)·u relative",
          best_positional_speedup(m), kAbout2x, ""};
}

}  // namespace

SpecSpeedupMeasured measure_spec_speedup(const SpecSpeedupOptions& o, const RunContext& ctx,
                                         const SpecSpeedupParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts); });
}

std::vector<Expectation> judge_spec_speedup(const SpecSpeedupMeasured& m) {
  std::vector<Expectation> rows;
  statistical_rows(m, rows);
  // Forward counts (000 §1.1, §7.4's cost model): one target forward verifies all K + 1 positions
  // of a step; the draft runs K forwards per step, plus one to feed d_K after a bonus.
  std::int64_t target_extra = 0, draft_extra = 0;
  for (const SpeedupK& pk : m.ks) {
    target_extra += pk.target_forwards - pk.steps;
    draft_extra += pk.draft_forwards - (pk.k * pk.steps + pk.bonus);
  }
  rows.push_back({"target forwards − steps, K = 1..8 (one forward verifies K + 1 tokens)", "000 §1.1, §7.4",
                  "forwards", 0.0, 0.0, "exact: counts", static_cast<double>(target_extra), std::nullopt, ""});
  rows.push_back({"draft forwards − (K·steps + bonus steps), K = 1..8", "000 §7.4, §7.6", "forwards", 0.0, 0.0,
                  "exact: counts (K drafts per step; d_K fed to the draft after a bonus)",
                  static_cast<double>(draft_extra), std::nullopt, ""});
  // The document's closed form against the per-position sum at one α (rounding only).
  const double u = unit_roundoff(Dtype::f64);
  double worst = 0.0;
  for (const SpeedupK& pk : m.ks) {
    const double closed = spec::expected_tokens(pk.alpha(), pk.k);
    const double ratio = std::abs(closed - pk.positional_observed) / ((4.0 * pk.k + 8.0) * u * closed);
    if (!(ratio <= worst)) worst = ratio;  // keeps NaN
  }
  rows.push_back({"(1 − α^(K+1))/(1 − α) vs Σ_{i=0}^{K} α^i (per-position sum, one α), K = 1..8: worst |Δ| / bound",
                  "000 §7.4", "× bound", 0.0, 1.0,
                  "float64: each side within (2K + 4)·u relative (spec/expected_tokens.hpp), so they differ by at most "
                  "(4K + 8)·u·E[τ]",
                  worst, std::nullopt, ""});
  rows.push_back(speedup_row(m));
  return rows;
}

namespace {

Table per_k_table(const SpecSpeedupMeasured& m, Result& r) {
  const double c = cost_ratio_flops(m);
  Table per_k{"per K: α, tokens per step, the i.i.d. formula and the per-position prediction",
              {"K", "steps", "α observed", "α exact (verified)", "tokens/step", "E[τ | drafts]",
               "E[τ] i.i.d. formula (α observed)", "formula − measured", "E[τ] i.i.d. formula (α exact)", "bonus steps",
               "draft fwd", "target fwd", "E[τ](α exact)/(1 + K·c), c = FLOP ratio"},
              {}};
  for (const SpeedupK& pk : m.ks) {
    const double iid = spec::expected_tokens(pk.alpha(), pk.k), exact = spec::expected_tokens(pk.alpha_exact(), pk.k);
    per_k.rows.push_back({std::int64_t{pk.k}, pk.steps, pk.alpha(), pk.alpha_exact(), pk.tokens_per_step(),
                          pk.predicted_per_step(), iid, iid - pk.tokens_per_step(), exact, pk.bonus, pk.draft_forwards,
                          pk.target_forwards, exact / (1.0 + pk.k * c)});
    r.metric(fmt::format("alpha_observed_k{}", pk.k), pk.alpha());
    r.metric(fmt::format("tokens_per_step_k{}", pk.k), pk.tokens_per_step());
  }
  return per_k;
}

// Mean and sample SD of a sum and a sum of squares over n values.
std::pair<double, double> mean_sd(double n, double sum, double sq) {
  const double mean = n > 0 ? sum / n : 0.0;
  return {mean, n > 1 ? std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1))) : 0.0};
}

// How α varies with the position in the step (K = 8): the i.i.d. caveat made visible.
Table profile_table(const SpeedupK& k8) {
  Table profile{"per-position α (K = 8): mean and SD of Σ min(p̃, q̃) over the steps that reached each position",
                {"position", "steps reaching it", "mean α", "SD of α"},
                {}};
  for (std::size_t i = 0; i < k8.pos_n.size(); ++i) {
    const auto [mean, sd] = mean_sd(static_cast<double>(k8.pos_n[i]), k8.pos_sum[i], k8.pos_sq[i]);
    profile.rows.push_back({static_cast<std::int64_t>(i + 1), k8.pos_n[i], mean, sd});
  }
  return profile;
}

// The timing table and plot (shown, not judged): c = one draft forward / one target decode
// forward, the verify cost of K + 1 tokens in target decode forwards, predicted and measured speedup.
void present_timing(const SpecSpeedupMeasured& m, Result& r) {
  const double baseline = m.seconds_baseline / (static_cast<double>(m.options.prompts) * m.options.new_tokens);
  const auto per_forward = [baseline](double seconds, std::int64_t forwards) {
    return forwards > 0 ? (seconds / static_cast<double>(forwards)) / baseline : 0.0;
  };
  const double c = per_forward(m.ks.front().seconds_draft, m.ks.front().draft_forwards);
  Table timing{"timing: cost ratio, predicted and measured speedup on this CPU (not judged)",
               {"K", "c measured", "verify cost (target decode fwds)", "predicted E[τ]/(1 + K·c)",
                "predicted tokens/step / (verify + K·c)", "measured speedup", "s/token spec", "s/token target alone"},
               {}};
  PlotSeries s_doc{"predicted E[τ]/(1 + K·c), c measured", {}, {}, "linespoints"};
  PlotSeries s_ver{"predicted with the measured verify cost", {}, {}, "linespoints"};
  PlotSeries s_meas{"measured (wall-clock)", {}, {}, "linespoints"};
  PlotSeries s_one{"1× (no speedup)", {}, {}, "lines"};
  int best_pred = 1, best_meas = 1;
  double bp = -1.0, bm = -1.0;
  for (const SpeedupK& pk : m.ks) {
    const double ck = per_forward(pk.seconds_draft, pk.draft_forwards);
    const double verify = per_forward(pk.seconds_target, pk.target_forwards);
    const double pred = spec::expected_tokens(pk.alpha(), pk.k) / (1.0 + pk.k * c);
    const double pred_v = pk.tokens_per_step() / (verify + pk.k * ck);
    const double per_token = pk.seconds_total / (static_cast<double>(m.options.prompts) * m.options.new_tokens);
    const double meas = per_token > 0 ? baseline / per_token : 0.0;
    if (pred > bp) bp = pred, best_pred = pk.k;
    if (meas > bm) bm = meas, best_meas = pk.k;
    timing.rows.push_back({std::int64_t{pk.k}, ck, verify, pred, pred_v, meas, per_token, baseline});
    s_doc.x.push_back(pk.k), s_doc.y.push_back(pred);
    s_ver.x.push_back(pk.k), s_ver.y.push_back(pred_v);
    s_meas.x.push_back(pk.k), s_meas.y.push_back(meas);
    s_one.x.push_back(pk.k), s_one.y.push_back(1.0);
    r.metric(fmt::format("seconds_speedup_measured_k{}", pk.k), meas);
  }
  const Cell none = std::string("—");
  timing.rows.push_back({std::string("best K"), none, none, std::int64_t{best_pred}, none, std::int64_t{best_meas}, none,
                         none});
  r.metric("seconds_cost_ratio_measured", c);
  r.metric("seconds_best_k_predicted", best_pred);
  r.metric("seconds_best_k_measured", best_meas);
  r.metric("seconds_baseline_per_token", baseline);
  r.tables.push_back(std::move(timing));
  r.plots.push_back({"spec-speedup: measured vs predicted speedup over K (this CPU)", "K (draft tokens per step)",
                     "speedup over the target alone (×)", false, false, {s_doc, s_ver, s_meas, s_one}});
}

// The i.i.d. caveat (000 §7.4): the spread of the per-position α at K = 8, and the formula, the
// per-position prediction and the measurement side by side.
std::string iid_note(const SpecSpeedupMeasured& m, bool files) {
  const SpeedupK& k8 = m.ks.back();
  double n = 0.0, sum = 0.0, sq = 0.0, lo = 1.0, hi = 0.0;
  for (std::size_t i = 0; i < k8.pos_n.size(); ++i) {
    n += static_cast<double>(k8.pos_n[i]), sum += k8.pos_sum[i], sq += k8.pos_sq[i];
    if (k8.pos_n[i] > 0) {
      const double mean = k8.pos_sum[i] / static_cast<double>(k8.pos_n[i]);
      lo = std::min(lo, mean), hi = std::max(hi, mean);
    }
  }
  const auto [mean, sd] = mean_sd(n, sum, sq);
  return fmt::format(
      "i.i.d. caveat (000 §7.4): the formula assumes one α at every position. Here each verified position has its "
      "own α = Σ min(p̃, q̃): at K = 8 their mean is {:.3f} with SD {:.3f}, and the mean by position runs from {:.3f} "
      "to {:.3f} (table \"per-position α\"). {}At K = 8 the formula at the exact α gives {:.3f}, E[τ | drafts] {:.3f}, "
      "the measurement {:.3f}. For trained pairs α swings with the text and acceptances are correlated, and the "
      "i.i.d. formula can miss; so what is judged is the per-position form, E[τ | drafts] = Σ_i Π_{{j<=i}} min(1, "
      "p̃_j(d_j)/q̃_j(d_j)), exact given the drafts, and the formula is shown.",
      mean, sd, lo, hi, files ? "" : "Random-weight models have no easy or hard stretches of text, so α varies little. ",
      spec::expected_tokens(k8.alpha_exact(), kMaxK), k8.predicted_per_step(), k8.tokens_per_step());
}

// Every note describes the pair that ran: the files' (--weights) or the seeded random one.
void notes(const SpecSpeedupMeasured& m, Result& r) {
  const RunContext& ctx = m.context;
  const bool files = !ctx.weights.empty();
  const double c = cost_ratio_flops(m);
  const std::string run_text = fmt::format(
      "temperature {:g} for both; {} prompts of {} random tokens (stream 100 + i of seed {}), {} new tokens each, "
      "K = 1..{}. Predicted speedup at the FLOP ratio, E[τ](α exact)/(1 + K·c), is best at K = {}.",
      m.options.temperature, m.options.prompts, kPromptLen, ctx.seed, m.options.new_tokens, kMaxK, best_k_flops(m));
  if (files)
    r.notes.push_back(pair_note(m.target, m.draft, ctx) + fmt::format(" (c = {:.4f} by weight FLOPs); ", c) + run_text);
  else
    r.notes.push_back(fmt::format("seed {}: target MiniGPT(seed) (2 layers, d_model 64), draft "
                                  "MiniGPT(SplitMix64(seed, 1)) (1 layer, d_model 16; c = {:.4f} by weight FLOPs); ",
                                  ctx.seed, c) +
                      run_text);
  r.notes.push_back(iid_note(m, files));
  r.notes.push_back(fmt::format(
      "Cost model (000 §7.4, §1.1): one step = one target forward over K + 1 tokens plus K draft forwards. The "
      "formula counts the verify forward as one decode step (memory-bound on a GPU: the weights are read once for "
      "K + 1 tokens). {} On a CPU that is not given: the timing table measures the verify forward in decode forwards "
      "(column \"verify cost\") and shows tokens/step / (verify + K·c) beside E[τ]/(1 + K·c). The course's \"about "
      "2×\" (003 part 5) and 1.6–2.2× (000 §9.2) are GPU figures for trained pairs; the timing table is shown, never "
      "judged.",
      files ? fmt::format("The target of {} has {:.3g} weight multiply-adds per token.", ctx.weights,
                          weight_flops(m.target) / 2.0)
            : std::string("These mini-GPTs fit in the CPU's cache.")));
}

void present(const SpecSpeedupMeasured& m, Result& r) {
  r.tables.push_back(per_k_table(m, r));
  r.metric("predicted_speedup_best_k_flops", best_positional_speedup(m));
  r.tables.push_back(profile_table(m.ks.back()));
  r.metric("cost_ratio_flops", cost_ratio_flops(m));
  r.metric("best_k_flops", best_k_flops(m));
  present_timing(m, r);
  notes(m, r);
  if (const std::vector<int> ks = ks_judged_only_pooled(m); !ks.empty())
    r.notes.push_back(fmt::format(
        "Tokens per step not judged on their own at this sample size, K = {} (their bound is wider than a step's "
        "range 1 .. K + 1, so the row could not fail). They count in the pooled row over every K, where a fault "
        "confined to them shows only if it is large; more --new-tokens or --prompts judge each alone.",
        fmt::join(ks, ", ")));
}

}  // namespace

const CheckDef<SpecSpeedupOptions, SpecSpeedupMeasured>& spec_speedup_check() {
  using O = SpecSpeedupOptions;
  static const CheckDef<O, SpecSpeedupMeasured> def{
      .spec = {.name = "spec-speedup",
               .order = 235,
               .source = kSource,
               .summary = "K = 1..8 with two mini-GPTs: α and tokens/step vs E[τ]; speedup E[τ]/(1 + Kc) vs wall-clock",
               .claim_zh = "两个 mini-GPT、K = 1..8：α 与每步 token 数对照 E[τ]；加速比 E[τ]/(1 + Kc) 对照实测",
               .description =
                   "Target (2 layers, d_model 64) and draft (1 layer, d_model 16) mini-GPTs, K = 1..8,\n"
                   "--prompts prompts × --new-tokens tokens each: α observed against the exact α of the\n"
                   "verified positions, tokens per step against E[τ | drafts] (per-position form of\n"
                   "(1 − α^(K+1))/(1 − α)), both within Freedman bounds (family false alarm 1e-4).\n"
                   "Timing (shown, not judged): c measured, predicted E[τ]/(1 + K·c) and measured\n"
                   "speedup, best K. --plot FILE.svg|term draws the speedups over K.",
               .derivation =
                   "A step verifies drafts 1..K in order; draft i is accepted with a_i = min(1, p̃(d_i)/q̃(d_i)).\n"
                   "It emits i + 1 tokens when the first i pass and draft i + 1 fails, K + 1 (bonus) when\n"
                   "all pass: E[τ] = Σ_{i=0}^{K} a_1···a_i. With one α: 1 + α + … + α^K\n"
                   "= (1 − α^(K+1))/(1 − α). Dropping the bonus gives Σ_{i<K} α^i = (1 − α^K)/(1 − α).\n"
                   "Cost of a step: 1 target forward + K draft forwards = 1 + K·c target forwards, so\n"
                   "speedup = E[τ]/(1 + K·c); tokens/s_SD = tokens/s_base · E[τ]/(1 + K·c).\n"
                   "Source: 000 §7.4, §9.2; 003 part 5.",
               .claim = "A speculative step emits E[τ] = (1 − α^(K+1))/(1 − α) tokens for one target forward and K "
                        "draft forwards, so decoding speeds up by E[τ]/(1 + K·c) (c = draft/target forward cost); "
                        "vanilla speculative decoding gives \"about 2×\".",
               .traits = {.dtype = true, .draft_weights = true, .plot = true}},
      .options = {{"--prompts", &O::prompts, Allowed::integers(1, kMaxPrompts), "Seeded prompts per K"},
                  {"--new-tokens", &O::new_tokens, Allowed::integers(1, kMaxNewTokens), "Tokens per prompt, 1-53"},
                  {"--temperature", &O::temperature, Allowed::reals(0.01, 10.0),
                   "Sampling temperature of target and draft"}},
      .measure = [](const O& o, const RunContext& ctx) { return measure_spec_speedup(o, ctx); },
      .judge = judge_spec_speedup,
      .present = present,
      .sample_options = "--prompts, --new-tokens"};
  return def;
}

Result run_spec_speedup(const SpecSpeedupOptions& o, const RunContext& ctx, const SpecSpeedupParts& parts) {
  return run_check(spec_speedup_check(), o, ctx, [&parts](const SpecSpeedupOptions& opts, const RunContext& c) {
    return measure_spec_speedup(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(spec_speedup_check);

}  // namespace kvlab::checks::spec_speedup
