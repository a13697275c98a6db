// The question bank of `kvlab selftest`: every question of 004 §C, 004 §B's exercises 1–5,
// 003's review questions 1–10 and the derivations of 000 §7, in both languages.
//
// Multiple-choice questions list the right choice first (make_selftest shuffles them). The wrong
// choices are the misreadings the documents themselves warn about. Numeric questions draw their
// figures from the catalogues and compute the answer with the library functions the checks use.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cost/generation_flops.hpp"
#include "cost/kv_cache.hpp"
#include "report/writers.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "quiz/selftest_bank.hpp"
#include "spec/acceptance.hpp"
#include "spec/expected_tokens.hpp"

namespace kvlab::selftest_detail {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

using L = SelftestLayer;

template <class T>
const T& pick(Rng& rng, const std::vector<T>& items) {
  const auto i = static_cast<std::size_t>(rng.uniform() * static_cast<double>(items.size()));
  return items[std::min(i, items.size() - 1)];
}

/// A multiple-choice question: the right choice first, then the wrong ones.
BankEntry choice(std::string id, std::string source, L layer, Bilingual text, Bilingual right,
                 std::vector<Bilingual> wrong, Bilingual explanation, std::string command) {
  SelftestQuestion q;
  q.numeric = false;
  q.text = std::move(text);
  q.choices.push_back(std::move(right));
  for (auto& w : wrong) q.choices.push_back(std::move(w));
  q.correct = 0;
  q.explanation = std::move(explanation);
  q.command = std::move(command);
  return {std::move(id), std::move(source), layer, [q](Rng&) { return q; }};
}

// ---- Numeric questions -------------------------------------------------------------------------

// Dense catalogue models without sliding-window layers (their cache is the closed form of 004 §1.4).
const std::vector<std::string> kFullAttentionModels = {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
                                                       "llama-3-70b", "qwen2-7b", "falcon-7b"};
// 7B-class dense models with a parameter count in the catalogue (one GPU holds them in bf16).
const std::vector<std::string> k7bModels = {"llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b"};

/// KV cache in GiB of `model` with `kv_heads` (0: its own) at batch × ctx in bf16 (004 §1.4).
SelftestQuestion kv_cache_question(const std::string& model, std::uint64_t batch, std::uint64_t ctx,
                                   std::uint64_t kv_heads) {
  SelftestQuestion q;
  q.numeric = true;
  q.model = model;
  q.batch = batch;
  q.ctx = ctx;
  const ModelSpec m = load_model(model);
  q.kv_heads = kv_heads == 0 ? m.n_kv_head : kv_heads;
  KvQuery kq{batch, ctx, CacheDtype::bf16, {}};
  if (kv_heads != 0) kq.kv_heads = kv_heads;
  const KvCacheSize size = kv_cache_size(m, kq);
  const std::string plural = m.n_kv_head == 1 ? "" : "s";
  const std::string variant_en = kv_heads == 0 ? fmt::format("as built ({} KV head{})", m.n_kv_head, plural)
                                 : kv_heads == m.n_head ? fmt::format("turned into MHA ({} KV heads)", kv_heads)
                                 : kv_heads == 1        ? std::string("turned into MQA (1 KV head)")
                                                        : fmt::format("with {} KV heads", kv_heads);
  const std::string variant_zh = kv_heads == 0 ? fmt::format("按原结构（{} 个 KV 头）", m.n_kv_head)
                                 : kv_heads == m.n_head ? fmt::format("换成 MHA（{} 个 KV 头）", kv_heads)
                                 : kv_heads == 1        ? std::string("换成 MQA（1 个 KV 头）")
                                                        : fmt::format("{} 个 KV 头", kv_heads);
  q.text = {fmt::format("KV cache of {} {}: {} layers, head_dim {}, batch {} × sequence {}, bf16 (2 B). How many GiB?",
                        model, variant_en, size.layout.n_layer, size.layout.head_dim, batch, ctx),
            fmt::format("{} {}：{} 层，d_head = {}，batch {} × 序列长 {}，bf16（每数 2 字节）。KV Cache 占多少 GiB？",
                        model, variant_zh, size.layout.n_layer, size.layout.head_dim, batch, ctx)};
  q.answer = static_cast<double>(size.total_bytes) / kGiB;
  q.unit = "GiB";
  q.tolerance_rel = 0.01;
  const std::string arithmetic =
      fmt::format("2 · {} · {} · {} · ({} · {}) · 2 B = {} B = {:.4g} GiB", size.layout.n_layer, size.layout.kv_heads,
                  size.layout.head_dim, batch, ctx, group_thousands(size.total_bytes), q.answer);
  q.worked = {"2 (K and V) × L × n_kv × d_head × (batch × length) × bytes: " + arithmetic,
              "2（K、V 各一份）× L × n_kv × d_head ×（batch × 序列长）× 每数字节数：" + arithmetic};
  q.explanation = {"The cache grows linearly in layers, K/V heads, length and batch; only n_kv changes between MHA, "
                   "GQA and MQA. A GiB is 2^30 B, 7.4% more than a GB.",
                   "缓存随层数、KV 头数、长度和 batch 线性增长；MHA、GQA、MQA 之间只有 n_kv 不同。1 GiB = 2^30 字节，比 1 GB 大 "
                   "7.4%。"};
  q.command = fmt::format("kvlab kv-size --model {} --batch {} --ctx {}{}", model, batch, ctx,
                          kv_heads == 0 ? std::string() : fmt::format(" --kv-heads {}", kv_heads));
  return q;
}

SelftestQuestion c8_kv_cache(Rng& rng) {
  const std::string model = pick(rng, kFullAttentionModels);
  const ModelSpec m = load_model(model);
  const std::uint64_t batch = pick(rng, std::vector<std::uint64_t>{1, 4, 8, 16, 32, 64});
  const std::uint64_t ctx = pick(rng, std::vector<std::uint64_t>{2048, 4096, 8192, 32768});
  // As built, as MHA or as MQA: the three rows of 004 §1.4's 70B question.
  const std::uint64_t kv_heads = pick(rng, std::vector<std::uint64_t>{0, 0, m.n_head, 1});
  return kv_cache_question(model, batch, ctx, kv_heads == m.n_kv_head ? 0 : kv_heads);
}

SelftestQuestion b2b_llama3_8b(Rng& rng) {
  const std::uint64_t batch = pick(rng, std::vector<std::uint64_t>{8, 16, 32});
  const std::uint64_t ctx = pick(rng, std::vector<std::uint64_t>{4096, 8192, 16384});
  return kv_cache_question("llama-3-8b", batch, ctx, 0);
}

SelftestQuestion c9a_ridge(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  q.gpu = pick(rng, gpu_names());
  const GpuSpec g = load_gpu(q.gpu);
  q.text = {fmt::format("The {} peaks at {:.4g} TFLOP/s (dense bf16) and reads {:.4g} TB/s from its memory. Where is "
                        "its ridge point, in FLOP per byte?",
                        q.gpu, g.bf16_flops_per_s / 1e12, g.bandwidth_bytes_per_s / 1e12),
            fmt::format("{} 的 bf16 稠密峰值 {:.4g} TFLOP/s，显存带宽 {:.4g} TB/s。它的拐点是多少 FLOP/字节？", q.gpu,
                        g.bf16_flops_per_s / 1e12, g.bandwidth_bytes_per_s / 1e12)};
  q.answer = ridge_flops_per_byte(g);
  q.unit = "FLOP/B";
  q.tolerance_rel = 0.01;
  const std::string arithmetic =
      fmt::format("{:.4g} FLOP/s / {:.4g} B/s = {:.4g} FLOP/B", g.bf16_flops_per_s, g.bandwidth_bytes_per_s, q.answer);
  q.worked = {"ridge = peak FLOP/s / bandwidth B/s = " + arithmetic, "拐点 = 峰值算力 / 显存带宽 = " + arithmetic};
  q.explanation = {"Arithmetic intensity is FLOPs per byte moved; above the ridge the GPU is compute-bound, below it "
                   "bandwidth-bound (A100 80GB: 312 TFLOP/s / 2.04 TB/s ≈ 153).",
                   "算术强度 = FLOPs ÷ 读写的字节数；高于拐点是算力瓶颈，低于拐点是带宽瓶颈（A100 80GB：312 TFLOP/s ÷ 2.04 "
                   "TB/s ≈ 153）。"};
  q.command = fmt::format("kvlab roofline --gpu {}", q.gpu);
  return q;
}

/// Batch-1 decode upper bound of `model` on `gpu` from the weight reads alone (004 §1.5).
SelftestQuestion decode_bound_question(const std::string& model, const std::string& gpu) {
  SelftestQuestion q;
  q.numeric = true;
  q.model = model;
  q.gpu = gpu;
  const ModelSpec m = load_model(model);
  const GpuSpec g = load_gpu(gpu);
  const double n = static_cast<double>(m.num_parameters.value_or(0));
  if (n <= 0) throw std::logic_error("selftest: catalogue model " + model + " lacks num_parameters");
  const double bytes = weight_bytes(n, 2.0);
  q.text = {fmt::format("{} has N = {} parameters in bf16 (2 B each). On the {} ({:.4g} TB/s), what is the upper bound "
                        "on decode speed at batch 1, counting only the weight reads, in tokens/s?",
                        model, group_thousands(*m.num_parameters), gpu, g.bandwidth_bytes_per_s / 1e12),
            fmt::format("{} 有 N = {} 个参数，bf16 存储（每个 2 字节）。在 {}（带宽 {:.4g} TB/s）上，batch=1 解码的吞吐上限"
                        "（只算读权重）是多少 token/s？",
                        model, group_thousands(*m.num_parameters), gpu, g.bandwidth_bytes_per_s / 1e12)};
  q.answer = g.bandwidth_bytes_per_s / bytes;
  q.unit = "tok/s";
  q.tolerance_rel = 0.02;
  const std::string arithmetic = fmt::format("2 B · {} = {:.4g} GB; {:.4g} GB/s / {:.4g} GB = {:.4g} tok/s",
                                             group_thousands(*m.num_parameters), bytes / 1e9, g.bandwidth_bytes_per_s / 1e9,
                                             bytes / 1e9, q.answer);
  q.worked = {"each token reads every weight once: " + arithmetic, "每个 token 要把全部权重读一遍：" + arithmetic};
  q.explanation = {"At batch 1 the intensity is about 1 FLOP/B, two orders below the ridge: the bound is set by "
                   "bandwidth, not compute (7B on an A100: about 140 tok/s). The KV cache and the FLOPs only lower it.",
                   "batch=1 时算术强度约 1，比拐点低两个数量级：上限由带宽决定，与算力无关（7B 在 A100 上约 140 token/s）。"
                   "KV Cache 和计算只会让它更低。"};
  q.command = fmt::format("kvlab roofline --model {} --gpu {}", model, gpu);
  return q;
}

SelftestQuestion c9b_decode_bound(Rng& rng) {
  const std::string model = pick(rng, k7bModels);
  return decode_bound_question(model, pick(rng, gpu_names()));
}

SelftestQuestion b2c_decode_bound(Rng& rng) { return decode_bound_question("llama-2-7b", pick(rng, gpu_names())); }

SelftestQuestion b1_intensity(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  q.model = "llama-2-7b";
  q.gpu = pick(rng, gpu_names());
  q.batch = pick(rng, std::vector<std::uint64_t>{1, 8, 16, 64});
  q.ctx = pick(rng, std::vector<std::uint64_t>{512, 1024, 4096});
  const ModelSpec m = load_model(q.model);
  const GpuSpec g = load_gpu(q.gpu);
  DecodeQuery dq;
  dq.n_params = static_cast<double>(*m.num_parameters);
  dq.bytes_per_param = 2.0;
  dq.kv = KvQuery{q.batch, q.ctx, CacheDtype::bf16, {}};
  const DecodeStep s = decode_step(m, g, dq);
  q.text = {fmt::format("Group 5 of 004 §1.5 on the {}: {} (N = {}, {} layers, {} heads of d_head {}, MHA, bf16) "
                        "decodes one token for each of {} sequences that each hold {} cached positions. Count FLOPs "
                        "= 2·N·B + 4·B·ctx·L·h·d_head and bytes = 2·N + B·ctx·(KV bytes per token). Arithmetic "
                        "intensity, in FLOP/B?",
                        q.gpu, q.model, group_thousands(*m.num_parameters), m.n_layer, m.n_head, m.head_dim, q.batch, q.ctx),
            fmt::format("004 §1.5 第 5 组换到 {} 上：{}（N = {}，{} 层，{} 个头、d_head = {}，MHA，bf16），batch 里 {} "
                        "条序列各已缓存 {} 个位置，各解码一个 token。FLOPs = 2·N·B + 4·B·ctx·L·h·d_head，字节 = 2·N + "
                        "B·ctx·(每 token 的 KV 字节)。算术强度是多少 FLOP/字节？",
                        q.gpu, q.model, group_thousands(*m.num_parameters), m.n_layer, m.n_head, m.head_dim, q.batch, q.ctx)};
  q.answer = s.intensity;
  q.unit = "FLOP/B";
  q.tolerance_rel = 0.02;
  const std::string arithmetic =
      fmt::format("FLOPs = {:.4g} + {:.4g} = {:.4g}; bytes = {:.4g} (weights) + {:.4g} (KV) = {:.4g}; "
                  "{:.4g} / {:.4g} = {:.4g} FLOP/B (ridge {:.4g}: {}-bound)",
                  s.flops_weights, s.flops_attention, s.flops, s.weight_bytes, static_cast<double>(s.kv_bytes),
                  s.bytes, s.flops, s.bytes, s.intensity, s.ridge, bound_name(s.bound));
  q.worked = {arithmetic, arithmetic};
  q.explanation = {"The weights are read once per step and used B times, so a batch amortizes them; each sequence's "
                   "KV cache is read for its own query only, so it does not amortize, and a long context pulls the "
                   "intensity back down.",
                   "权重每步读一次、用 B 次，batch 能摊薄它；每条序列的 KV Cache 只被它自己的 query 用，摊不薄，上下文越长"
                   "算术强度越往回掉。"};
  q.command = fmt::format("kvlab roofline --model {} --gpu {} --batch {} --ctx {}", q.model, q.gpu, q.batch, q.ctx);
  return q;
}

SelftestQuestion b5_naive_over_cached(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  q.tokens = pick(rng, std::vector<std::uint64_t>{64, 128, 255, 512, 1024});
  q.width = pick(rng, std::vector<std::uint64_t>{256, 1024, 4096});
  const double naive = static_cast<double>(naive_generation_flops(q.tokens, q.width));
  const double cached = static_cast<double>(cached_generation_flops(q.tokens, q.width));
  q.text = {fmt::format("Generating T = {} tokens through one layer of width d = {} (MHA, MLP 4d): naive generation "
                        "recomputes the prefix, 12·T(T+1)·d² + (2/3)·T(T+1)(T+2)·d FLOPs in all; cached generation "
                        "does 24·T·d² + 2·T(T+1)·d. How many times more FLOPs does the naive one do?",
                        q.tokens, q.width),
            fmt::format("一层宽 d = {}（MHA，MLP 4d）生成 T = {} 个 token：朴素生成每步重算前缀，累计 12·T(T+1)·d² + "
                        "(2/3)·T(T+1)(T+2)·d FLOPs；缓存生成累计 24·T·d² + 2·T(T+1)·d。朴素生成的计算量是缓存的多少倍？",
                        q.width, q.tokens)};
  q.answer = naive / cached;
  q.unit = "×";
  q.tolerance_rel = 0.01;
  const std::string arithmetic = fmt::format("{:.4g} / {:.4g} = {:.4g}×", naive, cached, q.answer);
  q.worked = {"naive / cached = " + arithmetic + " (about (T + 1) / 2 while d² dominates)",
              "朴素 / 缓存 = " + arithmetic + "（d² 项占主导时约为 (T + 1) / 2）"};
  q.explanation = {"O(T²d² + T³d) against O(Td² + T²d): the waste grows with the length, so the measured per-token "
                   "time of naive generation rises with T while the cached one stays nearly flat.",
                   "O(T²d²+T³d) 对 O(Td²+T²d)：生成越长浪费越大，所以实测朴素生成的每 token 耗时随长度上升，缓存生成基本持平。"};
  q.command = "kvlab bench-generate";
  return q;
}

/// A distribution over 4 tokens in steps of 0.05 (every probability at least 0.05).
std::vector<double> draw_distribution(Rng& rng) {
  std::vector<int> cuts;
  while (cuts.size() < 3) {
    const int c = 1 + static_cast<int>(rng.uniform() * 19.0);
    if (c >= 1 && c <= 19 && std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<double> p;
  int last = 0;
  for (int c : cuts) p.push_back((c - last) / 20.0), last = c;
  p.push_back((20 - last) / 20.0);
  return p;
}

std::string dist_text(const std::vector<double>& d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) s += fmt::format("{}{:.2f}", i ? ", " : "", d[i]);
  return s + ")";
}

/// p and q over 4 tokens with p > q on at least two tokens (so that the residual p' is not one-hot).
void draw_pair(Rng& rng, SelftestQuestion& q) {
  for (;;) {
    q.p = draw_distribution(rng);
    q.q = draw_distribution(rng);
    int above = 0;
    for (std::size_t i = 0; i < q.p.size(); ++i) above += q.p[i] > q.q[i] + 1e-12;
    if (above >= 2) return;
  }
}

SelftestQuestion s72_alpha(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  draw_pair(rng, q);
  q.text = {fmt::format("Target p = {} and draft q = {} over four tokens. A draft token x ~ q is accepted with "
                        "probability min(1, p(x)/q(x)). What is the acceptance rate α?",
                        dist_text(q.p), dist_text(q.q)),
            fmt::format("四个 token 上，目标模型 p = {}，草稿模型 q = {}。草稿 token x ~ q 以概率 min(1, p(x)/q(x)) 接受。"
                        "接受率 α 是多少？",
                        dist_text(q.p), dist_text(q.q))};
  q.answer = spec::acceptance_rate(q.p, q.q);
  q.unit = "";
  q.tolerance_rel = 0.01;
  std::string terms;
  for (std::size_t i = 0; i < q.p.size(); ++i) terms += fmt::format("{}{:.2f}", i ? " + " : "", std::min(q.p[i], q.q[i]));
  const std::string arithmetic = fmt::format("α = Σ min(p, q) = {} = {:.4g} = 1 − ½‖p − q‖₁", terms, q.answer);
  q.worked = {arithmetic, arithmetic};
  q.explanation = {"P(accept and X = x) = q(x)·min(1, p(x)/q(x)) = min(p(x), q(x)); summed over x that is α, and "
                   "because Σp = Σq = 1 it equals 1 − TV(p, q).",
                   "P(接受且 X = x) = q(x)·min(1, p(x)/q(x)) = min(p(x), q(x))；对 x 求和就是 α，又因 Σp = Σq = 1，它等于 "
                   "1 − TV(p, q)。"};
  q.command = "kvlab spec-alpha";
  return q;
}

SelftestQuestion s73_residual(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  draw_pair(rng, q);
  // A token where the target has more mass than the draft (p' > 0 there); p != q guarantees one.
  std::vector<std::size_t> more;
  for (std::size_t i = 0; i < q.p.size(); ++i)
    if (q.p[i] > q.q[i]) more.push_back(i);
  q.token = pick(rng, more);
  q.text = {fmt::format("Target p = {} and draft q = {} over tokens 1–4. After a rejection the replacement is drawn "
                        "from the residual p'. What is p'(token {})?",
                        dist_text(q.p), dist_text(q.q), q.token + 1),
            fmt::format("token 1–4 上，目标模型 p = {}，草稿模型 q = {}。被拒后从残差分布 p' 重新采样。p'(token {}) 是多少？",
                        dist_text(q.p), dist_text(q.q), q.token + 1)};
  q.answer = spec::residual_distribution(q.p, q.q)[q.token];
  q.unit = "";
  q.tolerance_rel = 0.01;
  double z = 0.0;
  for (std::size_t i = 0; i < q.p.size(); ++i) z += std::max(0.0, q.p[i] - q.q[i]);
  const std::string arithmetic =
      fmt::format("p'(x) = max(0, p(x) − q(x)) / Σ max(0, p − q) = ({:.2f} − {:.2f}) / {:.2f} = {:.4g}",
                  q.p[q.token], q.q[q.token], z, q.answer);
  q.worked = {arithmetic + " (the denominator is 1 − α)", arithmetic + "（分母就是 1 − α）"};
  q.explanation = {"The residual puts back the mass the accept path could not give: min(p, q) + (1 − α)·p' = p.",
                   "残差分布补上接受路径给不出的那部分概率：min(p, q) + (1 − α)·p' = p。"};
  q.command = "kvlab spec-residual";
  return q;
}

SelftestQuestion s74_etau(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  q.alpha = pick(rng, std::vector<double>{0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9});
  q.k = pick(rng, std::vector<int>{2, 3, 4, 5, 6, 8});
  q.text = {fmt::format("Speculative decoding with K = {} draft tokens per step, each accepted independently with α = "
                        "{}: expected tokens per target forward, E[τ]?",
                        q.k, q.alpha),
            fmt::format("投机解码每步草稿 K = {} 个 token，每个位置独立以 α = {} 接受：每次目标模型前向的期望生成 token "
                        "数 E[τ] 是多少？",
                        q.k, q.alpha)};
  q.answer = spec::expected_tokens(q.alpha, q.k);
  q.unit = "tokens";
  q.tolerance_rel = 0.01;
  const std::string arithmetic = fmt::format("E[τ] = (1 − α^(K+1)) / (1 − α) = (1 − {}^{}) / (1 − {}) = {:.4g}",
                                             q.alpha, q.k + 1, q.alpha, q.answer);
  q.worked = {arithmetic, arithmetic};
  q.explanation = {"j accepted then a rejection emits j + 1 tokens; all K accepted emits K + 1 (the bonus token); the "
                   "geometric sum gives the closed form.",
                   "前 j 个接受、第 j+1 个被拒输出 j+1 个 token；全部接受输出 K+1 个（含 bonus token）；几何级数化简得闭式。"};
  q.command = fmt::format("kvlab spec-etau --alpha {} --k {}", q.alpha, q.k);
  return q;
}

SelftestQuestion s74_speedup(Rng& rng) {
  SelftestQuestion q;
  q.numeric = true;
  q.alpha = pick(rng, std::vector<double>{0.6, 0.7, 0.8, 0.9});
  q.k = pick(rng, std::vector<int>{2, 3, 4, 5});
  q.cost_ratio = pick(rng, std::vector<double>{0.02, 0.05, 0.1, 0.2});
  q.text = {fmt::format("α = {}, K = {}, and one draft forward costs c = {} of a target forward. Speedup over plain "
                        "decoding, E[τ] / (1 + K·c)?",
                        q.alpha, q.k, q.cost_ratio),
            fmt::format("α = {}，K = {}，草稿模型一次前向的代价是目标模型的 c = {} 倍。相对普通解码的加速比 E[τ] / (1 + "
                        "K·c) 是多少？",
                        q.alpha, q.k, q.cost_ratio)};
  q.answer = spec::speedup(q.alpha, q.k, q.cost_ratio);
  q.unit = "×";
  q.tolerance_rel = 0.02;
  const double etau = spec::expected_tokens(q.alpha, q.k);
  const std::string arithmetic = fmt::format("E[τ] = (1 − {}^{}) / (1 − {}) = {:.4g}; {:.4g} / (1 + {}·{}) = {:.4g}×",
                                             q.alpha, q.k + 1, q.alpha, etau, etau, q.k, q.cost_ratio, q.answer);
  q.worked = {arithmetic, arithmetic};
  q.explanation = {"The numerator is the tokens one step yields, the denominator one target verify plus K draft "
                   "forwards: a draft that is too large (c big) eats the gain.",
                   "分子是一步的平均接受 token 数，分母是一次目标模型验证加 K 次草稿前向：草稿太大（c 大）会吃掉收益。"};
  q.command = "kvlab spec-speedup";
  return q;
}

BankEntry numeric(std::string id, std::string source, L layer, SelftestQuestion (*draw)(Rng&)) {
  return {std::move(id), std::move(source), layer, draw};
}

// ---- The bank ----------------------------------------------------------------------------------

BankEntry q_004C_01() {
  return choice(
      "004C-01", "004 §C 1", L::intuition,
      {"Naive generation runs the whole context through the model at every step. Where is the waste, and what is "
       "the cumulative cost of T tokens through one layer of width d?",
       "朴素生成每一步都把整个上下文前向一遍。浪费在哪里？一层（宽 d）生成 T 个 token 的累计代价是多少阶？"},
      {"each step recomputes the whole prefix: O(T²d² + T³d) in all, O(Td² + T²d) with a cache",
       "每步重算整个前缀：累计 O(T²d² + T³d)，缓存后 O(Td² + T²d)"},
      {{"the waste is in sampling the next token: O(T·d) in all, the same with a cache",
        "浪费在每步采样下一个 token 的 softmax 上：累计 O(T·d)，加了缓存以后也完全一样"},
       {"the cost is linear in T either way, O(T·d²) in all; the cache only saves memory, not compute",
        "两种做法都是 T 的线性 O(T·d²)，缓存只省显存，不省计算"},
       {"the attention softmax is recomputed: O(T²) in all, independent of d", "重算的是 softmax：累计 O(T²)，与 d 无关"}},
      {"Step t recomputes t positions (24·t·d² + 2·t(t+1)·d FLOPs); summed over T steps that is O(T²d² + T³d). With "
       "the cache each step processes one token: O(Td² + T²d) in all.",
       "第 t 步重算 t 个位置（24·t·d² + 2·t(t+1)·d FLOPs），T 步累加是 O(T²d² + T³d)；缓存后每步只处理 1 个 token，累计 "
       "O(Td² + T²d)。"},
      "kvlab cache-flops");
}

BankEntry q_004C_02a() {
  return choice(
      "004C-02a", "004 §C 2", L::intuition,
      {"Why do the K and V of past tokens not change when a token is appended, and why does BERT have no KV cache?",
       "为什么追加新 token 时过去 token 的 K、V 不会变？BERT 为什么没有 KV Cache？"},
      {"the causal mask hides a new token from every older position; BERT's bidirectional attention does not",
       "因果掩码让旧位置看不见新 token；BERT 是双向注意力，新 token 会改变所有旧 token 的表示"},
      {{"K and V are recomputed at every step but rounding makes them nearly equal; BERT is too small to need a cache at all",
        "K、V 其实每步都重算了，只是浮点舍入后几乎相等；BERT 模型太小，所以根本不需要缓存"},
       {"the weights are frozen at inference, so K and V cannot change; BERT has no V projection to cache",
        "推理时权重冻结，所以 K、V 不会变；BERT 没有可以缓存的 V 投影"},
       {"LayerNorm normalizes away the new token's influence; BERT uses absolute positions",
        "LayerNorm 把新 token 的影响归一化掉了；BERT 用的是绝对位置"}},
      {"Each position sees only itself and earlier ones, so a new token is in every old token's future: the old K and "
       "V are bit-identical, not merely close (004 §1.2, group 1). Under a bidirectional mask the new token changes "
       "every old representation.",
       "每个位置只看自己和之前的位置，新 token 在所有旧 token 的“未来”：旧 K、V 逐位相同，不是“很小的差”（004 §1.2，第 1 组）。"
       "双向注意力下新 token 会改变所有旧 token 的表示。"},
      "kvlab kv-invariance");
}

BankEntry q_004C_02b() {
  return choice(
      "004C-02b", "004 §C 2", L::intuition,
      {"Why is Q not cached?", "为什么不缓存 Q？"},
      {"only the newest position's output is needed, and an old query served only its own position",
       "只需要最后一个位置的输出；旧位置的 query 只在算它自己的输出时用过"},
      {{"Q is as large as K and V together, so caching it would double the memory",
        "Q 和 K、V 加起来一样大，缓存它会让显存翻倍"},
       {"every old query changes at each step because the softmax renormalizes over the new key, so a cached Q would be stale",
        "每来一个新 key，softmax 都要重新归一化，旧 query 随之改变，缓存了也会过期"},
       {"Q is cached in GQA but not in MHA", "GQA 会缓存 Q，MHA 不会"}},
      {"Attention of the new position is Σ_i A_ti v_i with A from q_t and every k_i: it reads all keys and values "
       "but only the newest query.",
       "新位置的注意力是 Σ_i A_ti v_i，A 由 q_t 和全部 k_i 算出：要读全部 key 和 value，但只用最新的 query。"},
      "kvlab query-not-cached");
}

BankEntry q_004C_03() {
  return choice(
      "004C-03", "004 §C 3", L::intuition,
      {"How do prefill and decode differ in character?", "prefill 和 decode 的性格有什么不同？"},
      {"prefill: big matrix products, compute-bound; decode: matrix-vector products, memory-bound",
       "prefill 矩阵乘又大又满，计算密集；decode 退化成矩阵-向量乘，访存密集"},
      {{"both are compute-bound; decode is slower only because it runs more steps",
        "两者都是计算密集的，decode 慢只是因为步数多"},
       {"prefill is memory-bound because it writes the whole cache at once; decode is compute-bound, one token at a time",
        "prefill 一次写整个缓存，所以是访存密集的；decode 逐 token 计算，是计算密集的"},
       {"they differ only in the mask: prefill is causal, decode is not", "只有掩码不同：prefill 用因果掩码，decode 不用"}},
      {"Prefill runs the whole prompt at once, like training: its intensity grows with the prompt length. Decode feeds "
       "one token per step: about 1 FLOP/B at batch 1. Serving systems schedule the two phases apart (004 §4).",
       "prefill 像训练一样一次处理整个 prompt，算术强度随长度增长；decode 每步只有 1 个 token，batch=1 时约 1 FLOP/字节。推理系统"
       "因此把两个阶段分开调度（004 §4）。"},
      "kvlab intensity");
}

BankEntry q_004C_04() {
  return choice(
      "004C-04", "004 §C 4", L::intuition,
      {"Why is decoding memory-bound, and what can a larger batch relieve and what not?",
       "解码为什么是访存瓶颈？加大 batch 能缓解什么、缓解不了什么？"},
      {"2N bytes read for 2N FLOPs per token; a batch amortizes the weight reads but not the KV cache",
       "每 token 读 2N 字节只做 2N 次运算；batch 能摊薄权重读取，摊不薄 KV Cache"},
      {{"decoding is compute-bound; a larger batch adds FLOPs and makes it worse",
        "解码其实是计算瓶颈；加大 batch 只会增加每步的计算量，让解码更慢，什么也缓解不了"},
       {"a larger batch amortizes both the weight reads and the KV-cache reads, so a big enough batch removes the bottleneck",
        "加大 batch 同时摊薄权重读取和 KV Cache 读取，batch 足够大瓶颈就消失了"},
       {"the bottleneck is the softmax; a batch does not change it", "瓶颈是 softmax，batch 改变不了"}},
      {"The weights are read once per step and used B times; each sequence's KV cache serves its own query only. "
       "004 §1.5 group 5: batch 8 lifts the bound to 892 tok/s, but at batch 64 and 4096 positions the KV reads "
       "(128 GiB) are ten times the weights and the intensity falls back to 6.8.",
       "权重每步读一次、用 B 次；每条序列的 KV Cache 只被它自己的 query 用。004 §1.5 第 5 组：batch 8 时吞吐上限升到 892；但 batch "
       "64、序列 4096 时 KV 读取（128 GiB）是权重的十倍，算术强度掉回 6.8。"},
      "kvlab roofline");
}

BankEntry q_004C_05() {
  return choice(
      "004C-05", "004 §C 5", L::intuition,
      {"What motivates MQA and GQA, and why is GQA called a knob?", "MQA 和 GQA 的动机是什么？GQA 为什么说是一个“旋钮”？"},
      {"the cache is proportional to n_kv; GQA's G slides from MHA (G = h) to MQA (G = 1)",
       "缓存正比于 KV 头数；GQA 的组数 G 从 MHA（G = h）调到 MQA（G = 1）"},
      {{"they cut the FLOPs of attention; GQA's knob is the number of query heads",
        "它们主要是为了减少注意力的计算量；GQA 的旋钮是 query 头数，头越少越快"},
       {"they shrink the weights of the MLP; the knob is the MLP width", "它们缩小 MLP 的权重；旋钮是 MLP 宽度"},
       {"they let the model attend to longer contexts than MHA can; the knob is the attention window size",
        "它们让模型能看比 MHA 更长的上下文；旋钮是注意力窗口大小"}},
      {"h query heads keep their own attention patterns but look up the same keys and values; only n_kv enters the "
       "cache formula (70B: MHA 640 GiB, GQA-8 80 GiB, MQA 10 GiB).",
       "h 个 query 头保留各自的关注模式，只是去同一套键和值里查表；缓存公式里只有 n_kv 变化（70B：MHA 640 GiB、GQA-8 80 GiB、MQA "
       "10 GiB）。"},
      "kvlab kv-size --model llama-2-70b --batch 32 --ctx 8192");
}

BankEntry q_004C_06() {
  return choice(
      "004C-06", "004 §C 6", L::intuition,
      {"Why does an absolute position embedding invalidate the cache under a sliding window, and why does RoPE fix "
       "it?",
       "为什么绝对位置编码会让滑动窗口下的缓存失效？RoPE 为什么能解决？"},
      {"sliding renumbers every position, which is baked into K; RoPE scores only relative positions",
       "窗口一滑位置编号全变，而位置已烤进 K 里；RoPE 的打分只依赖相对位置"},
      {{"the window drops the first token, and the softmax needs it as an attention sink; RoPE keeps it",
        "窗口丢掉了第一个 token，而 softmax 需要它当注意力汇聚点；RoPE 会一直保留它"},
       {"absolute embeddings are added to V only; RoPE adds them to Q", "绝对位置只加在 V 上；RoPE 加在 Q 上"},
       {"the cache is invalid only in fp16 because of rounding; RoPE is computed in fp32",
        "只有 fp16 下因舍入失效；RoPE 用 fp32 计算"}},
      {"004 §1.6 group 7: the same token's K in the old window (position 1) and the new (position 0) differs by 9.53, "
       "so the cache must be rebuilt. RoPE's scores depend only on relative position, so positions can keep counting "
       "up and old keys stay valid: Mistral's rolling cache relies on it.",
       "004 §1.6 第 7 组：同一个 token 在旧窗口（位置 1）和新窗口（位置 0）里的 K 最大差 9.53，缓存只能整个重建。RoPE 的打分只依赖"
       "相对位置，位置编号可以一直往上数，旧的 K 不用重算：Mistral 的滚动缓存正建立在这个性质上。"},
      "kvlab abs-pos-window");
}

BankEntry q_004C_07() {
  return choice(
      "004C-07", "004 §C 7", L::derivation,
      {"The induction that the KV cache is valid: what does the inductive step (layer l → l + 1) rest on?",
       "“KV Cache 不变”的归纳证明：第 l 层到第 l + 1 层的归纳步依赖什么？"},
      {"LayerNorm and FFN act per position, and the causal mask uses only i ≤ j",
       "LayerNorm、FFN 逐位置计算，因果掩码只用到 i ≤ j 的位置"},
      {{"the weights W_K and W_V are the same in every layer", "每一层的 W_K、W_V 都相同，所以第 l 层的结论可以直接搬到第 l + 1 层"},
       {"the softmax of each row sums to 1, so appending a token cannot change old rows", "softmax 每行和为 1，所以追加 token 不改变旧行"},
       {"the residual connection copies the input unchanged", "残差连接把输入原样复制过去"}},
      {"Base: h_j^(0) = wte[x_j] + wpe[j] depends on x_j and j only. Step: position j's attention is Σ_{i≤j} A_ji v_i, "
       "and each k_i, v_i (i ≤ j) depends only on x_≤i ⊆ x_≤j; LayerNorm and FFN are per position. Hence k_j = W_K h_j "
       "and v_j = W_V h_j never change once computed.",
       "基础：h_j^(0) = wte[x_j] + wpe[j] 只依赖 x_j 和 j。归纳：j 位置的注意力是 Σ_{i≤j} A_ji v_i，每个 k_i、v_i（i ≤ j）只依赖 "
       "x_≤i ⊆ x_≤j；LayerNorm、FFN 逐位置。所以 k_j = W_K h_j、v_j = W_V h_j 一旦算出就永远不变。"},
      "kvlab kv-invariance");
}

BankEntry q_004C_10() {
  return choice(
      "004C-10", "004 §C 10", L::derivation,
      {"What does GQA save, what does it not, and why is it an inference optimization?",
       "GQA 省了哪些东西？没省哪些？为什么说它是推理优化？"},
      {"cache memory and bytes read, not attention FLOPs; decode is bound by bytes",
       "省显存和访存，没省注意力计算量；解码的瓶颈正是读字节"},
      {{"the attention FLOPs, by a factor h/G; the cache memory stays the same, since K/V are repeated",
        "注意力计算量减少 h/G 倍；因为 K/V 会被复制，缓存显存不变"},
       {"it saves training time, and that is why it is used", "它省训练时间，所以才被采用"},
       {"it saves the MLP weights, which dominate the parameter count", "它省 MLP 权重，那才是参数的大头"}},
      {"The K/V heads are repeated only at compute time; the cache holds the G heads before the repeat. Decode reads "
       "bytes, so fewer bytes is faster even though the FLOPs are unchanged.",
       "K/V 头只在计算时复制；缓存里存的是复制前的 G 个头。解码的瓶颈是读字节，字节少了就快，尽管计算量没变。"},
      "kvlab attn-params");
}

BankEntry q_004C_11() {
  return choice(
      "004C-11", "004 §C 11", L::derivation,
      {"Why does MHA → GQA mean pooling work far better on a trained model than on random weights?",
       "MHA → GQA 的均值池化为什么在训练好的模型上比在随机权重上有效得多？"},
      {"trained heads are redundant and similar within a group; random heads are unrelated",
       "训练好的头有冗余、同组相近；随机权重的头彼此无关"},
      {{"trained weights are smaller in magnitude, so averaging rounds less", "训练后的权重数值更小，平均时舍入更少"},
       {"mean pooling is exact for any weights; the only difference is how long the uptraining runs",
        "均值池化对任何权重都是精确的，差别只在继续训练跑了多久"},
       {"random weights have no softmax saturation, so pooling them is unstable", "随机权重没有 softmax 饱和，所以池化不稳定"}},
      {"Many heads of a trained model are redundant, so a group's heads are close and their mean loses little; random "
       "heads are unrelated and averaging destroys most of their information. The GQA paper averages the h/G key and "
       "value projections of a group, then uptrains with about 5% of the pre-training compute.",
       "训练好的模型里很多头是冗余的，同组头相近，平均的损失小；随机权重的头彼此无关，平均之后信息大量丢失。GQA 论文把同组 h/G 个 K"
       "（和 V）投影矩阵取平均，再用原预训练计算量约 5% 继续训练（uptraining）。"},
      "kvlab gqa-meanpool");
}

BankEntry q_004C_12() {
  return choice(
      "004C-12", "004 §C 12", L::engineering,
      {"Why preallocate the cache instead of torch.cat at every step?", "为什么缓存要预分配而不是每步 torch.cat？"},
      {"each cat copies the whole cache again: O(n²) positions moved for n tokens",
       "每次拼接都把已有缓存整个复制一遍：n 个 token 累计搬运 O(n²) 个位置"},
      {{"torch.cat gives wrong results beyond 2048 tokens, because it overflows the cache index",
        "torch.cat 超过 2048 个 token 时缓存下标会溢出，结果悄悄算错，而预分配不会"},
       {"preallocation uses less memory than the cache needs", "预分配比缓存实际需要的显存更少"},
       {"cat cannot be used under torch.inference_mode()", "torch.inference_mode() 下不能用 cat"}},
      {"004 §3.1 group 8: preallocating writes each position once and returns a view of the filled part; the "
       "concatenations move 2048 times as many positions for 4096 tokens.",
       "004 §3.1 第 8 组：预分配每个位置只写一次，返回已填部分的视图；生成 4096 个 token 时拼接搬运的位置数是它的 2048 倍。"},
      "kvlab cat-vs-prealloc");
}

BankEntry q_004C_13() {
  return choice(
      "004C-13", "004 §C 13", L::engineering,
      {"In incremental decoding, what position number does the new token get, and what happens if you forget?",
       "增量解码时位置编号应该是多少？忘了会怎样？报错吗？"},
      {"its index in the whole sequence; forgotten: no error, but worse text",
       "它在整个序列里的下标；忘了不报错，但生成质量变差"},
      {{"always 0, because the cache stores the positions", "总是 0，因为缓存里已经存了每个旧 token 的位置，新 token 不需要再编号"},
       {"its index; forgetting it raises a shape error at once", "是它的下标；忘了会立刻报形状错误"},
       {"the number of cached tokens minus one; forgetting it only costs speed", "是已缓存的 token 数减一；忘了只会变慢"}},
      {"The new token's position is its index pos in the whole sequence, not 0: GPT.embed(idx, start) adds wpe[start .. "
       "start + T). Forgotten, every new token thinks it is at position 0; nothing fails, the text gets worse, and "
       "only the logit comparison against a full forward catches it.",
       "新 token 的位置是它在整个序列里的下标 pos，不是 0：GPT.embed(idx, start) 加的是 wpe[start .. start + T)。忘了的话每个新 "
       "token 都以为自己在位置 0：不报错，生成质量变差，只有与全量前向逐位比对的测试能抓到。"},
      "kvlab position-offset");
}

BankEntry q_004C_14() {
  return choice(
      "004C-14", "004 §C 14", L::engineering,
      {"Which masks do single-token decoding and chunked prefill need, and when is SDPA's is_causal=True wrong?",
       "单 token 解码、分块 prefill 各该用什么掩码？SDPA 的 is_causal=True 在哪种情况下错？"},
      {"none; a lower-right tril(S − T); is_causal=True is wrong whenever T < S",
       "不需要掩码；右下角对齐的 tril(S − T)；T < S 时 is_causal=True 就错"},
      {{"is_causal=True is right in every case, because it reads the cache length",
        "is_causal=True 在任何情况下都对，因为 SDPA 会自动读取缓存长度并对齐掩码"},
       {"decoding needs the full lower-triangular T × T mask; chunked prefill needs none",
        "解码需要完整的 T × T 下三角掩码；分块 prefill 不需要掩码"},
       {"is_causal=True is wrong only in training, never with a cache", "is_causal=True 只在训练时错，带缓存时不会"}},
      {"Single-token decoding (T = 1) may see all S keys: no mask. Chunked prefill: new query i sits at position "
       "S − T + i and sees keys 0 .. S − T + i, torch.ones(T, S).tril(diagonal=S - T) (causal_lower_right in PyTorch ≥ "
       "2.2). is_causal=True aligns top-left: with T = 1 the query sees only the first key.",
       "单 token 解码（T = 1）可以看全部 S 个 key，不需要掩码。分块 prefill：第 i 个新 query 的位置是 S − T + i，能看 key 0 .. "
       "S − T + i，即 torch.ones(T, S).tril(diagonal=S - T)（PyTorch 2.2 起有 causal_lower_right）。is_causal=True 按左上角对齐：T "
       "= 1 时只允许看第一个 key。"},
      "kvlab causal-mask");
}

BankEntry q_004C_15() {
  return choice(
      "004C-15", "004 §C 15", L::engineering,
      {"GQA with repeat instead of repeat_interleave: what is the difference?",
       "用 repeat 和 repeat_interleave 做 GQA，结果有什么区别？"},
      {"head j gets K/V head ⌊j/(h/G)⌋ vs j mod G: no error, wrong weights",
       "第 j 个头用 ⌊j/(h/G)⌋ 还是 j mod G：不报错，但权重对不上"},
      {{"none: both give the same output", "没有区别：两种写法复制出的 K/V 头完全一样，输出也逐位一致"},
       {"repeat raises a shape error when G does not divide h", "G 不整除 h 时 repeat 会报形状错误"},
       {"repeat copies memory and repeat_interleave does not; the grouping is the same", "repeat 会复制内存而 repeat_interleave 不会，分组一样"}},
      {"repeat_interleave gives query head j the K/V head ⌊j/(h/G)⌋ (contiguous groups), as expand + reshape and "
       "enable_gqa=True do; repeat gives it head j mod G (interleaved groups): no error, but the weights no longer "
       "match.",
       "repeat_interleave 让第 j 个 query 头用第 ⌊j/(h/G)⌋ 个 K/V 头（连续分组），expand + reshape 和 enable_gqa=True 也这样分；repeat "
       "让它用第 j mod G 个（交错分组）：不报错，但和别人的权重对不上。"},
      "kvlab gqa-layout");
}

BankEntry q_004C_16() {
  return choice(
      "004C-16", "004 §C 16", L::engineering,
      {"Why turn use_cache off when training with Hugging Face?", "HuggingFace 训练时为什么要关 use_cache？"},
      {"training never reads the cache; it only wastes memory", "训练根本不读缓存，留着只浪费显存"},
      {{"the cached keys are detached, so the gradients come out wrong", "缓存的 key 被 detach，梯度会算错"},
       {"use_cache=True makes training switch to GQA", "use_cache=True 会让训练改用 GQA"},
       {"the optimizer cannot update cached weights", "优化器无法更新被缓存的权重"}},
      {"Training runs each sequence in one parallel forward and never reads a cache; keeping one wastes memory, and "
       "with gradient checkpointing it brings warnings. Set use_cache=False (or model.config.use_cache = False); "
       "generate() uses the cache by default. The memory it would hold is what kv-size prints.",
       "训练时一次并行前向整个序列，根本不读缓存；留着它只浪费显存，开了梯度检查点还会报警告。设 use_cache=False（或 "
       "model.config.use_cache = False）；generate() 默认使用缓存。它会占的显存就是 kv-size 打印的数。"},
      "kvlab kv-size");
}

BankEntry q_004B_2a() {
  return choice(
      "004B-2a", "004 §B 2 (a)", L::derivation,
      {"Writing out the induction of §1.2: under which change of the model does its inductive step fail?",
       "写出 §1.2 的归纳证明：模型怎样改动后，归纳步就不成立了？"},
      {"a bidirectional mask, as in BERT", "换成双向掩码（像 BERT）"},
      {{"adding more layers", "增加层数"}, {"grouping the K/V heads (GQA)", "把 K/V 头分组（GQA）"},
       {"storing the cache in fp8 instead of bf16", "把缓存从 bf16 改存成 fp8"}},
      {"The step uses only that LayerNorm and FFN are per position and that attention is causal; depth, head grouping "
       "and storage precision do not enter it.",
       "归纳步只用到 LayerNorm、FFN 逐位置，以及注意力是因果的；层数、头分组、存储精度都不在其中。"},
      "kvlab bidirectional");
}

BankEntry q_004B_3() {
  return choice(
      "004B-3", "004 §B 3", L::engineering,
      {"After adding a KV cache to the mini-GPT, which two tests must it pass before you go on (§3.5)?",
       "给 mini-GPT 加上 KV Cache 后，往下做之前必须通过哪两个测试（§3.5）？"},
      {"logits equal a full forward's; greedy tokens equal the naive generate's",
       "logits 与全量前向逐位一致；贪心生成与朴素 generate 逐 token 相同"},
      {{"the cached run is at least 2× faster, and its memory is below 1 GiB", "缓存版的生成速度至少快 2 倍，而且整个模型加缓存的显存低于 1 GiB"},
       {"the loss of the cached model equals the loss of the uncached one after training", "训练后缓存版和非缓存版的 loss 相同"},
       {"the cache tensors have the right shape, and no NaN appears", "缓存张量形状正确，且没有 NaN"}},
      {"§3.5: prefill + token-by-token decoding against one full forward, for MHA, GQA, MQA and chunked prefill; and "
       "greedy generation with the cache against the naive generate, past block_size too. The cache saves "
       "recomputation, not accuracy: the logits differ only by rounding (about 1e-15 in float64).",
       "§3.5：prefill + 逐 token 解码对一次全量前向，MHA / GQA / MQA 各一次再加分块 prefill；贪心解码下缓存版对朴素 generate，包括超过 "
       "block_size 之后。缓存省的是重复计算，不是近似：logits 的差只是浮点舍入（float64 下约 1e-15）。"},
      "kvlab incremental-vs-full");
}

BankEntry q_004B_4() {
  return choice(
      "004B-4", "004 §B 4", L::engineering,
      {"You convert the trained mini-GPT from MHA to G = 2 and G = 1 by mean pooling, then train a few more steps. "
       "What should you see?",
       "用均值池化把训好的 mini-GPT 从 MHA 转成 G = 2、G = 1，再少量继续训练。应该看到什么？"},
      {"the loss rises, more for G = 1 than G = 2; uptraining recovers much of it",
       "loss 上升，G = 1 比 G = 2 升得多；继续训练能恢复大部分"},
      {{"the loss stays exactly the same for G = 2 and G = 1, because mean pooling keeps every head's information",
        "G = 2 和 G = 1 的 loss 都和原来完全一样，因为均值池化保留了每个头的信息"},
       {"the loss falls below the MHA model's, because GQA regularizes", "loss 低于 MHA 模型，因为 GQA 有正则化作用"},
       {"the model cannot be converted without training from scratch", "不从头训练就无法转换"}},
      {"Averaging a group's K/V projections loses what differs between its heads; fewer groups lose more. G = h "
       "would be exactly MHA (group 6: difference 0).",
       "平均同组的 K/V 投影会丢掉组内各头的差异；组越少丢得越多。G = h 就是 MHA 本身（第 6 组：差 0）。"},
      "kvlab gqa-meanpool");
}

BankEntry q_003R_01() {
  return choice(
      "003R-01", "003 review 1", L::intuition,
      {"What do TTFT, latency and throughput measure, and where does each matter most?",
       "TTFT、Latency（生成延迟）和 Throughput（吞吐量）分别代表什么？各自适用于什么场景？"},
      {"first-token wait (chat); gap between tokens (chat); system tokens/s (offline)",
       "首字等待（对话）；token 间隔（交互）；系统每秒 token 数（离线批处理）"},
      {{"TTFT is the training time per token; latency and throughput are the same number",
        "TTFT 是训练时每个 token 的耗时；latency 和 throughput 是同一个数的倒数，场景完全相同"},
       {"throughput matters most for chat, TTFT for offline batch jobs", "对话最看重吞吐量，离线批处理最看重 TTFT"},
       {"latency is the time of the whole answer; TTFT is the prefill FLOPs", "latency 是整个回答的时间；TTFT 是 prefill 的 FLOPs"}},
      {"TTFT: from the prompt to the first token (interactive chat). Latency: the average gap between later tokens "
       "(interactive use). Throughput: tokens per second of the whole system (offline batch jobs). A larger batch "
       "raises throughput but each sequence waits longer.",
       "TTFT：从输入 prompt 到吐出第一个字（实时对话）。Latency：后续 token 之间的平均间隔（交互体验）。Throughput：系统整体每秒生成"
       "的 token 数（离线批处理）。batch 越大吞吐越高，但每条序列等得越久。"},
      "kvlab continuous-batching");
}

BankEntry q_003R_02() {
  return choice(
      "003R-02", "003 review 2", L::intuition,
      {"What is arithmetic intensity, and why is prefill compute-limited while generation is memory-limited?",
       "什么是算术强度？为什么预填充阶段能打满算力，生成阶段却受限于访存？"},
      {"FLOPs per byte moved; prefill's grows with the prompt, generation's is about 1",
       "FLOPs ÷ 搬运字节数；预填充的随 prompt 长度增长，生成阶段约为 1"},
      {{"bytes moved divided by FLOPs; prefill moves more bytes, so it is the memory-bound phase", "显存传输的字节数除以 FLOPs；预填充要搬的字节更多，所以反而是访存瓶颈"},
       {"FLOPs per second; the GPU lowers its clock during generation to save power", "每秒 FLOPs；生成阶段 GPU 为省电降低频率"},
       {"FLOPs per parameter; generation uses fewer parameters", "每个参数的 FLOPs；生成阶段用的参数更少"}},
      {"Prefill processes the whole prompt in parallel (intensity proportional to its length S); generation moves all "
       "weights and the KV cache for one token per sequence (about 1). Above the ridge point (A100: about 153 FLOP/B) "
       "is compute-bound, below it bandwidth-bound.",
       "预填充一次并行处理整个 prompt（强度正比于长度 S）；生成阶段每个 token 都要把参数和 KV Cache 搬一遍（约为 1）。高于拐点（A100 "
       "约 153 FLOP/字节）是算力瓶颈，低于拐点是带宽瓶颈。"},
      "kvlab intensity");
}

BankEntry q_003R_03() {
  return choice(
      "003R-03", "003 review 3", L::derivation,
      {"In generation, why does the MLP's arithmetic intensity grow with the batch size while attention's stays near "
       "1?",
       "自回归生成时，为什么 MLP 的算术强度随 batch 增大而提升，注意力层却永远接近 1？"},
      {"MLP weights are shared by the batch; each sequence's KV cache is its own",
       "MLP 权重全 batch 共享；KV Cache 每条序列独有"},
      {{"attention uses a softmax, which cannot be batched", "注意力里有 softmax，softmax 无法批处理，只能逐条序列算"},
       {"the MLP has more parameters than attention, so it is always compute-bound", "MLP 参数比注意力多，所以总是计算瓶颈"},
       {"attention runs in fp32 and the MLP in bf16", "注意力用 fp32，MLP 用 bf16"}},
      {"Per sequence and layer (MHA), attention does 4·ctx·d FLOPs and reads 2·ctx·d cached numbers of 2 B: about 1 "
       "FLOP/B, whatever B.",
       "每条序列每层（MHA）的注意力做 4·ctx·d FLOPs，读 2·ctx·d 个缓存数（每个 2 字节）：约 1 FLOP/字节，与 B 无关。"},
      "kvlab intensity");
}

BankEntry q_003R_04() {
  return choice(
      "003R-04", "003 review 4", L::intuition,
      {"How do GQA and MLA each shrink the KV cache?", "GQA 和 MLA 压缩 KV Cache 的底层逻辑分别是什么？"},
      {"GQA: fewer K/V heads; MLA: one low-dimensional latent per token",
       "GQA：减少 K/V 头数；MLA：每 token 缓存一个低维潜向量"},
      {{"GQA quantizes the cache to int8; MLA drops old tokens", "GQA 把 KV Cache 量化到 int8 存储；MLA 则把窗口外的旧 token 直接丢掉"},
       {"both share the cache across layers", "两者都是跨层共享缓存"},
       {"GQA shrinks head_dim of every head; MLA shrinks the number of layers", "GQA 缩小每个头的 d_head；MLA 减少层数"}},
      {"GQA lets several query heads share one K/V head. MLA keeps the heads but caches a low-dimensional latent (e.g. "
       "512) and folds the up-projection into the following weights (associativity): L·(d_c + d_r) numbers per token.",
       "GQA 让多个 Query 头共享一组 K/V 头。MLA 不减头数，而是把 KV 压缩到低维潜空间（如 512 维）缓存，再用矩阵结合律把恢复矩阵融合进"
       "后续权重：每 token 缓存 L·(d_c + d_r) 个数。"},
      "kvlab mla-cache");
}

BankEntry q_003R_05() {
  return choice(
      "003R-05", "003 review 5", L::intuition,
      {"Along which two different dimensions do local (sliding-window) attention and cross-layer attention (CLA) cut "
       "the KV cache?",
       "局部/滑动窗口注意力和跨层注意力（CLA）分别从哪两个维度减少 KV Cache？"},
      {"local: along the sequence (time); CLA: along the depth (layers)", "局部注意力：序列/时间维度；CLA：深度/层维度"},
      {{"both along the head dimension: fewer K/V heads to store", "两者都在头的维度上减少：少存几个 K/V 头"},
       {"local attention along the layers, CLA along the sequence", "局部注意力在层维度，CLA 在序列维度"},
       {"both along the precision of the stored numbers (fp8 cache)", "两者都在存储数值的精度上（fp8 缓存）"}},
      {"Local attention drops the tokens outside the window, so the cache stays constant in length. CLA lets layers "
       "share one cache, and the K/V projection weights with it (003 Q3).",
       "局部注意力把窗口外的 token 直接丢弃，缓存大小不随长度增长。CLA 让不同层共享同一份缓存，生成 K、V 的投影权重也一起共享（003 "
       "Q3）。"},
      "kvlab cla");
}

BankEntry q_003R_06() {
  return choice(
      "003R-06", "003 review 6", L::intuition,
      {"State-space models and linear attention keep a constant-size state. On what kind of task did they do badly "
       "in early evaluations?",
       "状态空间模型（SSM）和线性注意力的状态大小是常数。早期评测中它们在什么任务上表现糟糕？"},
      {"associative recall of one far-back key-value pair", "关联召回：精准提取极远处的某个键值对"},
      {{"arithmetic on short contexts", "短上下文里的算术题"}, {"generating long outputs quickly", "快速生成很长的输出"},
       {"any task run in bf16 precision, due to rounding in the state", "任何以 bf16 精度运行的任务（状态中的舍入）"}},
      {"A fixed-size state compresses all history and loses exact far-back details. The common answer is a hybrid: "
       "mostly linear layers with a full-attention layer now and then.",
       "固定大小的状态压缩了全部历史，丢失了精确的远距离信息。目前的最佳实践是混合架构：大部分为线性层，偶尔穿插全注意力层。"},
      "kvlab linear-attention");
}

BankEntry q_003R_07() {
  return choice(
      "003R-07", "003 review 7", L::engineering,
      {"What breaks INT8 quantization of large models, and how do LLM.int8() and AWQ handle it?",
       "用 INT8 量化大模型时什么现象破坏精度？LLM.int8() 和 AWQ 怎样处理？"},
      {"rare huge outliers; keep them in 16-bit (int8) or protect salient weights (AWQ)",
       "极少量极端离群值；离群部分留 16-bit（LLM.int8()），或按激活保护关键权重（AWQ）"},
      {{"the weights become too small for INT8 as models grow, so both methods multiply them by 8", "模型变大后权重数值变得太小，INT8 表示不了；两种方法都先把权重乘以 8 再量化"},
       {"INT8 overflows the KV cache; both methods drop old tokens", "INT8 让 KV Cache 溢出；两种方法都丢弃旧 token"},
       {"nothing breaks; the two methods only make the quantization step itself faster", "没什么被破坏，两种方法只是让量化过程本身更快"}},
      {"One outlier stretches the scale of its whole row, so every ordinary value loses its resolution. LLM.int8() "
       "keeps the outlier features in 16-bit and the rest in INT8; AWQ uses the activations to find the weights that "
       "matter and protects them.",
       "一个离群值会拉大整行的量化尺度，让所有普通数值失去分辨率。LLM.int8() 把离群部分保持 16-bit、其余放进 INT8；AWQ 结合激活值分布"
       "找出重要的权重加以保护。"},
      "kvlab int8-outliers");
}

BankEntry q_003R_08() {
  return choice(
      "003R-08", "003 review 8", L::derivation,
      {"What intuition makes speculative decoding fast, and why is it lossless?", "投机解码靠什么直觉加速？为什么说它是无损的？"},
      {"verifying is cheaper than generating; rejection sampling keeps the target's law",
       "验证比生成快；拒绝采样保证输出严格服从目标模型的分布"},
      {{"the draft model is distilled from the target, so its outputs are close enough to ignore the difference", "草稿模型是从大模型蒸馏出来的，输出和大模型足够接近，差别可以忽略"},
       {"it is lossless only at temperature 0", "只有温度为 0 时才无损"},
       {"the target model re-generates every token, so the draft only warms the cache", "目标模型会重新生成每个 token，草稿只是预热缓存"}},
      {"Per position: P(X = x) = min(p, q) + (1 − α)·p'(x) = p(x) (000 §7.3); 003 names the target q and the draft p.",
       "每个位置：P(X = x) = min(p, q) + (1 − α)·p'(x) = p(x)（000 §7.3）；003 里目标模型记作 q、草稿模型记作 p。"},
      "kvlab spec-exact");
}

BankEntry q_003R_09() {
  return choice(
      "003R-09", "003 review 9", L::engineering,
      {"Requests differ in length and arrive at any time. Which two system techniques remove the waiting of static "
       "batches and the memory fragmentation?",
       "线上请求长短不一、随时到达。哪两种系统级技术分别解决静态批处理的等待浪费和显存碎片？"},
      {"continuous batching and PagedAttention", "持续批处理（Continuous Batching）和 PagedAttention"},
      {{"larger static batches and preallocation to the maximum length", "更大的静态 batch，加上按最大长度一次性预分配显存"},
       {"speculative decoding and quantization", "投机解码和量化"},
       {"tensor parallelism and gradient checkpointing", "张量并行和梯度检查点"}},
      {"Continuous batching: after every token the scheduler drops finished requests and admits new ones. "
       "PagedAttention (vLLM): the cache in fixed-size blocks allocated on demand through a block table, which also "
       "lets requests with the same prompt share blocks copy-on-write.",
       "持续批处理：每生成一个 token 就把完成的请求踢出、新请求塞入。PagedAttention（vLLM）：把 KV Cache 切成固定大小的块，经 block "
       "table 按需分配，还天生支持相同 prompt 的写时复制共享。"},
      "kvlab paged-vs-contiguous");
}

BankEntry q_003R_10() {
  return choice(
      "003R-10", "003 review 10", L::engineering,
      {"Requests of different lengths in one batch: how does a system treat the attention layer and the MLP "
       "differently?",
       "多用户请求混在一个 batch、长度参差不齐：系统怎样区别处理注意力层和 MLP 层？"},
      {"attention per sequence; the MLP on all tokens flattened into one batch",
       "注意力按序列隔离；MLP 把所有 token 拍平成一个大 batch 一起算"},
      {{"both are padded to the longest request and run as one dense batch", "两者都补齐到最长的请求，当成一个稠密的大 batch 一起算"},
       {"the MLP runs per request and attention is flattened", "MLP 按请求分别算，注意力拍平"},
       {"short requests wait until all requests in the batch reach the same length", "短请求等到 batch 里所有请求一样长再算"}},
      {"The MLP's tokens are independent of each other, so their order and grouping do not matter; attention's are "
       "not.",
       "MLP 中 token 之间互不依赖，怎么拼都行；注意力不是。"},
      "kvlab ragged-batch");
}

BankEntry q_000_7_2b() {
  return choice(
      "000-7.2b", "000 §7.2", L::derivation,
      {"Why does α = Σ_x min(p(x), q(x)) equal 1 − ½‖p − q‖₁?", "为什么 α = Σ_x min(p(x), q(x)) 等于 1 − ½‖p − q‖₁？"},
      {"min(p, q) = (p + q − |p − q|) / 2, and Σp = Σq = 1", "min(p, q) = (p + q − |p − q|) / 2，且 Σp = Σq = 1"},
      {{"because p and q are both uniform", "因为 p 和 q 都是均匀分布，min 和 TV 距离恰好相等"},
       {"it holds only when the draft decodes greedily (q one-hot)", "只在草稿贪心解码（q 为 one-hot）时成立"},
       {"because max(p, q) = 1 everywhere", "因为处处 max(p, q) = 1"}},
      {"So the closer the draft is to the target in total variation, the closer α is to 1.",
       "所以草稿与目标的 TV 距离越小，α 越接近 1。"},
      "kvlab spec-alpha");
}

BankEntry q_000_7_3b() {
  return choice(
      "000-7.3b", "000 §7.3", L::derivation,
      {"The proof that one speculative step emits exactly p: which two terms add up to p(x)?",
       "证明一个投机步的输出分布恰好是 p：哪两项加起来等于 p(x)？"},
      {"min(p(x), q(x)) and max(0, p(x) − q(x))", "min(p(x), q(x)) 和 max(0, p(x) − q(x))"},
      {{"q(x) and p(x) − q(x)", "q(x)（草稿提议）和 p(x) − q(x)（差值）"},
       {"α·p(x) (accepted) and (1 − α)·q(x) (resampled)", "α·p(x)（接受）和 (1 − α)·q(x)（重采）"},
       {"min(p(x), q(x)) and max(p(x), q(x))", "min(p(x), q(x)) 和 max(p(x), q(x))"}},
      {"min(p, q) + max(0, p − q) = p for every x: exact, not an approximation.",
       "对每个 x，min(p, q) + max(0, p − q) = p：是精确的，不是近似。"},
      "kvlab spec-exact");
}

BankEntry q_000_7_4b() {
  return choice(
      "000-7.4b", "000 §7.4", L::derivation,
      {"E[τ] = (1 − α^(K+1)) / (1 − α): what are its limits as α → 1 and α → 0?",
       "E[τ] = (1 − α^(K+1)) / (1 − α) 在 α → 1 和 α → 0 时的极限是什么？"},
      {"α → 1: K + 1 tokens per step (a perfect draft); α → 0: 1 token, no speedup but no loss either",
       "α → 1：每步 K + 1 个 token（草稿完美）；α → 0：1 个 token，无加速但也没倒退"},
      {{"α → 1: K tokens; α → 0: 0 tokens", "α → 1：K 个 token（不含 bonus）；α → 0：0 个 token，这一步白做"},
       {"α → 1: infinity; α → 0: 1 token", "α → 1：无穷大；α → 0：1 个 token"},
       {"α → 1: K + 1 tokens; α → 0: the step fails, emits nothing, and decoding falls behind plain decoding",
        "α → 1：K + 1 个 token；α → 0：这一步失败、什么也不输出，比普通解码还慢"}},
      {"Even when every draft is rejected, the replacement drawn from p' is one target token; all accepted adds the "
       "bonus token (LLaMA-7B drafting LLaMA-70B: α ≈ 0.6–0.7, K = 4 gives E[τ] ≈ 2.7).",
       "即使全部被拒，从 p' 重采的那个也是一个目标 token；全部接受还多一个 bonus token（LLaMA-7B 给 LLaMA-70B 做草稿：α ≈ "
       "0.6–0.7，K = 4 时 E[τ] ≈ 2.7）。"},
      "kvlab spec-etau");
}

BankEntry q_000_7_5() {
  return choice(
      "000-7.5", "000 §7.5", L::engineering,
      {"With temperature or top-p sampling, what does the exactness of speculative sampling require?",
       "用 temperature / top-p 采样时，投机采样的精确等价需要什么条件？"},
      {"use the target's processed p̃; the draft's q̃ may be any distribution",
       "用目标模型处理后的分布 p̃；草稿的 q̃ 可以是任何合法分布"},
      {{"the draft must use exactly the same temperature and top-p as the target", "草稿必须用和目标模型完全相同的 temperature 与 top-p，否则就不再精确"},
       {"exactness is lost at any temperature other than 1", "温度不为 1 时就不再精确"},
       {"the target's raw logits must be used, never the processed distribution", "必须用目标模型的原始 logits，不能用处理后的分布"}},
      {"The acceptance and the residual are computed with the target's processed distribution p̃; the draft's "
       "proposal q̃ may be any valid distribution, even greedy: a poor one only lowers α. Using the same sampler for "
       "the draft is practice, not a requirement: it keeps q̃ close to p̃ and α high.",
       "接受率和残差都用目标模型经 sampler 处理后的分布 p̃；草稿的提议分布 q̃ 可以是任何合法分布（甚至贪心），偏离大只会让 α 暴跌。"
       "草稿也用同一组 sampler 是实践习惯，不是必要条件：它让 q̃ 贴近 p̃、α 更高。"},
      "kvlab spec-sampler");
}

// The bank in the order the self-test asks it: each multiple-choice question is the function named
// after its id, each numeric one draws its parameters (numeric()).
std::vector<BankEntry> build() {
  return {
      // 004 §C, 动机与直觉层.
      q_004C_01(),
      q_004C_02a(),
      q_004C_02b(),
      q_004C_03(),
      q_004C_04(),
      q_004C_05(),
      q_004C_06(),
      // 004 §C, 推导与估算层.
      q_004C_07(),
      numeric("004C-08", "004 §C 8", L::derivation, c8_kv_cache),
      numeric("004C-09a", "004 §C 9", L::derivation, c9a_ridge),
      numeric("004C-09b", "004 §C 9", L::derivation, c9b_decode_bound),
      q_004C_10(),
      q_004C_11(),
      // 004 §C, 工程与 API 层.
      q_004C_12(),
      q_004C_13(),
      q_004C_14(),
      q_004C_15(),
      q_004C_16(),
      // 004 §B 实操.
      numeric("004B-1", "004 §B 1", L::derivation, b1_intensity),
      q_004B_2a(),
      numeric("004B-2b", "004 §B 2 (b)", L::derivation, b2b_llama3_8b),
      numeric("004B-2c", "004 §B 2 (c)", L::derivation, b2c_decode_bound),
      q_004B_3(),
      q_004B_4(),
      numeric("004B-5", "004 §B 5", L::engineering, b5_naive_over_cached),
      // 003 第十讲复习题 1–10.
      q_003R_01(),
      q_003R_02(),
      q_003R_03(),
      q_003R_04(),
      q_003R_05(),
      q_003R_06(),
      q_003R_07(),
      q_003R_08(),
      q_003R_09(),
      q_003R_10(),
      // 000 §7 推导.
      numeric("000-7.2a", "000 §7.2", L::derivation, s72_alpha),
      q_000_7_2b(),
      numeric("000-7.3a", "000 §7.3", L::derivation, s73_residual),
      q_000_7_3b(),
      numeric("000-7.4a", "000 §7.4", L::derivation, s74_etau),
      q_000_7_4b(),
      numeric("000-7.4c", "000 §7.4", L::derivation, s74_speedup),
      q_000_7_5(),
  };
}

}  // namespace

const std::vector<BankEntry>& bank() {
  static const std::vector<BankEntry> entries = build();
  return entries;
}

}  // namespace kvlab::selftest_detail
