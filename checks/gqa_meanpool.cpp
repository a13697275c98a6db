// gqa-meanpool — 004 §2.4 (group 6; 003 Q6): MHA → GQA by mean-pooling each group's K/V heads.
// kvlab converts an 8-head MHA mini-GPT to G = 2 and G = 1 on heads made redundant in a controlled
// way (each head of a group is w_first + ε·(w_i − w_first), ε = 1 the random model .. 0 all equal)
// and compares layer 1's attention output; the trained mode (gqa_meanpool_trained.cpp) pools the
// committed MHA target.
//
//   kvlab gqa-meanpool [--tokens 16] [--dtype f64|f32] [--long] [--trained-weights|--weights F] [--windows 4]
#include "checks/gqa_meanpool.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/finite.hpp"
#include "model/gqa_convert.hpp"
#include "model/ops.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::gqa_meanpool {

template <class T>
Mat<T> layer1_attention(const MiniGPT<T>& model, const std::vector<int>& ids) {
  const auto& c = model.config();
  const auto& w = model.weights();
  const auto& b = w.blocks[0];
  Mat<T> x(static_cast<Eigen::Index>(ids.size()), c.d_model);
  for (std::size_t t = 0; t < ids.size(); ++t) x.row(t) = w.wte.row(ids[t]) + w.wpe.row(t);
  const Mat<T> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
  const Mat<T> q = linear(h, b.w_q, b.b_q), k = linear(h, b.w_k, b.b_k), v = linear(h, b.w_v, b.b_v);
  return grouped_query_attention<T>(q, ConstMatView<T>(k.data(), k.rows(), k.cols()),
                                    ConstMatView<T>(v.data(), v.rows(), v.cols()), c.n_head, c.n_kv_head, c.head_dim,
                                    0, true);
}
template Mat<float> layer1_attention(const MiniGPT<float>&, const std::vector<int>&);
template Mat<double> layer1_attention(const MiniGPT<double>&, const std::vector<int>&);

namespace {

constexpr const char* kSource = "004 §2.4 (group 6)";
// Largest --tokens: 2 groupings × 6 ε × (2 layer-1 attentions + 2 forwards) of S tokens (S = 256:
// under a second).
constexpr int kMaxTokens = 256;
constexpr double kEps[] = {1.0, 0.3, 0.1, 0.03, 0.01, 0.0};

/// Heads made redundant within each group of r: head i ← head_first + ε·(head i − head_first), for
/// the K and V projections and biases of every layer. ε = 1 leaves the model as drawn.
template <class T>
MiniGPT<T> redundant_heads(const MiniGPT<T>& mha, int r, double eps) {
  MiniGPT<T> m = mha;
  const int hd = mha.config().head_dim, n = mha.config().n_kv_head;
  const T e = static_cast<T>(eps);
  auto squeeze = [&](auto& w) {  // w: [rows, n·hd]
    for (int i = 0; i < n; ++i) {
      const int first = (i / r) * r;
      if (i == first) continue;
      w.middleCols(i * hd, hd) = w.middleCols(first * hd, hd) + e * (w.middleCols(i * hd, hd) - w.middleCols(first * hd, hd));
    }
  };
  for (auto& b : m.weights().blocks) {
    squeeze(b.w_k);
    squeeze(b.w_v);
    Mat<T> bk = b.b_k.transpose(), bv = b.b_v.transpose();
    squeeze(bk);
    squeeze(bv);
    b.b_k = bk.row(0).transpose();
    b.b_v = bv.row(0).transpose();
  }
  return m;
}

// The ε sweep for G = 2 and G = 1: each conversion's layer-1 attention and logits against the MHA's.
template <class T>
void sweep(GqaMeanpoolMeasured& m, const std::function<MiniGPT<T>(const MiniGPT<T>&, int)>& pool) {
  ModelConfig cfg;  // 8 heads, 8 K/V heads: MHA
  cfg.block_size = std::max(64, m.options.tokens);
  m.reduction_length = reduction_length(cfg);
  m.n_head = cfg.n_head;
  const MiniGPT<T> mha(cfg, m.seed);
  const auto ids = random_tokens(m.seed + 1, m.options.tokens, cfg.vocab_size);
  for (const int G : {2, 1})
    for (const double eps : kEps) {
      const MiniGPT<T> model = redundant_heads(mha, cfg.n_head / G, eps);
      const MiniGPT<T> gqa = pool(model, G);
      const Mat<T> a = layer1_attention(model, ids), b = layer1_attention(gqa, ids);
      auto c1 = model.make_cache(CacheKind::prealloc, m.options.tokens);
      auto c2 = gqa.make_cache(CacheKind::prealloc, m.options.tokens);
      const Mat<T> la = model.forward(ids, 0, *c1), lb = gqa.forward(ids, 0, *c2);
      const double err = static_cast<double>(max_abs(b - a));
      m.rows.push_back({G, eps, err, std::max(1.0, static_cast<double>(max_abs(a))),
                        err / static_cast<double>(max_abs(a)), static_cast<double>(max_abs(lb - la) / max_abs(la))});
    }
}

}  // namespace

GqaMeanpoolMeasured measure_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx,
                                         const GqaMeanpoolParts& parts) {
  GqaMeanpoolMeasured m{.options = o, .dtype = ctx.dtype, .seed = ctx.seed};
  with_dtype(ctx.dtype, [&]<class T>() {
    std::function<MiniGPT<T>(const MiniGPT<T>&, int)> pool;
    if constexpr (std::is_same_v<T, double>) pool = parts.pool_f64;
    if (!pool) pool = [](const MiniGPT<T>& mm, int g) { return mean_pool_kv_heads<T>(mm, g); };
    sweep<T>(m, pool);
    return 0;
  });
  // Trained mode: the committed MHA target against its conversions; skipped with a note when the
  // checkpoint or the text is absent.
  PoolerF32 pool32 = parts.pool_f32;
  if (!pool32) pool32 = [](const MiniGPT<float>& mm, int g) { return mean_pool_kv_heads<float>(mm, g); };
  m.trained = measure_gqa_trained({o.trained_weights, o.fortunes, o.long_run ? std::max(o.windows, 64) : o.windows,
                                   o.long_run}, pool32);
  return m;
}

std::vector<Expectation> judge_gqa_meanpool(const GqaMeanpoolMeasured& m) {
  std::vector<Expectation> rows;
  for (const int G : {2, 1}) {
    const int group = m.n_head / G;
    std::vector<double> errors;
    double exact_err = 0, exact_scale = 1;
    for (const GqaMeanpoolRow& row : m.rows) {
      if (row.G != G) continue;
      errors.push_back(row.err);
      if (row.eps == 0.0) exact_err = row.err, exact_scale = row.scale;
    }
    // A step counts when the error falls by more than rounding could account for.
    const double rounding = 2.0 * (m.reduction_length + group) * unit_roundoff(m.dtype) * exact_scale;
    rows.push_back({.quantity = fmt::format("G = {}: max |Δ attention| with equal heads in each group (ε = 0)", G),
                    .source = kSource, .unit = "", .expected = 0, .tolerance = rounding,
                    .why = fmt::format("rounding: 2·(n + r)·u·max(1, |att|), n = {} summed terms, r = {} heads averaged ({})",
                                       m.reduction_length, group, dtype_name(m.dtype)),
                    .measured = exact_err, .document = "同组头相近时平均的损失小得多"});
    int decreases = 0;
    for (std::size_t i = 1; i < errors.size(); ++i) decreases += errors[i] < errors[i - 1] - rounding ? 1 : 0;
    rows.push_back({.quantity = fmt::format("G = {}: steps of ε = 1 → 0 at which the error shrinks (of {})", G,
                                            errors.size() - 1),
                    .source = kSource, .unit = "steps", .expected = static_cast<double>(errors.size() - 1),
                    .tolerance = 0, .why = "a count; a step must shrink the error by more than the rounding bound above",
                    .measured = static_cast<double>(decreases), .document = "随机权重的头…平均之后信息大量丢失"});
  }
  for (Expectation& e : judge_gqa_trained(m.trained)) rows.push_back(std::move(e));
  return rows;
}

namespace {

void present(const GqaMeanpoolMeasured& m, Result& r) {
  Table sweep{"layer-1 attention output: GQA (mean-pooled) vs the MHA it came from",
              {"G", "ε (head spread in a group)", "max |Δ|", "relative max |Δ| / max |MHA|", "relative / ε",
               "relative max |Δlogits|"}, {}};
  std::map<int, double> random_rel;  // G → relative error at ε = 1, for the trained mode's table
  for (const GqaMeanpoolRow& row : m.rows) {
    sweep.rows.push_back({std::int64_t{row.G}, row.eps, row.err, row.rel,
                          row.eps > 0 ? Cell{row.rel / row.eps} : Cell{std::string("—")}, row.rel_logits});
    if (row.eps == 1.0) r.metric(fmt::format("relative_error_random_g{}", row.G), row.rel), random_rel[row.G] = row.rel;
    if (row.eps == 0.01) r.metric(fmt::format("relative_error_eps_0_01_g{}", row.G), row.rel);
  }
  r.tables.push_back(std::move(sweep));
  r.notes.push_back(fmt::format("MHA mini-GPT: 2 layers, d_model 64, 8 heads of 8, learned positions, random weights "
                                "N(0, 0.02²), {} tokens, {}, seed {}", m.options.tokens, dtype_name(m.dtype), m.seed));
  r.notes.push_back("ε = 1 is the random model as drawn: its heads are unrelated and mean-pooling them loses much. "
                    "The error is first order in ε (relative / ε about constant as ε → 0).");
  r.notes.push_back("The course's claim is about trained models (redundant heads, then ~5% uptraining recovering the "
                    "loss): the trained mode below (data/weights/target.safetensors; uptraining with --long) measures "
                    "it; the ε sweep shows the mechanism: the closer a group's heads, the smaller "
                    "the loss.");
  present_gqa_trained(m.trained, random_rel, r);
}

}  // namespace

const CheckDef<GqaMeanpoolOptions, GqaMeanpoolMeasured>& gqa_meanpool_check() {
  using O = GqaMeanpoolOptions;
  static const CheckDef<O, GqaMeanpoolMeasured> def{
      .spec = {.name = "gqa-meanpool",
               .order = 325,
               .source = "004 §2.4 (group 6); 003 Q6",
               .summary = "MHA → GQA by mean-pooling K/V heads: loss shrinks as a group's heads get closer",
               .claim_zh = "MHA → GQA 对 K/V 头做均值池化：组内各头越接近，损失越小",
               .description =
                   "Converts an 8-head MHA mini-GPT to GQA with G = 2 and G = 1 by averaging each group's K/V\n"
                   "projections, on random weights and on heads made redundant (spread ε within a group),\n"
                   "and measures the first layer's attention output error. Trained mode: the committed MHA\n"
                   "target's validation loss against its conversions; --long uptrains each ~5% of the steps.",
               .derivation =
                   "Mean-pooling replaces the r = h/G heads of a group by W̄ = (1/r)·sum W_i. If the heads are\n"
                   "W_i = W_0 + ε·D_i, then W̄ = W_0 + ε·D̄ and every head's K/V moves by ε·(D̄ − D_i): the output\n"
                   "error is first order in ε, and 0 when the heads are equal (ε = 0). Random heads are ε = 1\n"
                   "with unrelated D_i: large loss. Trained models have many redundant heads (small ε), hence\n"
                   "a small loss that ~5% uptraining recovers. Source: 004 §2.4 (group 6); GQA paper §2.1.",
               .claim = "MHA → GQA (G = 2, 1) by mean-pooling each group's K/V projections: exact when a group's "
                        "heads are equal, and the loss shrinks as they get closer; on random (unrelated) heads it is "
                        "large.",
               .traits = {.dtype = true}},
      // --weights: the name every other model check uses for a file; --trained-weights stays, since
      // option names are a contract. Its default and --fortunes' are said in words: an empty path shows none.
      .options = {{"--tokens", &O::tokens, Allowed::integers(1, kMaxTokens), "Positions compared"},
                  {"--trained-weights,--weights", &O::trained_weights, Allowed::path(),
                   "Trained mode: MHA checkpoint (default data/weights/target.safetensors)", "FILE"},
                  {"--fortunes", &O::fortunes, Allowed::path(),
                   "Trained mode: fortunes directory (default /usr/share/games/fortunes)"},
                  {"--windows", &O::windows, Allowed::integers(1, 4096), "Trained mode: validation windows (--long 64)"},
                  {"--long", &O::long_run, Allowed::any_value(),
                   "Trained mode: 64 windows, then uptrain each conversion ~5% of the steps"}},
      .constraints = {},
      .measure = [](const O& o, const RunContext& ctx) { return measure_gqa_meanpool(o, ctx); },
      .judge = judge_gqa_meanpool,
      .present = present};
  return def;
}

Result run_gqa_meanpool(const GqaMeanpoolOptions& o, const RunContext& ctx, const GqaMeanpoolParts& parts) {
  return run_check(gqa_meanpool_check(), o, ctx, [&parts](const GqaMeanpoolOptions& opts, const RunContext& c) {
    return measure_gqa_meanpool(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(gqa_meanpool_check);

}  // namespace kvlab::checks::gqa_meanpool
