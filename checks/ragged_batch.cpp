// ragged-batch — 003 Q10 (answer 10): requests of different lengths share the MLP, not attention.
//
// Claim: with requests of different lengths in one batch, the MLP can run over all their tokens
// flattened into one batch dimension, because tokens do not interact there; attention must stay
// per request, since each request has its own context (its own KV cache).
// Expected: (1) the MLP sublayer over the flattened [Σ n_r, d] rows equals the MLP of each request
// alone, max |Δ| exactly 0 (kvlab's linear/LayerNorm/GELU compute each row from that row alone, in
// a fixed order: design.md "Numerics"); (2) a block served ragged (MLP flattened, attention per
// request) equals each request run alone through the block, exactly 0 for the same reason;
// (3) attention over the flattened rows as one sequence changes the output of every request but
// the first (which, under the causal mask, sees only itself): a count, R − 1, exact.
//
//   kvlab ragged-batch [--requests 5] [--max-len 12]
#include "checks/ragged_batch.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"
#include "model/ragged.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::ragged_batch {
namespace {

constexpr const char* kName = "ragged-batch";
constexpr const char* kSource = "003 Q10 (answer 10)";
constexpr int kMaxRequests = 32;  // with kMaxLen: at most 4096 rows, whose one-sequence attention is quadratic
constexpr int kMaxLen = 128;

/// Request lengths in [1, max_len] and their hidden states, N(0, 1), from the seed.
std::vector<Mat<double>> draw_requests(const RaggedBatchOptions& o, std::uint64_t seed, int d_model) {
  Rng rng(seed + 2);
  std::vector<int> lengths(static_cast<std::size_t>(o.requests));
  for (int& n : lengths) n = 1 + static_cast<int>(rng.uniform() * o.max_len);
  std::vector<Mat<double>> xs;
  for (int n : lengths) {
    Mat<double> x(n, d_model);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.normal();
    xs.push_back(std::move(x));
  }
  return xs;
}

std::vector<int> lengths_of(const RaggedBatchMeasured& m) {
  std::vector<int> lengths;
  for (const RaggedRequest& q : m.requests) lengths.push_back(q.tokens);
  return lengths;
}

void present(const RaggedBatchMeasured& m, Result& r) {
  const RaggedBatchOptions& o = m.options;
  const RunContext& ctx = m.context;
  Table t{"per request: alone vs in the batch", {"request", "tokens", "rows in the batch", "MLP flattened: max |Δ|",
                                                  "block ragged: max |Δ|", "attention as one sequence: max |Δ|"}, {}};
  int offset = 0, changed = 0;
  double mlp_diff = 0, block_diff = 0;
  for (std::size_t i = 0; i < m.requests.size(); ++i) {
    const RaggedRequest& q = m.requests[i];
    t.rows.push_back({static_cast<std::int64_t>(i), std::int64_t{q.tokens},
                      fmt::format("{}..{}", offset, offset + q.tokens - 1), q.mlp_diff, q.block_diff, q.mixed_diff});
    offset += q.tokens;
    mlp_diff = nan_max(mlp_diff, q.mlp_diff);
    block_diff = nan_max(block_diff, q.block_diff);
    changed += q.mixed_diff > 0 ? 1 : 0;
  }
  r.tables.push_back(std::move(t));
  // What flattening buys: the weights are read once for all rows instead of once per request.
  const double d = m.config.d_model;
  const double mlp_weight_bytes = 2.0 * (d * 4 * d + 4 * d * d);  // 16-bit W_fc, W_proj
  const double mlp_flops = 16.0 * d * d * m.total_tokens;
  r.tables.push_back(Table{"MLP weight traffic at 16 bits (shown, not judged)",
                           {"schedule", "MLP FLOPs", "weight bytes read", "FLOP per weight byte"},
                           {{std::string("flattened: one pass over all tokens"), mlp_flops, mlp_weight_bytes,
                             mlp_flops / mlp_weight_bytes},
                            {std::string("one request at a time"), mlp_flops, mlp_weight_bytes * o.requests,
                             mlp_flops / (mlp_weight_bytes * o.requests)}}});
  r.metric("max_abs_diff_mlp", mlp_diff);
  r.metric("max_abs_diff_block", block_diff);
  r.metric_exact("requests_changed_by_mixing", static_cast<std::uint64_t>(changed));
  r.metric_exact("tokens", static_cast<std::uint64_t>(m.total_tokens));
  if (ctx.weights.empty())
    r.notes.push_back(fmt::format("one block of the mini-GPT (d_model 64, 8 query heads, 2 K/V heads, causal), "
                                  "float64, seed {}; request lengths and hidden states N(0, 1) from seed {}",
                                  ctx.seed, ctx.seed + 2));
  else
    r.notes.push_back(weights_note(m.config, ctx.weights) +
                      fmt::format("; its first block, float64; request lengths and hidden states N(0, 1) from "
                                  "seed {}", ctx.seed + 2));
  r.notes.push_back("real servers get the same effect with varlen attention (FlashAttention's cu_seqlens, vLLM's "
                    "PagedAttention): one kernel launch, but each query only reads its own request's keys.");
}

}  // namespace

RaggedBatchMeasured measure_ragged_batch(const RaggedBatchOptions& o, const RunContext& ctx,
                                         const RaggedBatchParts& parts) {
  const auto mlp = parts.mlp ? parts.mlp : [](const BlockWeights<double>& b, const Mat<double>& x) { return mlp_sublayer(b, x); };
  const auto batched_attention =
      parts.batched_attention ? parts.batched_attention
                              : [](const BlockWeights<double>& b, const ModelConfig& c, const Mat<double>& x,
                                   const std::vector<int>& lengths) { return ragged_attention_sublayer(b, c, x, lengths); };
  ModelConfig base;
  base.n_layer = 1;
  base.n_kv_head = 2;
  // --weights: the file's first block (its widths and heads); the claim holds for any weights.
  const MiniGPT<double> model = check_model<double>(
      base, ctx, "ragged-batch",
      {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (requests are causal sequences)"},
       {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (full causal attention)"}});
  RaggedBatchMeasured m{.options = o, .context = ctx, .config = model.config()};
  const ModelConfig& cfg = m.config;
  const BlockWeights<double>& block = model.weights().blocks[0];
  const std::vector<Mat<double>> xs = draw_requests(o, ctx.seed, cfg.d_model);
  std::vector<int> lengths;
  for (const auto& x : xs) lengths.push_back(static_cast<int>(x.rows())), m.total_tokens += static_cast<int>(x.rows());
  Mat<double> flat(m.total_tokens, cfg.d_model);
  for (int offset = 0; const auto& x : xs) flat.middleRows(offset, x.rows()) = x, offset += static_cast<int>(x.rows());

  // (1) MLP: flattened vs alone. (2) block: ragged vs alone. (3) attention as one sequence.
  const Mat<double> mlp_flat = mlp(block, flat);
  const Mat<double> block_ragged = mlp(block, batched_attention(block, cfg, flat, lengths));
  const Mat<double> mixed = attention_sublayer(block, cfg, flat);
  // A --weights block that overflows on these N(0, 1) inputs: the file's fault, one line, exit 2.
  require_finite_forward(model, mixed, "attention sublayer", 0);
  require_finite_forward(model, mlp_flat, "MLP sublayer", 0);
  int offset = 0;
  for (std::size_t r = 0; r < xs.size(); ++r) {
    const int n = lengths[r];
    const Mat<double> alone_attn = attention_sublayer(block, cfg, xs[r]);
    m.requests.push_back({n, max_abs(mlp_flat.middleRows(offset, n) - mlp_sublayer(block, xs[r])),
                          max_abs(block_ragged.middleRows(offset, n) - mlp_sublayer(block, alone_attn)),
                          max_abs(mixed.middleRows(offset, n) - alone_attn)});
    offset += n;
  }
  return m;
}

std::vector<Expectation> judge_ragged_batch(const RaggedBatchMeasured& m) {
  double mlp_diff = 0, block_diff = 0;
  int changed = 0;
  for (const RaggedRequest& q : m.requests) {
    mlp_diff = nan_max(mlp_diff, q.mlp_diff);
    block_diff = nan_max(block_diff, q.block_diff);
    changed += q.mixed_diff > 0 ? 1 : 0;
  }
  return {{.quantity = "MLP over the flattened tokens vs each request alone, max |Δ|", .source = kSource, .unit = "",
           .expected = 0, .tolerance = 0,
           .why = "exact: LayerNorm, linear and GELU compute each row from that row alone, summed in a fixed order",
           .measured = mlp_diff, .document = "MLP: 拍平 (flatten) 塞入同一个 batch 维度"},
          {.quantity = "block served ragged (MLP flattened, attention per request) vs each request alone, max |Δ|",
           .source = kSource, .unit = "", .expected = 0, .tolerance = 0,
           .why = "exact: the same per-row arithmetic, and each request's attention sees only its own rows",
           .measured = block_diff, .document = "Attention: 计算必须相互隔离"},
          {.quantity = "requests whose attention output changes when the flattened tokens are one sequence",
           .source = kSource, .unit = "requests", .expected = static_cast<double>(m.options.requests - 1),
           .tolerance = 0,
           .why = "a count: under the causal mask every request after the first attends to the requests stacked "
                  "before it; the first sees only itself",
           .measured = static_cast<double>(changed)}};
}

const CheckDef<RaggedBatchOptions, RaggedBatchMeasured>& ragged_batch_check() {
  static const CheckDef<RaggedBatchOptions, RaggedBatchMeasured> def{
      .spec = {.name = kName,
               .order = 380,
               .source = kSource,
               .summary = "ragged batch: MLP over flattened tokens = per request; attention stays per request",
               .claim_zh = "不等长 batch：展平后的 MLP 与逐请求计算一致；注意力仍按请求分开",
               .description =
                   "Stacks requests of different lengths into one [Σ n, d] matrix, runs a block's MLP once over\n"
                   "it and attention per request, and compares with each request run alone; then shows what\n"
                   "attention over the flattened rows as one sequence would do.",
               .derivation =
                   "MLP(x)_t = x_t + W_proj·GELU(W_fc·LN(x_t)): row t depends only on x_t, so stacking the rows of\n"
                   "many requests changes nothing and one GEMM over Σ n rows reads the weights once.\n"
                   "Attention(x)_t = Σ_j softmax_j(q_t·k_j) v_j mixes rows: over the stacked rows, request r's\n"
                   "tokens would attend to the requests before it. So attention runs per request (its own\n"
                   "KV cache), the MLP over the flattened batch. Source: 003 Q10 (answer 10).",
               .traits = {.weights = true}},
      .options = {{"--requests", &RaggedBatchOptions::requests, Allowed::integers(1, kMaxRequests),
                   "Requests in the batch"},
                  {"--max-len", &RaggedBatchOptions::max_len, Allowed::integers(1, kMaxLen),
                   "Longest request (lengths drawn in [1, max-len])"}},
      .measure = [](const RaggedBatchOptions& o, const RunContext& ctx) { return measure_ragged_batch(o, ctx); },
      .judge = judge_ragged_batch,
      .present = present,
      .claim =
          [](const RaggedBatchMeasured& m) {
            return fmt::format("{} requests of lengths {} in one batch: the MLP runs once over their {} tokens "
                               "flattened and gives each request exactly what it gets alone; attention must stay per "
                               "request.", m.options.requests, fmt::join(lengths_of(m), ", "), m.total_tokens);
          }};
  return def;
}

Result run_ragged_batch(const RaggedBatchOptions& o, const RunContext& ctx, const RaggedBatchParts& parts) {
  return run_check(ragged_batch_check(), o, ctx, [&parts](const RaggedBatchOptions& opts, const RunContext& c) {
    return measure_ragged_batch(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(ragged_batch_check);

}  // namespace kvlab::checks::ragged_batch
