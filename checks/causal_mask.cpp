// causal-mask — 004 §3.3 (000 §6.3): the three mask cases of a KV cache, and the is_causal pitfall.
//
// kvlab builds the mask from absolute positions, compares it with tril(S − T) cell by cell, and
// reads the mask grouped_query_attention really applies off its output (q = 0, V = identity).
// Expected: every comparison is a count of mask cells, exact (tolerance 0): 0 mismatches; S keys
// seen by the decode query, 1 under is_causal; T·(S − T) cells wrong for a top-left chunk.
//
//   kvlab causal-mask [--keys 8] [--queries 3]
#include "checks/causal_mask.hpp"

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/error.hpp"

namespace kvlab::checks::causal_mask {
namespace {

// Largest S accepted: the kernel reading is [S, S] queries × S keys × head_dim S = S³ multiply-adds
// (17 M at 256, milliseconds).
constexpr int kMaxKeys = 256;

Expectation count_row(std::string quantity, double expected, double measured, std::string document = "",
                      std::string unit = "cells") {
  return {.quantity = std::move(quantity), .source = "004 §3.3", .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count: exact", .measured = measured, .document = std::move(document)};
}

// The rows of a mask, or a placeholder when it is too wide to draw.
std::string drawn(const CausalMaskGrid& m, int keys, const char* placeholder) {
  return keys <= 16 ? m.to_string() : std::string(placeholder);
}

void present(const CausalMaskMeasured& m, Result& r) {
  const int S = m.options.keys;
  Table cases{"the three cases: mask from absolute positions, tril(S − T), and the kernel's",
              {"case", "T", "S", "tril diagonal", "keys seen by each query", "allowed (rows)"}, {}};
  for (const MaskCase& c : m.cases) {
    std::string seen;
    for (int i = 0; i < c.queries; ++i) {
      if (i) seen += ' ';
      seen += std::to_string(c.kernel.visible(i));
    }
    if (S > 16) seen = fmt::format("{} .. {}", c.kernel.visible(0), c.kernel.visible(c.queries - 1));
    cases.rows.push_back({c.name, std::int64_t{c.queries}, std::int64_t{S}, std::int64_t{S - c.queries}, seen,
                          drawn(c.kernel, S, "(S > 16: not drawn)")});
  }
  Table pitfall{"1 query over S keys: top-left (is_causal) vs lower-right", {"mask", "keys seen", "allowed"}, {}};
  pitfall.rows.push_back({std::string("lower-right (positions)"), std::int64_t{m.decode_lower_right.visible(0)},
                          drawn(m.decode_lower_right, S, "…")});
  pitfall.rows.push_back({std::string("top-left (is_causal=True)"), std::int64_t{m.decode_top_left.visible(0)},
                          drawn(m.decode_top_left, S, "…")});
  r.metric("decode_keys_seen_lower_right", m.decode_kernel_visible);
  r.metric("decode_keys_seen_top_left", m.decode_top_left.visible(0));
  r.metric("chunk_cells_wrong_top_left", m.chunk_cells_wrong_top_left);
  r.tables.push_back(std::move(cases));
  r.tables.push_back(std::move(pitfall));
  r.notes.push_back(fmt::format("S = {} keys, chunk T = {}; masks are exact booleans (no dtype; seed {} unused)", S,
                                m.options.queries, m.seed));
  r.notes.push_back("The kernel's mask is read off grouped_query_attention itself: q = 0 makes every score equal and "
                    "V = identity makes output (i, j) = 1/n_i on the keys query i sees, exactly 0 on the others.");
}

}  // namespace

CausalMaskGrid kernel_mask(int n_query, int n_key, int q_pos0) {
  const Mat<double> q = Mat<double>::Zero(n_query, n_key);  // one head of head_dim S, all scores 0
  const Mat<double> k = Mat<double>::Ones(n_key, n_key);
  const Mat<double> v = Mat<double>::Identity(n_key, n_key);  // key j carries the unit vector e_j
  const Mat<double> out = grouped_query_attention<double>(q, ConstMatView<double>(k.data(), n_key, n_key),
                                                          ConstMatView<double>(v.data(), n_key, n_key), 1, 1,
                                                          n_key, q_pos0, true);
  CausalMaskGrid m{n_query, n_key, std::vector<unsigned char>(static_cast<std::size_t>(n_query) * n_key, 0)};
  for (int i = 0; i < n_query; ++i)
    for (int j = 0; j < n_key; ++j) m.cells[static_cast<std::size_t>(i) * n_key + j] = out(i, j) > 0 ? 1 : 0;
  return m;
}

CausalMaskMeasured measure_causal_mask(const CausalMaskOptions& o, const RunContext& ctx,
                                       const CausalMaskParts& parts) {
  const MaskBuilder lower_right = parts.lower_right ? parts.lower_right : MaskBuilder(causal_mask_from_positions);
  const QueryOffset offset = parts.query_offset ? parts.query_offset
                                                : QueryOffset([](int t, int s) { return s - t; });
  const int S = o.keys;
  CausalMaskMeasured m{.options = o, .seed = ctx.seed};
  for (const auto& [name, T] : {std::pair{"prefill (T = S)", S}, {"decode (T = 1)", 1}, {"chunk (T < S)", o.queries}}) {
    const CausalMaskGrid from_positions = lower_right(T, S);
    CausalMaskGrid kernel = kernel_mask(T, S, offset(T, S));
    m.cases.push_back({name, T, from_positions.mismatches(tril_mask(T, S, S - T)), kernel.mismatches(from_positions),
                       std::move(kernel)});
  }
  // The pitfall: is_causal=True is tril(0), aligned top-left.
  m.decode_lower_right = lower_right(1, S);
  m.decode_top_left = tril_mask(1, S, 0);
  m.decode_kernel_visible = kernel_mask(1, S, offset(1, S)).visible(0);
  m.chunk_cells_wrong_top_left = tril_mask(o.queries, S, 0).mismatches(lower_right(o.queries, S));
  return m;
}

std::vector<Expectation> judge_causal_mask(const CausalMaskMeasured& m) {
  const int S = m.options.keys, T = m.options.queries;
  std::vector<Expectation> rows;
  for (const MaskCase& c : m.cases) {
    rows.push_back(count_row(fmt::format("{}: mask from positions vs tril(diagonal = {}), T = {}, S = {}", c.name,
                                         S - c.queries, c.queries, S),
                             0, c.vs_tril, "ones(T, S).tril(diagonal = S − T)"));
    rows.push_back(count_row(fmt::format("{}: grouped_query_attention's mask vs from positions", c.name), 0,
                             c.kernel_vs_positions));
  }
  rows.push_back(count_row(fmt::format("keys the decode query sees, lower-right mask, 1 query × {} keys", S), S,
                           m.decode_lower_right.visible(0), "sees every cached key", "keys"));
  rows.push_back(count_row(fmt::format("keys the decode query sees in grouped_query_attention, 1 × {}", S), S,
                           m.decode_kernel_visible, "", "keys"));
  rows.push_back(count_row(fmt::format("keys the decode query sees under is_causal (tril(0)), 1 × {}", S), 1,
                           m.decode_top_left.visible(0), "只允许看第一个 key (key 0 only)", "keys"));
  rows.push_back(count_row(fmt::format("cells where is_causal differs from lower-right, chunk T = {}, S = {}", T, S),
                           static_cast<double>(T) * (S - T), m.chunk_cells_wrong_top_left));
  return rows;
}

const CheckDef<CausalMaskOptions, CausalMaskMeasured>& causal_mask_check() {
  static const CheckDef<CausalMaskOptions, CausalMaskMeasured> def{
      .spec = {.name = "causal-mask",
               .order = 335,
               .source = "004 §3.3; 000 §6.3",
               .summary = "mask for T queries over S keys = tril(S − T); is_causal sees key 0 only",
               .claim_zh = "T 个 query 对 S 个 key 的掩码 = tril(对角线偏移 S − T)；is_causal 只对齐到 key 0",
               .description =
                   "Builds the causal mask from absolute positions for prefill (T = S), decode (T = 1) and\n"
                   "a chunk (T < S), compares it with ones(T, S).tril(S − T) and with the mask the attention\n"
                   "kernel applies; reproduces SDPA is_causal's top-left pitfall (1 query sees key 0 only).",
               .derivation =
                   "Keys are the positions 0 .. S − 1; the T new queries are the last T of them, so new query i\n"
                   "sits at absolute position S − T + i. Causality: it may see keys j <= S − T + i, that is\n"
                   "j − i <= S − T: the mask is ones(T, S).tril(diagonal = S − T), aligned lower-right.\n"
                   "T = S: the lower triangle. T = 1: diagonal S − 1, the full row (all S keys).\n"
                   "is_causal=True uses tril(0), aligned top-left: for T = 1 it allows j <= 0, key 0 only;\n"
                   "for a chunk it hides S − T allowed keys from each of the T queries: T(S − T) cells.\n"
                   "Source: 004 §3.3 (000 §6.3: tril(diagonal = L_total − L_new)).",
},
      .options = {{"--keys", &CausalMaskOptions::keys, Allowed::integers(2, kMaxKeys),
                   "S, keys (cached + new positions)"},
                  {"--queries", &CausalMaskOptions::queries, Allowed::integers(1, kMaxKeys - 1),
                   "T of the chunk case (1 <= T < S)"}},
      .constraints = [](const CausalMaskOptions& o) { require_range("--queries", o.queries, 1, o.keys - 1); },
      .measure = [](const CausalMaskOptions& o, const RunContext& ctx) { return measure_causal_mask(o, ctx); },
      .judge = judge_causal_mask,
      .present = present,
      .claim =
          [](const CausalMaskMeasured& m) {
            return fmt::format("The causal mask of T new queries over S keys is ones(T, S).tril(S − T), from "
                               "absolute positions; is_causal's top-left triangle lets 1 query over {} keys see "
                               "only key 0.",
                               m.options.keys);
          }};
  return def;
}

Result run_causal_mask(const CausalMaskOptions& o, const RunContext& ctx, const CausalMaskParts& parts) {
  return run_check(causal_mask_check(), o, ctx, [&parts](const CausalMaskOptions& opts, const RunContext& c) {
    return measure_causal_mask(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(causal_mask_check);

}  // namespace kvlab::checks::causal_mask
