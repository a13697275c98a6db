// max-batch — 000 §2.3: how many 4K sequences of a 70B GQA model fit on 8 × A100-80GB.
//
// Claim (000 §2.3): weights ≈ 140 GB (fp16, sharded); one sample's cache ≈ 1.25 GB; memory left ≈
// 8 × 80 − 140 ≈ 500 GB, of which ≈ 400 GB go to the KV cache after activations and framework;
// theoretical max batch ≈ 400 / 1.25 ≈ 320.
// Expected, by the check's own arithmetic (never the library's output): weights N × bytes/param
// (rounding: one product per path); KV per sequence from the catalogue's independent
// kv_bytes_per_token_16bit × ctx × bits/16 (exact integers); memory left = gpus × catalogue
// memory − weights (rounding); max batch = floor(budget / per sequence) (exact). The document's
// figures are compared at their written precision: its 1.25 "GB" is GiB (E3) and its 320 divides
// GB by GiB (E4: 298 in consistent units). The 400 GB budget is the document's premise, printed as
// an assumption; the batch scales with it.
//
//   kvlab max-batch                                   000 §2.3's setup
//   kvlab max-batch --model llama-2-70b --gpus 4 --ctx 8192 --kv-dtype fp8 [--kv-budget-gb 200]
#include "checks/max_batch.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "report/writers.hpp"
#include "support/cost_common.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {
namespace {

constexpr const char* kName = "max-batch";
constexpr const char* kSource = "000 §2.3";
constexpr const char* kDocModel = "llama-3-70b";
constexpr const char* kDocGpu = "a100-80gb";
constexpr std::uint64_t kDocGpus = 8;
constexpr std::uint64_t kDocCtx = 4096;
constexpr double kDocBytesPerParam = 2.0;
// 000 §2.3's premise: of ≈ 500 GB left, "about 400 GB" go to the KV cache after activations and
// the framework's own memory. An input of the document's estimate, not a result.
constexpr double kDocKvBudgetBytes = 400e9;
constexpr double kU = std::numeric_limits<double>::epsilon() / 2;

std::string gb(double bytes) { return fmt::format("{:.4g} GB", bytes / kGB); }

}  // namespace

Result run_max_batch(const MaxBatchOptions& o, const RunContext& /*ctx*/, const MaxBatchParts& parts) {
  const bool document = !o.model && !o.gpu && !o.gpus && !o.ctx && !o.kv_dtype && !o.params && !o.weight_bytes;
  const ModelSpec m = with_option("--model", [&] { return parts.load_model(o.model.value_or(kDocModel)); });
  const GpuSpec g = with_option("--gpu", [&] { return parts.load_gpu(o.gpu.value_or(kDocGpu)); });
  const std::uint64_t gpus = o.gpus ? positive_count("--gpus", *o.gpus) : kDocGpus;
  const std::uint64_t ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDocCtx;
  const CacheDtype dtype = o.kv_dtype ? parse_cache_dtype(*o.kv_dtype) : CacheDtype::fp16;
  const double bpp = o.weight_bytes.value_or(kDocBytesPerParam);
  if (!o.params && !m.num_parameters)
    throw InputError(fmt::format("--model {}: num_parameters missing; give --params", m.name));
  const double n_params = o.params.value_or(static_cast<double>(m.num_parameters.value_or(0)));
  if (!m.kv_bytes_per_token_16bit || m.is_mla())
    throw InputError(fmt::format("--model {}: no kv_bytes_per_token_16bit reference for a K/V-head cache; "
                                 "max-batch checks the bytes against it", m.name));
  require_cache_fits(m, KvQuery{1, ctx, dtype, std::nullopt}, "--model " + m.name);
  std::optional<double> budget;
  if (o.kv_budget_gb) budget = *o.kv_budget_gb * kGB;
  else if (document) budget = kDocKvBudgetBytes;
  const BatchCapacity cap = with_option("--gpus, --gpu, --model, --params, --weight-bytes, --kv-budget-gb", [&] {
    return parts.capacity(m, g, gpus, n_params, bpp, ctx, dtype, budget);
  });

  // ---- the check's own arithmetic ----
  const double weights = n_params * bpp;
  const double memory = static_cast<double>(gpus) * static_cast<double>(g.memory_bytes);
  const double left = memory - weights;
  // The reference is every attention layer's bytes per token; a window or chunk holds fewer
  // positions (docs/design.md, layer groups): ref / layers × Σ positions held, counted layer by layer.
  const HeldByLayer held = held_by_layer(m, ctx);
  if (held.attention_layers == 0 || *m.kv_bytes_per_token_16bit % held.attention_layers != 0)
    throw InputError(fmt::format("--model {}: kv_bytes_per_token_16bit = {} does not divide over its {} "
                                 "attention layers", m.name, *m.kv_bytes_per_token_16bit, held.attention_layers));
  const std::uint64_t ref_per_seq_bits =
      checked_mul(checked_mul(*m.kv_bytes_per_token_16bit / held.attention_layers, held.positions,
                              "reference bytes"),
                  cache_dtype_bits(dtype), "reference bits") / 2;
  const std::uint64_t ref_per_seq = (ref_per_seq_bits + 7) / 8;
  const double budget_bytes = budget.value_or(left);
  const double max_batch = std::floor(budget_bytes / static_cast<double>(ref_per_seq));
  const std::string setup = fmt::format("{}, {} × {}, ctx {}, {}", m.name, gpus, g.name, ctx, cache_dtype_name(dtype));

  Result r;
  r.check = kName;
  r.source = kSource;
  r.claim = document ? "70B + 4K context + GQA on 8 × A100-80GB: weights ≈ 140 GB (fp16), one sample's cache ≈ "
                       "1.25 GB, ≈ 500 GB left, ≈ 400 GB of it for the KV cache: max batch ≈ 400 / 1.25 ≈ 320."
                     : fmt::format("{}: weights, memory left for the KV cache and the largest batch of "
                                   "{}-token sequences that fits.", setup, ctx);
  // Weights: N × bytes/param, one rounding on each path, the difference within 2u relative.
  Expectation e{.quantity = fmt::format("weights, {}, {} B/param", m.name, bpp), .source = "000 §2.3", .unit = "GB",
                .expected = weights / kGB, .tolerance = 4 * kU * weights / kGB,
                .why = "N × bytes/param in double on both paths, then / 1e9: 4u relative",
                .measured = cap.weight_bytes / kGB};
  e.arithmetic = fmt::format("{} parameters × {} B = {}", format_number(n_params), bpp, gb(weights));
  if (document) e.stated = Stated::parse("140", "≈ 140 GB (fp16, 跨卡分片)");
  r.expect(e);
  e = Expectation{.quantity = fmt::format("KV cache per sequence, {}, ctx {}, {}", m.name, ctx, cache_dtype_name(dtype)), .source = "000 §2.3", .unit = "GiB",
                  .expected = static_cast<double>(ref_per_seq) / kGiB, .tolerance = 0,
                  .why = "the catalogue's independent bytes per token × ctx against kvlab's formula: integers, exact",
                  .measured = static_cast<double>(cap.kv_bytes_per_sequence) / kGiB};
  e.arithmetic = fmt::format("{} B/token (16-bit) × {} × {}/16 = {} B = {:.4g} GiB = {:.4g} GB{}",
                             format_number(static_cast<double>(*m.kv_bytes_per_token_16bit)), ctx,
                             cache_dtype_bits(dtype), format_number(static_cast<double>(ref_per_seq)),
                             static_cast<double>(ref_per_seq) / kGiB, static_cast<double>(ref_per_seq) / kGB,
                             document ? ": the document's GB is GiB" : "");
  if (document) e.stated = Stated::parse("1.25", "≈ 1.25 GB", kGB / kGiB).flags("E3");
  r.expect(e);
  // Left: two products and a difference per path; bounded by 3u of the memory on each side.
  e = Expectation{.quantity = fmt::format("memory left after the weights, {} × {}", gpus, g.name), .source = "000 §2.3",
                  .unit = "GB", .expected = left / kGB, .tolerance = 6 * kU * memory / kGB,
                  .why = "gpus × memory − weights in double on both paths: 3u of the memory each, 6u in all",
                  .measured = cap.left_bytes / kGB};
  e.arithmetic = fmt::format("{} × {} − {} = {}", gpus, gb(static_cast<double>(g.memory_bytes)), gb(weights), gb(left));
  if (document) e.stated = Stated::parse("500", "8 × 80 − 140 ≈ 500 GB");
  r.expect(e);
  e = Expectation{.quantity = fmt::format("max batch, {}, {} of KV budget", setup, gb(budget_bytes)),
                  .source = "000 §2.3", .unit = "sequences", .expected = max_batch, .tolerance = 0,
                  .why = "whole sequences: floor of budget / exact bytes per sequence",
                  .measured = static_cast<double>(cap.max_batch)};
  const double mixed = budget_bytes / kGB / (static_cast<double>(ref_per_seq) / kGiB);
  e.arithmetic = fmt::format("floor({} / {} B) = floor({:.2f}) = {}; dividing GB by GiB instead gives {:.4g} / {:.4g} = {:.4g}",
                             gb(budget_bytes), format_number(static_cast<double>(ref_per_seq)),
                             budget_bytes / static_cast<double>(ref_per_seq), max_batch, budget_bytes / kGB,
                             static_cast<double>(ref_per_seq) / kGiB, mixed);
  if (document && !o.kv_budget_gb) e.stated = Stated::parse("320", "≈ 400 / 1.25 ≈ 320").flags("E4");
  e.headline = true;  // the answer the section asks for
  r.expect(e);

  r.metric("weight_bytes", cap.weight_bytes);
  r.metric("left_bytes", cap.left_bytes);
  r.metric("kv_budget_bytes", cap.kv_budget_bytes);
  r.metric_exact("kv_bytes_per_sequence", cap.kv_bytes_per_sequence);
  r.metric_exact("max_batch", cap.max_batch);

  Table t{fmt::format("how many {}-token sequences fit ({})", ctx, setup), {"quantity", "value", "unit", "from"}, {}};
  t.rows.push_back({fmt::format("memory of {} × {}", gpus, g.name), cap.memory_bytes / kGB, "GB",
                    "catalogue memory_bytes (the datasheet's GB)"});
  t.rows.push_back({"parameters N", n_params, "", o.params ? "--params" : "catalogue num_parameters"});
  t.rows.push_back({"weights", cap.weight_bytes / kGB, "GB", fmt::format("N × {} B, sharded across the GPUs", bpp)});
  t.rows.push_back({"left", cap.left_bytes / kGB, "GB", "memory − weights"});
  t.rows.push_back({"KV budget", cap.kv_budget_bytes / kGB, "GB",
                    o.kv_budget_gb ? "--kv-budget-gb"
                    : document    ? "the document's premise (after activations and framework overhead)"
                                  : "assumed: all memory left (no activations, no framework overhead)"});
  t.rows.push_back({"layer groups", layer_groups_text(m, ctx), "layers × kind (positions held at ctx)"});
  t.rows.push_back({"KV per sequence", static_cast<double>(cap.kv_bytes_per_sequence) / kGB, "GB",
                    fmt::format("{} ({})", attention_kind(m, kv_layout(m)), cache_dtype_name(dtype))});
  t.rows.push_back({"max batch", static_cast<std::int64_t>(cap.max_batch), "sequences", "floor(budget / per sequence)"});
  if (document) t.rows.push_back({"max batch mixing GB and GiB", mixed, "sequences", "400 GB / 1.25 GiB read as GB (the document's 320)"});
  // The same deployment if the model had one K/V head per query head: why GQA (000 §0 item 1).
  if (m.n_kv_head != m.n_head) {
    ModelSpec mha = m;
    mha.n_kv_head = m.n_head;
    const std::uint64_t mha_seq = kv_cache_size(mha, KvQuery{1, ctx, dtype, std::nullopt}).total_bytes;
    t.rows.push_back({fmt::format("max batch with MHA ({} K/V heads)", m.n_head),
                      static_cast<std::int64_t>(std::floor(cap.kv_budget_bytes / static_cast<double>(mha_seq))),
                      "sequences", fmt::format("{} per sequence", gb(static_cast<double>(mha_seq)))});
  }
  t.rows.push_back({"max batch if all that is left held KV",
                    static_cast<std::int64_t>(std::floor(cap.left_bytes / static_cast<double>(cap.kv_bytes_per_sequence))),
                    "sequences", "no activations, no overhead"});
  r.tables.push_back(std::move(t));

  r.notes.push_back("assumptions: weights sharded evenly across the GPUs, every sequence at the full context, the "
                    "cache in one contiguous budget (no fragmentation: the real batch is smaller, hence "
                    "PagedAttention, 000 §5), decimal GB throughout.");
  if (document)
    r.notes.push_back(fmt::format("the 400 GB KV budget is 000 §2.3's own rough premise: of {} left it sets aside an "
                                  "unstated ≈ {} for activations and framework; the batch scales with it "
                                  "(--kv-budget-gb).", gb(cap.left_bytes), gb(cap.left_bytes - kDocKvBudgetBytes)));
  r.notes.push_back(fmt::format("{} memory: the catalogue keeps the datasheet's {}; nvidia-smi reports binary units "
                                "(an A100-80GB shows 81,920 MiB = 80 GiB).", g.name, gb(static_cast<double>(g.memory_bytes))));
  return r;
}

namespace {

class MaxBatch final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override { return "70B + 4K + GQA on 8 × A100-80GB: weights, memory left, max batch (≈ 320, E4: 298)"; }
  std::string description() const override {
    return "Sizes a deployment: weights (N × bytes/param, sharded), the memory left on --gpus × --gpu,\n"
           "the KV cache of one --ctx sequence, and the largest batch a KV budget holds. Without\n"
           "options: 000 §2.3's setup and its 400 GB budget, against the document's figures.";
  }
  std::string derivation() const override {
    return "weights = 70.55e9 params × 2 B = 141.1 GB; memory = 8 × 80 GB = 640 GB; left = 498.9 GB.\n"
           "One 4K sequence: 2 (K, V) × 80 layers × 8 K/V heads × 128 × 4096 × 2 B = 1,342,177,280 B\n"
           "= 1.25 GiB = 1.342 GB. With the document's 400 GB budget: floor(400 / 1.342) = 298;\n"
           "its 320 = 400 / 1.25 divides GB by GiB (E4). MHA (64 K/V heads) would fit 37.\n"
           "Source: 000 §2.3.";
  }
  void bind(OptionSet& sub) override {
    model_ = sub.add_option("--model", model_v_, "Catalogue model (default llama-3-70b)");
    gpu_ = sub.add_option("--gpu", gpu_v_, "Catalogue GPU (default a100-80gb)");
    gpus_ = sub.add_option("--gpus", gpus_v_, "GPUs the weights are sharded across (default 8)")->check(IntRange(1, 4096));
    ctx_ = sub.add_option("--ctx", ctx_v_, "Tokens per sequence, e.g. 4096, 4k, 128k (default 4096)")
               ->transform(TokenCount(std::int64_t{1} << 32));
    dtype_ = sub.add_option("--kv-dtype", dtype_v_, "Cache element type (default fp16)")
                 ->check(IsMember({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}));
    params_ = sub.add_option("--params", params_v_, "Parameters N (default the model's num_parameters)")
                  ->check(FiniteRange(1.0, 1e15));
    wbytes_ = sub.add_option("--weight-bytes", wbytes_v_, "Bytes per parameter (default 2)")->check(FiniteRange(1.0 / 64, 64.0));
    budget_ = sub.add_option("--kv-budget-gb", budget_v_,
                             "KV budget in GB (default: 400, the document's, for its setup; else all memory left)")
                  ->check(FiniteRange(0.0, 1e9));
  }
  Result run(const RunContext& ctx) override {
    MaxBatchOptions o;
    if (model_ && model_->given()) o.model = model_v_;
    if (gpu_ && gpu_->given()) o.gpu = gpu_v_;
    if (gpus_ && gpus_->given()) o.gpus = gpus_v_;
    if (ctx_ && ctx_->given()) o.ctx = ctx_v_;
    if (dtype_ && dtype_->given()) o.kv_dtype = dtype_v_;
    if (params_ && params_->given()) o.params = params_v_;
    if (wbytes_ && wbytes_->given()) o.weight_bytes = wbytes_v_;
    if (budget_ && budget_->given()) o.kv_budget_gb = budget_v_;
    return run_max_batch(o, ctx);
  }

 private:
  std::string model_v_, gpu_v_, dtype_v_;
  std::int64_t gpus_v_ = 8, ctx_v_ = 4096;
  double params_v_ = 0, wbytes_v_ = 2, budget_v_ = 400;
  Option *model_ = nullptr, *gpu_ = nullptr, *gpus_ = nullptr, *ctx_ = nullptr, *dtype_ = nullptr,
              *params_ = nullptr, *wbytes_ = nullptr, *budget_ = nullptr;
};

KVLAB_REGISTER_CHECK(390, MaxBatch);

}  // namespace
}  // namespace kvlab::checks
