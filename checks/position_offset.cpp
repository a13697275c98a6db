// position-offset — 004 §3.2: a decoded token's position is its index in the sequence, not 0.
//
// Claim: in incremental decoding the new token's learned position embedding is wpe[pos], pos its
// index in the whole sequence. Forgetting the start (wpe[0] for every new token) raises no error;
// the logits are simply different. Comparing with one full forward catches it at once.
// kvlab prefills 8 tokens and decodes 12 one at a time through the KV cache, twice: with the right
// start and with the start forgotten (every decoded token gets wpe[0]: the forward's position
// table is remapped, so the bug runs through the library's own forward). Both are compared with
// one full forward over the 20 tokens.
// Expected: right start: max |Δlogits| = 0 within the rounding bound 2·n·u·max|logit|
// (support/model_setup.hpp); forgotten start: every decoded step's logits differ beyond that same
// bound (a count, exact), so rounding alone cannot pass it.
//
//   kvlab position-offset [--prefill 8] [--decode 12] [--dtype f64|f32]
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checks/position_offset.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::position_offset {
namespace {

// Largest sizes accepted: three passes over at most 512 positions of the default mini-GPT.
constexpr int kMaxTokens = 256;

/// Logits of prefill-then-decode where token t of a call starting at s gets wpe[embed(s, t)]. The
/// bug is injected by remapping the position table of a copy of the model: row p (decoded alone,
/// s = p, t = 0) becomes wpe[embed(p, 0)]; the prefill (s = 0) keeps wpe[embed(0, t)].
template <class T>
Mat<T> decode_with(const MiniGPT<T>& model, const std::vector<int>& ids, int prefill, const EmbedPosition& embed) {
  MiniGPT<T> remapped = model;
  const Mat<T>& wpe = model.weights().wpe;
  Mat<T>& table = remapped.weights().wpe;
  const int total = static_cast<int>(ids.size());
  for (int t = 0; t < prefill; ++t) table.row(t) = wpe.row(embed(0, t));
  for (int p = prefill; p < total; ++p) table.row(p) = wpe.row(embed(p, 0));
  auto cache = remapped.make_cache(CacheKind::prealloc, total);
  Mat<T> logits(total, model.config().vocab_size);
  logits.topRows(prefill) = remapped.forward(std::span(ids).first(prefill), 0, *cache);
  for (int p = prefill; p < total; ++p) logits.row(p) = remapped.forward(std::span(ids).subspan(p, 1), p, *cache);
  return logits;
}

template <class T>
PositionOffsetMeasured measure_impl(const PositionOffsetOptions& o, const RunContext& ctx, const EmbedPosition& right) {
  const int total = o.prefill + o.decode;
  ModelConfig base;
  base.block_size = std::max(64, total);
  const MiniGPT<T> model = check_model<T>(
      base, ctx, "position-offset",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"},
       {"positional", [](const ModelConfig& c) { return c.positional == Positional::learned; },
        "learned (the check remaps the learned position table)"},
       {"block_size", [total](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= total; },
        fmt::format(">= {} with learned positions (--prefill + --decode)", total)}});
  PositionOffsetMeasured m{.options = o, .context = ctx, .config = model.config()};
  const auto ids = random_tokens(ctx.seed + 1, total, m.config.vocab_size);
  auto full_cache = model.make_cache(CacheKind::prealloc, total);
  const Mat<T> full = model.forward(ids, 0, *full_cache);
  m.bound = rounding_bound(m.config, ctx.dtype, std::max(1.0, static_cast<double>(max_abs(full))));

  const Mat<T> good = decode_with(model, ids, o.prefill, right);
  Mat<T> forgot;
  try {
    forgot = decode_with(model, ids, o.prefill, [](int, int t) { return t; });
  } catch (const std::exception&) {
    ++m.errors_raised;
  }
  m.right_diff = static_cast<double>(max_abs(good - full));
  for (int p = o.prefill; p < total && m.errors_raised == 0; ++p)
    m.steps.push_back({.position = p, .right = static_cast<double>(max_abs(good.row(p) - full.row(p))),
                       .forgotten = static_cast<double>(max_abs(forgot.row(p) - full.row(p))),
                       .argmax_changed = checked_argmax(full.row(p)) != checked_argmax(forgot.row(p))});
  return m;
}

void present(const PositionOffsetMeasured& m, Result& r) {
  Table steps{"decoded steps: max |Δlogits| against one full forward",
              {"position", "right start", "start forgotten (wpe[0])", "argmax changed"}, {}};
  double forgot_max = 0, forgot_min = INFINITY;
  int argmax_changed = 0;
  for (const DecodedStep& s : m.steps) {
    forgot_max = nan_max(forgot_max, s.forgotten);
    forgot_min = nan_min(forgot_min, s.forgotten);
    argmax_changed += s.argmax_changed ? 1 : 0;
    steps.rows.push_back({std::int64_t{s.position}, s.right, s.forgotten, std::string(s.argmax_changed ? "yes" : "no")});
  }
  r.metric("max_abs_diff_right_start", m.right_diff);
  r.metric("max_abs_diff_forgotten_start", forgot_max);
  r.metric("min_abs_diff_forgotten_start", forgot_min);
  r.metric("argmax_changed_forgotten_start", argmax_changed);
  r.metric("errors_raised_forgotten_start", m.errors_raised);
  r.tables.push_back(std::move(steps));
  if (!m.context.weights.empty()) r.notes.push_back(weights_note(m.config, m.context.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 heads, learned positions, {}, seed {}",
                                  dtype_name(m.context.dtype), m.context.seed));
  r.notes.push_back(fmt::format("The forgotten start raised {} errors: the shapes are all valid, only the numbers are "
                                "wrong; {} of {} decoded steps changed their most likely next token.",
                                m.errors_raised, argmax_changed, m.options.decode));
  r.notes.push_back("The bug is injected by remapping a copy of the model's position table (row p := wpe[0] for the "
                    "decoded positions), so it runs through the library's own forward and cache.");
}

}  // namespace

PositionOffsetMeasured measure_position_offset(const PositionOffsetOptions& o, const RunContext& ctx,
                                               const PositionOffsetParts& parts) {
  const EmbedPosition right = parts.right ? parts.right : EmbedPosition([](int s, int t) { return s + t; });
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, right); });
}

std::vector<Expectation> judge_position_offset(const PositionOffsetMeasured& m) {
  const PositionOffsetOptions& o = m.options;
  int differs = 0;
  for (const DecodedStep& s : m.steps) differs += s.forgotten > m.bound ? 1 : 0;
  const std::string why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})",
                                      reduction_length(m.config), unit_roundoff(m.context.dtype),
                                      dtype_name(m.context.dtype));
  return {
      {.quantity = fmt::format("right start: max |Δlogits|, prefill {} + decode {} vs full forward", o.prefill,
                               o.decode),
       .source = "004 §3.2", .unit = "", .expected = 0, .tolerance = m.bound, .why = why, .measured = m.right_diff,
       .document = "与全量前向逐位比对"},
      {.quantity = fmt::format("start forgotten: decoded steps whose logits differ beyond rounding (of {})", o.decode),
       .source = "004 §3.2", .unit = "steps", .expected = static_cast<double>(o.decode), .tolerance = 0,
       .why = fmt::format("a count; differs means beyond the bound above, {:.3g}", m.bound),
       .measured = static_cast<double>(differs), .document = "不报错，生成质量却会明显变差"},
      {.quantity = "start forgotten: errors raised by the forward", .source = "004 §3.2", .unit = "errors",
       .expected = 0, .tolerance = 0, .why = "a count: exact", .measured = static_cast<double>(m.errors_raised),
       .document = "不报错"}};
}

const CheckDef<PositionOffsetOptions, PositionOffsetMeasured>& position_offset_check() {
  static const CheckDef<PositionOffsetOptions, PositionOffsetMeasured> def{
      .spec = {.name = "position-offset",
               .order = 330,
               .source = "004 §3.2",
               .summary = "forgetting the start position: no error, different logits",
               .claim_zh = "忘记起始位置：不报错，但 logits 不同",
               .description =
                   "Prefills a prompt and decodes through the KV cache with the right start position and\n"
                   "with it forgotten (each new token at position 0), and compares both with one full\n"
                   "forward: the right start agrees up to rounding, the forgotten one differs every step.",
               .derivation =
                   "The full forward embeds token p as wte[x_p] + wpe[p]. A decode step processes one token,\n"
                   "so arange(0, T) = [0]: without the start offset it embeds wte[x_p] + wpe[0]. Every shape\n"
                   "is still valid (no error), but the input differs by wpe[p] − wpe[0] ≠ 0, and so do the\n"
                   "logits; with arange(start, start + T) the step computes exactly the full forward's row p.\n"
                   "Source: 004 §3.2 (and §A.1: pass position_ids / cache_position).",
               .claim = "Decoding with the start position forgotten (wpe[0] for every new token) raises no error "
                        "but gives different logits; with the right start the cached decode equals the full "
                        "forward up to rounding.",
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--prefill", &PositionOffsetOptions::prefill, Allowed::integers(1, kMaxTokens), "Prompt tokens"},
                  {"--decode", &PositionOffsetOptions::decode, Allowed::integers(1, kMaxTokens),
                   "Tokens decoded one at a time"}},
      .measure = [](const PositionOffsetOptions& o, const RunContext& ctx) { return measure_position_offset(o, ctx); },
      .judge = judge_position_offset,
      .present = present};
  return def;
}

Result run_position_offset(const PositionOffsetOptions& o, const RunContext& ctx, const PositionOffsetParts& parts) {
  return run_check(position_offset_check(), o, ctx, [&parts](const PositionOffsetOptions& opts, const RunContext& c) {
    return measure_position_offset(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(position_offset_check);

}  // namespace kvlab::checks::position_offset
