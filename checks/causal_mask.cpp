// causal-mask — 004 §3.3 (000 §6.3): the three mask cases of a KV cache, and the is_causal pitfall.
//
// Claim: with a cache, T new queries meet S keys. New query i sits at absolute position S − T + i
// and may see keys 0 .. S − T + i, so the allowed matrix is torch.ones(T, S).tril(diagonal = S − T):
// the plain lower triangle for prefill (T = S), one full row for decode (T = 1), a lower-right
// aligned band for a chunk (T < S). SDPA's is_causal=True aligns the triangle top-left (tril(0)):
// with T = 1 and S = 8 the query sees key 0 only, where it should see all 8.
// kvlab builds the mask from absolute positions, compares it with tril(S − T) cell by cell, and
// reads the mask grouped_query_attention really applies off its output (q = 0, V = identity).
// Expected: every comparison is a count of mask cells, exact (tolerance 0): 0 mismatches; 8 keys
// seen by the decode query, 1 under is_causal; T·(S − T) cells wrong for a top-left chunk.
//
//   kvlab causal-mask [--keys 8] [--queries 3]
#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "checks/causal_mask.hpp"
#include "core/error.hpp"
#include "support/options.hpp"

namespace kvlab::checks {
namespace {

// Largest S accepted: the kernel reading is [S, S] queries × S keys × head_dim S = S³ multiply-adds
// (17 M at 256, milliseconds).
constexpr int kMaxKeys = 256;

Expectation count_row(std::string quantity, std::string source, double expected, double measured,
                      std::string document = "", std::string unit = "cells") {
  return {.quantity = std::move(quantity), .source = std::move(source), .unit = std::move(unit), .expected = expected,
          .tolerance = 0, .why = "a count: exact", .measured = measured,
          .document = std::move(document)};
}

}  // namespace

AttentionMask kernel_mask(int n_query, int n_key, int q_pos0) {
  const Mat<double> q = Mat<double>::Zero(n_query, n_key);  // one head of head_dim S, all scores 0
  const Mat<double> k = Mat<double>::Ones(n_key, n_key);
  const Mat<double> v = Mat<double>::Identity(n_key, n_key);  // key j carries the unit vector e_j
  const Mat<double> out = grouped_query_attention<double>(q, ConstMatView<double>(k.data(), n_key, n_key),
                                                          ConstMatView<double>(v.data(), n_key, n_key), 1, 1,
                                                          n_key, q_pos0, true);
  AttentionMask m{n_query, n_key, std::vector<unsigned char>(static_cast<std::size_t>(n_query) * n_key, 0)};
  for (int i = 0; i < n_query; ++i)
    for (int j = 0; j < n_key; ++j) m.cells[static_cast<std::size_t>(i) * n_key + j] = out(i, j) > 0 ? 1 : 0;
  return m;
}

Result run_causal_mask(const CausalMaskOptions& o, const RunContext& ctx, const CausalMaskParts& parts) {
  require_range("--keys", o.keys, 2, kMaxKeys);
  require_range("--queries", o.queries, 1, o.keys - 1);
  const MaskBuilder lower_right = parts.lower_right ? parts.lower_right : MaskBuilder(causal_mask_from_positions);
  const QueryOffset offset = parts.query_offset ? parts.query_offset
                                                : QueryOffset([](int t, int s) { return s - t; });
  const int S = o.keys;
  Result r;
  Table cases{"the three cases: mask from absolute positions, tril(S − T), and the kernel's",
              {"case", "T", "S", "tril diagonal", "keys seen by each query", "allowed (rows)"}, {}};
  struct Case {
    const char* name;
    int T;
  };
  const Case kCases[] = {{"prefill (T = S)", S}, {"decode (T = 1)", 1}, {"chunk (T < S)", o.queries}};
  for (const Case& c : kCases) {
    const AttentionMask from_positions = lower_right(c.T, S);
    const AttentionMask tril = tril_mask(c.T, S, S - c.T);
    const AttentionMask kernel = kernel_mask(c.T, S, offset(c.T, S));
    r.expect(count_row(fmt::format("{}: mask from positions vs tril(diagonal = {}), T = {}, S = {}", c.name, S - c.T,
                                   c.T, S),
                       "004 §3.3", 0, from_positions.mismatches(tril), "ones(T, S).tril(diagonal = S − T)"));
    r.expect(count_row(fmt::format("{}: grouped_query_attention's mask vs from positions", c.name), "004 §3.3", 0,
                       kernel.mismatches(from_positions)));
    std::string seen;
    for (int i = 0; i < c.T; ++i) {
      if (i) seen += ' ';
      seen += std::to_string(kernel.visible(i));
    }
    cases.rows.push_back({std::string(c.name), std::int64_t{c.T}, std::int64_t{S}, std::int64_t{S - c.T},
                          S <= 16 ? seen : fmt::format("{} .. {}", kernel.visible(0), kernel.visible(c.T - 1)),
                          S <= 16 ? kernel.to_string() : std::string("(S > 16: not drawn)")});
  }

  // The pitfall: is_causal=True is tril(0), aligned top-left.
  const AttentionMask decode_right = lower_right(1, S), decode_left = tril_mask(1, S, 0);
  const AttentionMask decode_kernel = kernel_mask(1, S, offset(1, S));
  r.expect(count_row(fmt::format("keys the decode query sees, lower-right mask, 1 query × {} keys", S), "004 §3.3",
                     S, decode_right.visible(0), "sees every cached key", "keys"));
  r.expect(count_row(fmt::format("keys the decode query sees in grouped_query_attention, 1 × {}", S), "004 §3.3",
                     S, decode_kernel.visible(0), "", "keys"));
  r.expect(count_row(fmt::format("keys the decode query sees under is_causal (tril(0)), 1 × {}", S),
                     "004 §3.3", 1, decode_left.visible(0), "只允许看第一个 key (key 0 only)", "keys"));
  const AttentionMask chunk_right = lower_right(o.queries, S), chunk_left = tril_mask(o.queries, S, 0);
  r.expect(count_row(fmt::format("cells where is_causal differs from lower-right, chunk T = {}, S = {}", o.queries, S),
                     "004 §3.3", static_cast<double>(o.queries) * (S - o.queries),
                     chunk_left.mismatches(chunk_right)));

  Table pitfall{"1 query over S keys: top-left (is_causal) vs lower-right", {"mask", "keys seen", "allowed"}, {}};
  pitfall.rows.push_back({std::string("lower-right (positions)"), std::int64_t{decode_right.visible(0)},
                          S <= 16 ? decode_right.to_string() : std::string("…")});
  pitfall.rows.push_back({std::string("top-left (is_causal=True)"), std::int64_t{decode_left.visible(0)},
                          S <= 16 ? decode_left.to_string() : std::string("…")});
  r.metric("decode_keys_seen_lower_right", decode_kernel.visible(0));
  r.metric("decode_keys_seen_top_left", decode_left.visible(0));
  r.metric("chunk_cells_wrong_top_left", chunk_left.mismatches(chunk_right));
  r.tables.push_back(std::move(cases));
  r.tables.push_back(std::move(pitfall));
  r.notes.push_back(fmt::format("S = {} keys, chunk T = {}; masks are exact booleans (no dtype; seed {} unused)", S,
                                o.queries, ctx.seed));
  r.notes.push_back("The kernel's mask is read off grouped_query_attention itself: q = 0 makes every score equal and "
                    "V = identity makes output (i, j) = 1/n_i on the keys query i sees, exactly 0 on the others.");
  r.check = "causal-mask";
  r.source = "004 §3.3; 000 §6.3";
  r.claim = fmt::format("The causal mask of T new queries over S keys is ones(T, S).tril(S − T), from absolute "
                        "positions; is_causal's top-left triangle lets 1 query over {} keys see only key 0.", S);
  return r;
}

namespace {

class CausalMask final : public Check {
 public:
  std::string name() const override { return "causal-mask"; }
  std::string source() const override { return "004 §3.3; 000 §6.3"; }
  std::string summary() const override { return "mask for T queries over S keys = tril(S − T); is_causal sees key 0 only"; }
  std::string description() const override {
    return "Builds the causal mask from absolute positions for prefill (T = S), decode (T = 1) and\n"
           "a chunk (T < S), compares it with ones(T, S).tril(S − T) and with the mask the attention\n"
           "kernel applies; reproduces SDPA is_causal's top-left pitfall (1 query sees key 0 only).";
  }
  std::string derivation() const override {
    return "Keys are the positions 0 .. S − 1; the T new queries are the last T of them, so new query i\n"
           "sits at absolute position S − T + i. Causality: it may see keys j <= S − T + i, that is\n"
           "j − i <= S − T: the mask is ones(T, S).tril(diagonal = S − T), aligned lower-right.\n"
           "T = S: the lower triangle. T = 1: diagonal S − 1, the full row (all S keys).\n"
           "is_causal=True uses tril(0), aligned top-left: for T = 1 it allows j <= 0, key 0 only;\n"
           "for a chunk it hides S − T allowed keys from each of the T queries: T(S − T) cells.\n"
           "Source: 004 §3.3 (000 §6.3: tril(diagonal = L_total − L_new)).";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--keys", opts_.keys, "S, keys (cached + new positions)")->check(IntRange(2, kMaxKeys));
    sub.add_option("--queries", opts_.queries, "T of the chunk case (1 <= T < S)")->check(IntRange(1, kMaxKeys - 1));
  }
  Result run(const RunContext& ctx) override { return run_causal_mask(opts_, ctx); }

 private:
  CausalMaskOptions opts_;
};

KVLAB_REGISTER_CHECK(335, CausalMask);

}  // namespace
}  // namespace kvlab::checks
