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

namespace kvlab::checks::max_batch {
namespace {

constexpr const char* kName = "max-batch";
constexpr const char* kSource = "000 §2.3";
// 000 §2.3's premise: of ≈ 500 GB left, "about 400 GB" go to the KV cache after activations and
// the framework's own memory. An input of the document's estimate, not a result.
constexpr double kDocKvBudgetBytes = 400e9;
constexpr double kU = std::numeric_limits<double>::epsilon() / 2;

std::string gb(double bytes) { return fmt::format("{:.4g} GB", bytes / kGB); }

std::string setup_text(const MaxBatchMeasured& m) {
  return fmt::format("{}, {} × {}, ctx {}, {}", m.model.name, m.gpus, m.gpu.name, m.ctx, cache_dtype_name(m.dtype));
}

/// The reference bytes of one sequence: the catalogue's every-attention-layer bytes per token,
/// spread over the layers and counted at the positions each holds (a window or chunk holds fewer;
/// docs/design.md, layer groups), scaled to the cache's bits.
std::uint64_t reference_bytes(const ModelSpec& m, std::uint64_t ctx, CacheDtype dtype) {
  const HeldByLayer held = held_by_layer(m, ctx);
  if (held.attention_layers == 0 || *m.kv_bytes_per_token_16bit % held.attention_layers != 0)
    throw InputError(fmt::format("--model {}: kv_bytes_per_token_16bit = {} does not divide over its {} "
                                 "attention layers", m.name, *m.kv_bytes_per_token_16bit, held.attention_layers));
  const std::uint64_t bits =
      checked_mul(checked_mul(*m.kv_bytes_per_token_16bit / held.attention_layers, held.positions,
                              "reference bytes"),
                  cache_dtype_bits(dtype), "reference bits") / 2;
  return (bits + 7) / 8;
}

double mixed_units_batch(const MaxBatchMeasured& m) {
  return m.budget_bytes / kGB / (static_cast<double>(m.reference_kv_bytes) / kGiB);
}

}  // namespace

MaxBatchMeasured measure_max_batch(const MaxBatchOptions& o, const MaxBatchParts& parts) {
  MaxBatchMeasured r{.options = o};
  // 000 §2.3's setup (MaxBatchOptions' defaults), however it was asked for: the same deployment
  // gets the same answer, the document's budget and figures included.
  const MaxBatchOptions doc;
  r.document = o.model == doc.model && o.gpu == doc.gpu && o.gpus == doc.gpus && o.ctx == doc.ctx &&
               o.kv_dtype == doc.kv_dtype && !o.params && o.weight_bytes == doc.weight_bytes;
  const ModelSpec& m = r.model = with_option("--model", [&] { return parts.load_model(o.model); });
  r.gpu = with_option("--gpu", [&] { return parts.load_gpu(o.gpu); });
  r.gpus = positive_count("--gpus", o.gpus);
  r.ctx = positive_count("--ctx", o.ctx);
  r.dtype = parse_cache_dtype(o.kv_dtype);
  r.bytes_per_param = o.weight_bytes;
  if (!o.params && !m.num_parameters)
    throw InputError(fmt::format("--model {}: num_parameters missing; give --params", m.name));
  r.params = o.params.value_or(static_cast<double>(m.num_parameters.value_or(0)));
  if (!m.kv_bytes_per_token_16bit || m.is_mla())
    throw InputError(fmt::format("--model {}: no kv_bytes_per_token_16bit reference for a K/V-head cache; "
                                 "max-batch checks the bytes against it", m.name));
  require_cache_fits(m, KvQuery{1, r.ctx, r.dtype, std::nullopt}, "--model " + m.name);
  std::optional<double> budget;
  if (o.kv_budget_gb) budget = *o.kv_budget_gb * kGB;
  else if (r.document) budget = kDocKvBudgetBytes;
  // First without the budget, so that weights too large for the GPUs blame the deployment and a
  // budget beyond what the weights leave blames --kv-budget-gb alone, with the figures.
  const BatchCapacity deployment = with_option("--gpus, --gpu, --model, --params, --weight-bytes", [&] {
    return parts.capacity(m, r.gpu, r.gpus, r.params, r.bytes_per_param, r.ctx, r.dtype, std::nullopt);
  });
  if (o.kv_budget_gb && !(*budget <= deployment.left_bytes))
    throw InputError(fmt::format("--kv-budget-gb: must be in [0, {:.9g}], the GB that {} × {} ({:.6g} GB) leave after "
                                 "{:.6g} GB of weights (got {:.9g})",
                                 deployment.left_bytes / kGB, r.gpus, r.gpu.name, deployment.memory_bytes / kGB,
                                 deployment.weight_bytes / kGB, *o.kv_budget_gb));
  r.capacity = with_option("--kv-budget-gb", [&] {
    return parts.capacity(m, r.gpu, r.gpus, r.params, r.bytes_per_param, r.ctx, r.dtype, budget);
  });
  r.reference_kv_bytes = reference_bytes(m, r.ctx, r.dtype);
  r.budget_bytes = budget.value_or(static_cast<double>(r.gpus) * static_cast<double>(r.gpu.memory_bytes) -
                                   r.params * r.bytes_per_param);
  // The same deployment if the model had one K/V head per query head: why GQA (000 §0 item 1).
  if (m.n_kv_head != m.n_head) {
    ModelSpec mha = m;
    mha.n_kv_head = m.n_head;
    r.mha_kv_bytes = kv_cache_size(mha, KvQuery{1, r.ctx, r.dtype, std::nullopt}).total_bytes;
  }
  return r;
}

std::vector<Expectation> judge_max_batch(const MaxBatchMeasured& m) {
  const BatchCapacity& cap = m.capacity;
  const double weights = m.params * m.bytes_per_param;
  const double memory = static_cast<double>(m.gpus) * static_cast<double>(m.gpu.memory_bytes);
  const double left = memory - weights, ref = static_cast<double>(m.reference_kv_bytes);
  std::vector<Expectation> rows;
  // Weights: N × bytes/param, one rounding on each path, the difference within 2u relative.
  Expectation e{.quantity = fmt::format("weights, {}, {} B/param", m.model.name, m.bytes_per_param), .source = "000 §2.3",
                .unit = "GB", .expected = weights / kGB, .tolerance = 4 * kU * weights / kGB,
                .why = "N × bytes/param in double on both paths, then / 1e9: 4u relative",
                .measured = cap.weight_bytes / kGB};
  e.arithmetic = fmt::format("{} parameters × {} B = {}", format_number(m.params), m.bytes_per_param, gb(weights));
  if (m.document) e.stated = Stated::parse("140", "≈ 140 GB (fp16, 跨卡分片)");
  rows.push_back(std::move(e));
  e = Expectation{.quantity = fmt::format("KV cache per sequence, {}, ctx {}, {}", m.model.name, m.ctx,
                                          cache_dtype_name(m.dtype)),
                  .source = "000 §2.3", .unit = "GiB", .expected = ref / kGiB, .tolerance = 0,
                  .why = "the catalogue's independent bytes per token × ctx against kvlab's formula: integers, exact",
                  .measured = static_cast<double>(cap.kv_bytes_per_sequence) / kGiB};
  e.arithmetic = fmt::format("{} B/token (16-bit) × {} × {}/16 = {} B = {:.4g} GiB = {:.4g} GB{}",
                             format_number(static_cast<double>(*m.model.kv_bytes_per_token_16bit)), m.ctx,
                             cache_dtype_bits(m.dtype), format_number(ref), ref / kGiB, ref / kGB,
                             m.document ? ": the document's GB is GiB" : "");
  if (m.document) e.stated = Stated::parse("1.25", "≈ 1.25 GB", kGB / kGiB).flags("E3");
  rows.push_back(std::move(e));
  // Left: two products and a difference per path; bounded by 3u of the memory on each side.
  e = Expectation{.quantity = fmt::format("memory left after the weights, {} × {}", m.gpus, m.gpu.name),
                  .source = "000 §2.3", .unit = "GB", .expected = left / kGB, .tolerance = 6 * kU * memory / kGB,
                  .why = "gpus × memory − weights in double on both paths: 3u of the memory each, 6u in all",
                  .measured = cap.left_bytes / kGB};
  e.arithmetic = fmt::format("{} × {} − {} = {}", m.gpus, gb(static_cast<double>(m.gpu.memory_bytes)), gb(weights),
                             gb(left));
  if (m.document) e.stated = Stated::parse("500", "8 × 80 − 140 ≈ 500 GB");
  rows.push_back(std::move(e));
  const double max_batch = std::floor(m.budget_bytes / ref);
  e = Expectation{.quantity = fmt::format("max batch, {}, {} of KV budget", setup_text(m), gb(m.budget_bytes)),
                  .source = "000 §2.3", .unit = "sequences", .expected = max_batch, .tolerance = 0,
                  .why = "whole sequences: floor of budget / exact bytes per sequence",
                  .measured = static_cast<double>(cap.max_batch)};
  e.arithmetic = fmt::format("floor({} / {} B) = floor({:.2f}) = {}; dividing GB by GiB instead gives {:.4g} / {:.4g} "
                             "= {:.4g}", gb(m.budget_bytes), format_number(ref), m.budget_bytes / ref, max_batch,
                             m.budget_bytes / kGB, ref / kGiB, mixed_units_batch(m));
  if (m.document && !m.options.kv_budget_gb) e.stated = Stated::parse("320", "≈ 400 / 1.25 ≈ 320").flags("E4");
  e.headline = true;  // the answer the section asks for
  rows.push_back(std::move(e));
  return rows;
}

namespace {

Table capacity_table(const MaxBatchMeasured& m) {
  const BatchCapacity& cap = m.capacity;
  const MaxBatchOptions& o = m.options;
  Table t{fmt::format("how many {}-token sequences fit ({})", m.ctx, setup_text(m)), {"quantity", "value", "unit", "from"}, {}};
  t.rows.push_back({fmt::format("memory of {} × {}", m.gpus, m.gpu.name), cap.memory_bytes / kGB, "GB",
                    "catalogue memory_bytes (the datasheet's GB)"});
  t.rows.push_back({"parameters N", m.params, "", o.params ? "--params" : "catalogue num_parameters"});
  t.rows.push_back({"weights", cap.weight_bytes / kGB, "GB",
                    fmt::format("N × {} B, sharded across the GPUs", m.bytes_per_param)});
  t.rows.push_back({"left", cap.left_bytes / kGB, "GB", "memory − weights"});
  t.rows.push_back({"KV budget", cap.kv_budget_bytes / kGB, "GB",
                    o.kv_budget_gb ? "--kv-budget-gb"
                    : m.document  ? "the document's premise (after activations and framework overhead)"
                                  : "assumed: all memory left (no activations, no framework overhead)"});
  t.rows.push_back({"layer groups", layer_groups_text(m.model, m.ctx), "", "layers × kind (positions held at ctx)"});
  t.rows.push_back({"KV per sequence", static_cast<double>(cap.kv_bytes_per_sequence) / kGB, "GB",
                    fmt::format("{} ({})", attention_kind(m.model, kv_layout(m.model)), cache_dtype_name(m.dtype))});
  t.rows.push_back({"max batch", static_cast<std::int64_t>(cap.max_batch), "sequences", "floor(budget / per sequence)"});
  if (m.document)
    t.rows.push_back({"max batch mixing GB and GiB", mixed_units_batch(m), "sequences",
                      "400 GB / 1.25 GiB read as GB (the document's 320)"});
  if (m.mha_kv_bytes)
    t.rows.push_back({fmt::format("max batch with MHA ({} K/V heads)", m.model.n_head),
                      static_cast<std::int64_t>(std::floor(cap.kv_budget_bytes / static_cast<double>(m.mha_kv_bytes))),
                      "sequences", fmt::format("{} per sequence", gb(static_cast<double>(m.mha_kv_bytes)))});
  t.rows.push_back({"max batch if all that is left held KV",
                    static_cast<std::int64_t>(std::floor(cap.left_bytes / static_cast<double>(cap.kv_bytes_per_sequence))),
                    "sequences", "no activations, no overhead"});
  return t;
}

void present(const MaxBatchMeasured& m, Result& r) {
  const BatchCapacity& cap = m.capacity;
  r.metric("weight_bytes", cap.weight_bytes);
  r.metric("left_bytes", cap.left_bytes);
  r.metric("kv_budget_bytes", cap.kv_budget_bytes);
  r.metric_exact("kv_bytes_per_sequence", cap.kv_bytes_per_sequence);
  r.metric_exact("max_batch", cap.max_batch);
  r.tables.push_back(capacity_table(m));
  r.notes.push_back("assumptions: weights sharded evenly across the GPUs, every sequence at the full context, the "
                    "cache in one contiguous budget (no fragmentation: the real batch is smaller, hence "
                    "PagedAttention, 000 §5), decimal GB throughout.");
  if (m.document)
    r.notes.push_back(fmt::format("the 400 GB KV budget is 000 §2.3's own rough premise: of {} left it sets aside an "
                                  "unstated ≈ {} for activations and framework; the batch scales with it "
                                  "(--kv-budget-gb).", gb(cap.left_bytes), gb(cap.left_bytes - kDocKvBudgetBytes)));
  r.notes.push_back(fmt::format("{} memory: the catalogue keeps the datasheet's {}; nvidia-smi reports binary units "
                                "(an A100-80GB shows 81,920 MiB = 80 GiB).", m.gpu.name,
                                gb(static_cast<double>(m.gpu.memory_bytes))));
}

}  // namespace

const CheckDef<MaxBatchOptions, MaxBatchMeasured>& max_batch_check() {
  static const CheckDef<MaxBatchOptions, MaxBatchMeasured> def{
      .spec = {.name = kName,
               .order = 390,
               .source = kSource,
               .summary = "70B + 4K + GQA on 8 × A100-80GB: weights, memory left, max batch (≈ 320, E4: 298)",
               .claim_zh = "70B + 4K + GQA 在 8 × A100-80GB 上：权重、剩余显存与最大 batch",
               .description =
                   "Sizes a deployment: weights (N × bytes/param, sharded), the memory left on --gpus × --gpu,\n"
                   "the KV cache of one --ctx sequence, and the largest batch a KV budget holds. Without\n"
                   "options: 000 §2.3's setup and its 400 GB budget, against the document's figures.",
               .derivation =
                   "weights = 70.55e9 params × 2 B = 141.1 GB; memory = 8 × 80 GB = 640 GB; left = 498.9 GB.\n"
                   "One 4K sequence: 2 (K, V) × 80 layers × 8 K/V heads × 128 × 4096 × 2 B = 1,342,177,280 B\n"
                   "= 1.25 GiB = 1.342 GB. With the document's 400 GB budget: floor(400 / 1.342) = 298;\n"
                   "its 320 = 400 / 1.25 divides GB by GiB (E4). MHA (64 K/V heads) would fit 37.\n"
                   "Source: 000 §2.3."},
      // The defaults are 000 §2.3's setup (CLI11 shows them); --params and --kv-budget-gb, whose
      // defaults depend on the others, say theirs in words (an empty optional shows none).
      .options = {{"--model", &MaxBatchOptions::model, Allowed::any_value(), "Catalogue model (data/models)"},
                  {"--gpu", &MaxBatchOptions::gpu, Allowed::any_value(), "Catalogue GPU (data/hardware)"},
                  {"--gpus", &MaxBatchOptions::gpus, Allowed::integers(1, 4096), "GPUs the weights are sharded across"},
                  {"--ctx", &MaxBatchOptions::ctx, Allowed::tokens(std::int64_t{1} << 32),
                   "Tokens per sequence, e.g. 4096, 4k, 128k"},
                  {"--kv-dtype", &MaxBatchOptions::kv_dtype,
                   Allowed::one_of({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}), "Cache element type"},
                  {"--params", &MaxBatchOptions::params, Allowed::reals(1.0, 1e15),
                   "Parameters N (default the model's num_parameters)"},
                  {"--weight-bytes", &MaxBatchOptions::weight_bytes, Allowed::reals(1.0 / 64, 64.0),
                   "Bytes per parameter"},
                  {"--kv-budget-gb", &MaxBatchOptions::kv_budget_gb, Allowed::reals(0.0, 1e9),
                   "KV budget in GB (default: 400, the document's, for its setup; else all memory left)"}},
      .measure = [](const MaxBatchOptions& o, const RunContext&) { return measure_max_batch(o); },
      .judge = judge_max_batch,
      .present = present,
      .claim =
          [](const MaxBatchMeasured& m) {
            return m.document ? std::string("70B + 4K context + GQA on 8 × A100-80GB: weights ≈ 140 GB (fp16), one "
                                            "sample's cache ≈ 1.25 GB, ≈ 500 GB left, ≈ 400 GB of it for the KV "
                                            "cache: max batch ≈ 400 / 1.25 ≈ 320.")
                              : fmt::format("{}: weights, memory left for the KV cache and the largest batch of "
                                            "{}-token sequences that fits.", setup_text(m), m.ctx);
          }};
  return def;
}

Result run_max_batch(const MaxBatchOptions& o, const RunContext& ctx, const MaxBatchParts& parts) {
  return run_check(max_batch_check(), o, ctx, [&parts](const MaxBatchOptions& opts, const RunContext&) {
    return measure_max_batch(opts, parts);
  });
}

KVLAB_REGISTER_SPEC(max_batch_check);

}  // namespace kvlab::checks::max_batch
