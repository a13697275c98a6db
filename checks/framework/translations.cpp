#include "framework/translations.hpp"

#include <utility>

namespace kvlab::checks {
namespace {

// Check name → claim in Chinese, in document order (`kvlab list`).
constexpr std::pair<std::string_view, std::string_view> kClaimsZh[] = {
    {"kv-invariance", "过去 token 的 K/V 不会因后续 token 而改变：n 与 n+1 个 token 时的最大差恰为 0（004 §1.2）"},
    {"incremental-vs-full", "带 KV Cache 的增量解码与完整前向一致（MHA、GQA、MQA、分块预填充、RoPE、MLA）"},
    {"kv-size", "KV Cache 大小 = 2 × 层数 × KV 头数 × head_dim × 序列长度 × batch × 每元素字节数"},
    {"roofline", "解码步的 Roofline：FLOPs、字节、算术强度与 GPU 的拐点（ridge point），步时与 tokens/s"},
    {"cat-vs-prealloc", "torch.cat 逐步拼接移动 n(n+1)/2 个位置，预分配只写 n 个（4096 时约 2048 倍）"},
    {"spec-alpha", "接受率 α = Σ min(p, q) = 1 − TV(p, q)，与拒绝采样器的实测比较"},
    {"spec-etau", "每个投机步的期望 token 数 E[τ] = (1 − α^(K+1))/(1 − α)，与模拟比较"},
    {"rope-relative", "RoPE：R_tᵀR_s = R_(s−t)；两个位置同时平移时注意力分数不变"},
    {"mla-cache", "MLA 每 token 只缓存 d_c + d_r = 576 个元素，GQA 为 2048，MHA 为 16384"},
    {"mla-absorb", "MLA 矩阵吸收后的 logits 与朴素计算一致；每个解码步的 FLOPs 与字节"},
    {"rope-breaks-absorb", "在 MLA 潜向量上直接加 RoPE：W_UQ R_(s−t) W_UKᵀ 随 s − t 变化，无法吸收"},
    {"mla-decoupled", "解耦 RoPE：分数 = 吸收后的内容项 + RoPE 点积；缓存版与完整计算一致"},
    {"sliding-window", "滑动窗口：大小为 W 的滚动缓存 = 窗口掩码注意力；显存封顶为 W；感受野随层数增长"},
    {"cla", "跨层注意力（CLA）：缓存与 K/V 权重减半；解码与完整计算一致"},
    {"kv-quant", "KV Cache 量化：fp8/int8 省一半、int4 省四分之三（另加 scale），误差有界；KIVI 按通道量化 K"},
    {"int8-outliers", "absmax int8 矩阵乘法遇离群特征失效；LLM.int8() 的分解能恢复精度"},
    {"spec-residual", "残差分布 p′ = max(0, p − q)/(1 − α)：min(p, q) + (1 − α)·p′ = p，一步输出分布就是 p"},
    {"spec-greedy", "温度为 0 时，投机解码与目标模型的贪心解码逐 token 一致"},
    {"spec-exact", "投机解码的输出分布等于目标模型的分布（TV 上界与卡方检验）"},
    {"spec-sampler", "目标模型上的温度/top-k/top-p：任何草稿采样器下输出都是 p̃；贪心草稿降低 α"},
    {"spec-speedup", "两个 mini-GPT、K = 1..8：α 与每步 token 数对照 E[τ]；加速比 E[τ]/(1 + Kc) 对照实测"},
    {"spec-wallclock", "基准：在本机的访存受限目标模型上，投机解码的墙钟加速比"},
    {"typical-acceptance", "Medusa 的 typical acceptance 不是无损的（TV 超出上界）；拒绝采样是无损的"},
    {"jacobi", "Jacobi 迭代至多 n 次并行前向即可得到 n 个 token 的贪心输出"},
    {"tree-verify", "树注意力 = 逐路径验证（5^N 条路径）；多候选采样仍是无损的"},
    {"cache-flops", "生成的 FLOPs：朴素 O(T²d² + T³d)，有缓存 O(Td² + T²d)，逐项计数"},
    {"attn-params", "K+V 投影参数量：MHA 2D²，MQA 2·D·d_head，GQA 2·G·D·d_head"},
    {"cache-shape", "KV Cache 张量的形状与字节数与公式一致"},
    {"bidirectional", "双向掩码下追加一个 token 会改变旧的 K/V（所以 BERT 没有 KV Cache）"},
    {"query-not-cached", "最后一个输出只需要它自己的 q 和全部 K/V；更早的 query 不影响结果（所以不缓存 Q）"},
    {"abs-pos-window", "滑动窗口：学习式位置编码下 K 会变（需重建）；RoPE 下分数不变"},
    {"gqa-equals-mha", "G = h 时 GQA 就是 MHA：最大差恰为 0"},
    {"gqa-meanpool", "MHA → GQA 对 K/V 头做均值池化：组内各头越接近，损失越小"},
    {"position-offset", "忘记起始位置：不报错，但 logits 不同"},
    {"causal-mask", "T 个 query 对 S 个 key 的掩码 = tril(对角线偏移 S − T)；is_causal 只对齐到 key 0"},
    {"gqa-layout", "repeat_interleave = expand+reshape = 分组内核 [0,0,1,1]；repeat 得到 [0,1,0,1]"},
    {"linear-attention", "线性注意力：状态大小不随 t 增长，而 KV Cache 与 softmax 计算随 t 线性增长"},
    {"greedy-generate", "带缓存的贪心生成与朴素生成逐 token 一致，超过 block_size 后亦然"},
    {"bench-generate", "朴素与带缓存生成：计数的工作量（判定）与每 token 时间（展示）"},
    {"complexity", "预填充、解码与生成的 FLOPs 计数，对照 O(N²d)、O(td + d²)、O((N+T)³d)、O((N+T)²d)"},
    {"intensity", "算术强度：MLP 随 batch 增长，解码注意力对任何 batch 都约为 1，预填充随提示长度增长"},
    {"ragged-batch", "不等长 batch：展平后的 MLP 与逐请求计算一致；注意力仍按请求分开"},
    {"max-batch", "70B + 4K + GQA 在 8 × A100-80GB 上：权重、剩余显存与最大 batch"},
    {"paged-cache", "块表 [12, 7, 34, 19] / [12, 7, 5]、引用计数、写时复制（copy-on-write）"},
    {"paged-vs-contiguous", "分页解码与连续缓存解码一致（块大小 1、16、大于序列）"},
    {"prefix-cache", "共享系统提示：按链式哈希复用块，块中途写时复制，logits 不变"},
    {"parallel-sampling", "同一提示的 n 个样本共享其块：F + n·(⌈L/B⌉ − F) 对 n·⌈L/B⌉"},
    {"fragmentation", "KV 显存利用率与 batch：按最大长度预分配、按实际长度连续分配、分页"},
    {"continuous-batching", "静态批处理与迭代级（Orca）连续批处理在同一模拟请求流上：吞吐、TTFT、TPOT"},
    {"chunked-prefill", "长提示的预填充会让解码停顿，分块预填充（Sarathi-Serve）消除停顿"},
    {"cpu-roofline", "基准：kvlab 的 f32 解码/预填充对照本机实测的 Roofline"},
    {"spec-real", "在 fortunes 文本上训练的一对模型：T = 1 与 0 时的 α、每步 token 数对照 E[τ]、加速比"},
};

}  // namespace

std::string claim_zh(std::string_view name) {
  for (const auto& [check, claim] : kClaimsZh)
    if (check == name) return std::string(claim);
  return {};
}

}  // namespace kvlab::checks
