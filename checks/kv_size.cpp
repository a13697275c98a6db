// kv-size — how many bytes the KV cache takes (004 §1.4 group 4; 000 §0, §2.1–2.3, §4.2; 003 Q5).
// kvlab's formula on the catalogue's configs against the catalogue's independent per-token
// reference (data/facts.md); with no options every KV-size figure the documents give, their own
// figures checked at the precision written (errata flagged); with --model or --config a calculator.
//
//   kvlab kv-size                                          the course's table and estimates
//   kvlab kv-size --model llama-2-70b --batch 32 --ctx 8192 [--kv-heads 64 | --kv-heads 1]
//   kvlab kv-size --config path/to/config.json --kv-dtype int4
#include "kv_size.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cost/premises.hpp"
#include "report/writers.hpp"
#include "support/cheatsheet_cells.hpp"
#include "support/cost_common.hpp"

namespace kvlab::checks::kv_size {
namespace {

constexpr const char* kClaim =
    "KV cache bytes = 2 · L · n_kv · head_dim · batch · ctx · bytes/element (MLA: L · (d_c + d_r) "
    "· batch · ctx · bytes/element): Llama 2 7B needs half a megabyte per token; 70B with GQA-8 at "
    "batch 32 × 8192 in bf16 needs 80 GiB (MHA 640 GiB, MQA 10 GiB).";
constexpr const char* kExact = "integer byte counts on both sides, converted by the same division: exact";
constexpr std::uint64_t kDefaultBatch = 1;
constexpr std::uint64_t kDefaultCtx = 4096;
constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
// 000 §2.3's premise: of 8 × 80 GB, after 140 GB of weights and activation/framework overhead,
// "about 400 GB" is left for the KV cache. An input of the document's estimate, not a result.
constexpr double kDoc23KvBudgetBytes = 400e9;

/// One line of the sweep: a label and a model, possibly with its K/V heads overridden.
struct SweepLine {
  std::string label;
  const ModelSpec* model;
  std::optional<std::uint64_t> kv_heads;
};

/// The cache in GiB at contexts 128, 256, ... up to ctx_max (and ctx_max itself), for each line;
/// a size past 64 bits is NaN.
KvSizeSweep context_sweep(const std::vector<SweepLine>& lines, std::uint64_t batch, CacheDtype dtype,
                          std::uint64_t ctx_max, const KvSizeParts& parts) {
  KvSizeSweep sw{batch, dtype, {}, {}, {}};
  for (std::uint64_t c = std::min<std::uint64_t>(128, ctx_max); c < ctx_max && sw.contexts.size() < 40; c *= 2)
    sw.contexts.push_back(c);
  sw.contexts.push_back(ctx_max);
  for (const auto& line : lines) {
    sw.labels.push_back(line.label);
    std::vector<double>& gib = sw.gib.emplace_back();
    for (std::uint64_t c : sw.contexts) {
      gib.push_back(std::numeric_limits<double>::quiet_NaN());
      try {
        gib.back() = static_cast<double>(parts.cache_size(*line.model, KvQuery{batch, c, dtype, line.kv_heads})
                                             .total_bytes) / kGiB;
      } catch (const InputError&) {  // past 64 bits: no point, "—" in the table
      }
    }
  }
  return sw;
}

KvSizeMeasured measure_course(const KvSizeParts& parts) {
  KvSizeMeasured out;
  KvSizeCourse& c = out.course.emplace();
  const auto size = [&](const ModelSpec& m, std::uint64_t batch, std::uint64_t ctx, CacheDtype d,
                        std::optional<std::uint64_t> heads = std::nullopt) {
    return parts.cache_size(m, KvQuery{batch, ctx, d, heads});
  };
  c.l2_7 = parts.load_model("llama-2-7b");
  c.l2_13 = parts.load_model("llama-2-13b");
  c.l2_70 = parts.load_model("llama-2-70b");
  c.l3_8 = parts.load_model("llama-3-8b");
  c.l3_70 = parts.load_model("llama-3-70b");
  c.dsv2 = parts.load_model("deepseek-v2");
  for (const ModelSpec* m : {&c.l2_7, &c.l2_13, &c.l2_70, &c.l3_8}) {
    c.per_token.push_back(size(*m, 1, 1, CacheDtype::bf16));
    c.per_seq.push_back(size(*m, 1, 4096, CacheDtype::bf16));
  }
  for (const auto heads : {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{c.l2_70.n_head},
                           std::optional<std::uint64_t>{1}})
    c.variants.push_back(size(c.l2_70, 32, 8192, CacheDtype::bf16, heads));
  c.l3_70_4k = size(c.l3_70, 1, 4096, CacheDtype::fp16);
  c.a100 = with_option("catalogue GPU a100-80gb", [] { return load_gpu(premises::kGpu); });
  c.dsv2_4k = size(c.dsv2, 1, 4096, CacheDtype::fp16);
  c.q5 = size(c.l2_7, 1, 2048, CacheDtype::fp16);
  c.q5_fp32 = size(c.l2_7, 1, 2048, CacheDtype::fp32);
  c.q5_batch2 = size(c.l2_7, 2, 2048, CacheDtype::fp16);
  c.mha_70 = size(c.l2_70, 1, 1, CacheDtype::bf16, c.l2_70.n_head);
  out.sweep = context_sweep({{"llama-2-7b (MHA)", &c.l2_7, {}}, {"llama-2-13b (MHA)", &c.l2_13, {}},
                             {"llama-2-70b (GQA-8)", &c.l2_70, {}}, {"llama-3-8b (GQA-8)", &c.l3_8, {}}},
                            1, CacheDtype::bf16, 32768, parts);
  c.cheat = cheatsheet_tables(parts.cheat_table);
  return out;
}

KvSizeMeasured measure_calculator(const KvSizeOptions& o, const KvSizeParts& parts) {
  KvSizeMeasured out{.options = o};
  KvSizeCalc& c = out.calc.emplace();
  c.model = resolve_model(o.model, o.config, parts.load_model, parts.read_config);
  const ModelSpec& m = c.model;
  KvQuery& q = c.query;
  q.batch = o.batch ? positive_count("--batch", *o.batch) : kDefaultBatch;
  q.ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDefaultCtx;
  q.dtype = o.kv_dtype ? parse_cache_dtype(*o.kv_dtype) : CacheDtype::bf16;
  if (o.kv_heads) q.kv_heads = positive_count("--kv-heads", *o.kv_heads);
  require_cache_fits(m, q, model_origin(o.model, o.config));
  c.size = parts.cache_size(m, q);
  c.held = kv_held(m, q);
  for (CacheDtype d : all_cache_dtypes()) {
    KvSizeDtypeRow row{d, parts.cache_size(m, KvQuery{1, 1, d, q.kv_heads}), std::nullopt};
    std::uint64_t bits = 0;
    if (!__builtin_mul_overflow(c.size.tokens, row.one.bits_per_token, &bits)) {  // else a wider dtype than asked
      KvQuery qd = q;
      qd.dtype = d;
      row.total = parts.cache_size(m, qd);
    }
    c.dtypes.push_back(row);
  }
  c.own16 = parts.cache_size(m, KvQuery{1, 1, CacheDtype::bf16, {}});
  c.counted_bits = checked_mul(count_elements(kv_cache_tensors(m, q)), cache_dtype_bits(q.dtype), "KV-cache bits");
  std::vector<SweepLine> lines{{q.kv_heads ? fmt::format("{} with {} K/V heads", m.name, *q.kv_heads) : m.name, &m,
                                q.kv_heads}};
  if (!c.size.layout.mla && m.n_head > 1) {
    if (c.size.layout.kv_heads != m.n_head) lines.push_back({fmt::format("as MHA ({} K/V heads)", m.n_head), &m, m.n_head});
    if (c.size.layout.kv_heads != 1) lines.push_back({"as MQA (1 K/V head)", &m, std::uint64_t{1}});
  }
  out.sweep = context_sweep(lines, q.batch, q.dtype, q.ctx, parts);
  return out;
}

}  // namespace

KvSizeMeasured measure_kv_size(const KvSizeOptions& o, const KvSizeParts& parts) {
  if (o.model || o.config) return measure_calculator(o, parts);
  KvSizeMeasured m = measure_course(parts);
  m.options = o;
  return m;
}

namespace {

/// The catalogue's independent per-token reference, or an InputError for a model without one.
std::uint64_t reference_of(const ModelSpec& m) {
  if (!m.kv_bytes_per_token_16bit)
    throw InputError(fmt::format("model {}: kv_bytes_per_token_16bit missing; the course table "
                                 "compares with it", m.name));
  return *m.kv_bytes_per_token_16bit;
}

/// The reference scaled to `tokens` cached tokens at `bits` per element with `kv_heads` K/V heads
/// (the model's own when empty): ref · (heads / own heads) · tokens · bits / 16, in bytes.
double reference_bytes(const ModelSpec& m, std::uint64_t tokens, std::uint64_t bits = 16,
                       std::optional<std::uint64_t> kv_heads = std::nullopt) {
  std::uint64_t per_token = reference_of(m);
  if (kv_heads) {
    if (per_token % m.n_kv_head != 0)
      throw InputError(fmt::format("model {}: reference {} not divisible by {} K/V heads", m.name,
                                   per_token, m.n_kv_head));
    per_token = checked_mul(per_token / m.n_kv_head, *kv_heads, "reference bytes per token");
  }
  const std::uint64_t bits_total =
      checked_mul(checked_mul(per_token, tokens, "reference bytes"), bits, "reference bits") / 2;
  return static_cast<double>(bits_total) / 8.0;
}

/// "2·80·8·128·(32·8192)·2 B" or, for MLA, "60·(512+64)·(1·4096)·2 B": the formula with numbers.
std::string formula_text(const KvCacheSize& s, const KvQuery& q) {
  const std::uint64_t bits = cache_dtype_bits(q.dtype);
  const std::string per_elem = bits % 8 == 0 ? fmt::format("{}", bits / 8) : fmt::format("{}", bits / 8.0);
  if (s.layout.elements_per_layer == 0) return "0 B (no layer caches anything per token)";
  if (s.layout.mla)
    return fmt::format("{}·({}+{})·({}·{})·{} B", s.layout.n_layer, s.layout.latent_dim,
                       s.layout.rope_dim, q.batch, q.ctx, per_elem);
  return fmt::format("2·{}·{}·{}·({}·{})·{} B", s.layout.n_layer, s.layout.kv_heads,
                     s.layout.head_dim, q.batch, q.ctx, per_elem);
}

std::string bytes_text(double b) {
  return fmt::format("{} B = {:.4g} GB = {:.4g} GiB", format_number(b), b / kGB, b / kGiB);
}

double weights_of(const ModelSpec& m) { return weight_bytes(static_cast<double>(m.num_parameters.value_or(0)), 2.0); }

// 004 §1.4: bytes per token of the four models, half a megabyte for 7B, and the 70B estimate with
// its MHA and MQA variants.
void group4_rows(const KvSizeCourse& c, std::vector<Expectation>& rows) {
  const ModelSpec* models[] = {&c.l2_7, &c.l2_13, &c.l2_70, &c.l3_8};
  for (std::size_t i = 0; i < 4; ++i)
    rows.push_back({fmt::format("K+V bytes per token, {}, bf16", models[i]->name), "004 §1.4 (group 4)", "B",
                    static_cast<double>(reference_of(*models[i])), 0.0,
                    "kvlab's formula against data/facts.md's independent figure; integer byte counts: exact",
                    c.per_token[i].bytes_per_token, std::nullopt,
                    formula_text(c.per_token[i], KvQuery{1, 1, CacheDtype::bf16, {}})});
  const KvCacheSize &s7 = c.per_token[0], &s70 = c.per_token[2];
  rows.push_back({"K+V per token, Llama 2 7B, bf16 (half a megabyte)", "004 §1.4 (group 4)", "MiB",
                  reference_bytes(c.l2_7, 1) / kMiB, 0.0, kExact, s7.bytes_per_token / kMiB,
                  Stated::parse("0.5", "每个 token 要半兆字节 (half a megabyte: 0.5 MB)", kMB / kMiB),
                  bytes_text(s7.bytes_per_token)});
  rows.push_back({"70B's per-token cache is smaller than 7B's (1 = yes), bf16", "004 §1.4 (group 4)", "", 1.0, 0.0,
                  "a yes/no claim", s70.bytes_per_token < s7.bytes_per_token ? 1.0 : 0.0, std::nullopt,
                  fmt::format("{} B < {} B", format_number(s70.bytes_per_token), format_number(s7.bytes_per_token))});
  const char* labels[] = {"GQA-8 (the model)", "MHA", "MQA"};
  const char* stated[] = {"80", "640", "10"};
  const std::optional<std::uint64_t> heads[] = {std::nullopt, c.l2_70.n_head, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    const double bytes = static_cast<double>(c.variants[i].total_bytes);
    rows.push_back({fmt::format("KV cache, 70B {}, 32 × 8192, bf16", labels[i]), "004 §1.4, §2.2", "GiB",
                    reference_bytes(c.l2_70, 32 * 8192, 16, heads[i]) / kGiB, 0.0, kExact, bytes / kGiB,
                    Stated::parse(stated[i], fmt::format("= {} GiB", stated[i])),
                    formula_text(c.variants[i], KvQuery{32, 8192, CacheDtype::bf16, heads[i]}) + " = " +
                        bytes_text(bytes)});
  }
  const double w70 = weights_of(c.l2_70);
  rows.push_back({"weights, llama-2-70b, bf16", "004 §1.4", "GiB", 130.0, 5.0,
                  "the document writes ≈ 130 GiB: two significant figures, ± half a unit of the tens", w70 / kGiB,
                  Stated::parse("130", "≈ 130 GiB"),
                  fmt::format("{} params × 2 B = {}", format_number(static_cast<double>(*c.l2_70.num_parameters)),
                              bytes_text(w70))});
}

// 000 §0 and §2.3: LLaMA-3-70B's 4K sample, its weights and the max batch on 8 × A100-80GB.
void doc000_rows(const KvSizeCourse& c, std::vector<Expectation>& rows) {
  const double per_sample = static_cast<double>(c.l3_70_4k.total_bytes);
  rows.push_back({"KV cache per sample, llama-3-70b, ctx 4096, fp16", "000 §0, §2.3", "GiB",
                  reference_bytes(c.l3_70, 4096) / kGiB, 0.0, kExact, per_sample / kGiB,
                  Stated::parse("1.25", "≈ 1.25 GB", kGB / kGiB).flags("E3"),
                  formula_text(c.l3_70_4k, KvQuery{1, 4096, CacheDtype::fp16, {}}) + " = " + bytes_text(per_sample) +
                      ": the document's GB is GiB"});
  const double w3 = weights_of(c.l3_70);
  rows.push_back({"weights, llama-3-70b, fp16", "000 §2.3", "GB", 140.0, 5.0,
                  "the document writes ≈ 140 GB: two significant figures, ± half a unit of the tens", w3 / kGB,
                  Stated::parse("140", "≈ 140 GB"), bytes_text(w3)});
  const double max_batch = std::floor(kDoc23KvBudgetBytes / per_sample);
  const double max_batch_ref = std::floor(kDoc23KvBudgetBytes / reference_bytes(c.l3_70, 4096));
  const double max_batch_mixed = kDoc23KvBudgetBytes / kGB / (per_sample / kGiB);
  rows.push_back({"max batch, llama-3-70b, 4K fp16, 400 GB of KV budget", "000 §2.3", "sequences", max_batch_ref,
                  0.0, "whole sequences: floor of an exact ratio", max_batch,
                  Stated::parse("320", "≈ 400 / 1.25 ≈ 320").flags("E4"),
                  fmt::format("the same GB/GiB slip as the 1.25 GB row, one slip with two consequences: "
                              "a sample's cache is {} B = {:.4g} GiB but {:.4g} GB, so floor(400 GB / {:.4g} "
                              "GB) = floor({:.2f}) = {}, while {:.4g} / {:.4g} = {:.4g} divides GB by GiB "
                              "(the 400 GB budget is itself the document's rough premise, see the notes)",
                              format_number(per_sample), per_sample / kGiB, per_sample / kGB, per_sample / kGB,
                              kDoc23KvBudgetBytes / per_sample, max_batch, kDoc23KvBudgetBytes / kGB,
                              per_sample / kGiB, max_batch_mixed)});
  const double ds_bytes = static_cast<double>(c.dsv2_4k.total_bytes);
  rows.push_back({"KV cache per sample, deepseek-v2 (MLA), ctx 4096, fp16", "000 §2.2", "GB",
                  reference_bytes(c.dsv2, 4096) / kGB, 0.0, kExact, ds_bytes / kGB,
                  Stated::parse("0.27", "≈ 0.27 GB").flags("E2"),
                  formula_text(c.dsv2_4k, KvQuery{1, 4096, CacheDtype::fp16, {}}) + " = " + bytes_text(ds_bytes) +
                      ": neither unit gives 0.27"});
}

// 003 Q5's 7B at 2048 tokens ("about 2 GB") and 000 §4.2's MHA ÷ GQA of llama-2-70b.
void q5_and_ratio_rows(const KvSizeCourse& c, std::vector<Expectation>& rows) {
  rows.push_back({"KV cache, 7B (32 layers, d 4096, MHA), 2048 tokens, fp16", "003 Q5", "GiB",
                  reference_bytes(c.l2_7, 2048) / kGiB, 0.0, kExact, static_cast<double>(c.q5.total_bytes) / kGiB,
                  Stated::parse("2", "KV Cache 约占 2GB 显存", kGB / kGiB).flags("E1"),
                  fmt::format("{} = {}; 2 GiB needs fp32 ({} B) or batch 2 ({} B)",
                              formula_text(c.q5, KvQuery{1, 2048, CacheDtype::fp16, {}}),
                              bytes_text(static_cast<double>(c.q5.total_bytes)),
                              format_number(static_cast<double>(c.q5_fp32.total_bytes)),
                              format_number(static_cast<double>(c.q5_batch2.total_bytes)))});
  const KvCacheSize& s70 = c.per_token[2];
  rows.push_back({"KV cache of MHA ÷ GQA, llama-2-70b (H = 64, G = 8)", "000 §4.2", "×",
                  static_cast<double>(c.l2_70.n_head) / static_cast<double>(c.l2_70.n_kv_head), 0.0,
                  "a ratio of exact byte counts, expected H / G from the config",
                  c.mha_70.bytes_per_token / s70.bytes_per_token, Stated::parse("8", "8×"),
                  fmt::format("{} B / {} B", format_number(c.mha_70.bytes_per_token),
                              format_number(s70.bytes_per_token))});
}

std::vector<Expectation> judge_calculator(const KvSizeCalc& c) {
  const ModelSpec& m = c.model;
  const KvQuery& q = c.query;
  std::vector<Expectation> rows;
  // 1. The formula on this config against the catalogue's independent figure, when there is one.
  if (m.kv_bytes_per_token_16bit)
    rows.push_back({fmt::format("K+V bytes per token, {}, 16-bit, {}", m.name,
                                c.size.layout.mla ? std::string("MLA latent + RoPE key")
                                                  : fmt::format("its own {} K/V heads", m.n_kv_head)),
                    "004 §1.4; data/facts.md", "B", static_cast<double>(*m.kv_bytes_per_token_16bit), 0.0,
                    "kvlab's formula on the config against data/facts.md's independent figure; integer byte "
                    "counts: exact", c.own16.bytes_per_token, std::nullopt, ""});
  // 2. The closed form against the tensors a preallocated cache would hold, counted one by one.
  rows.push_back({fmt::format("KV-cache bytes, {}, batch {} × ctx {}, {}: closed form vs tensor count", m.name,
                              q.batch, q.ctx, cache_dtype_name(q.dtype)),
                  "004 §1.4; 000 §2.1", "B", static_cast<double>(c.counted_bits) / 8.0, 0.0,
                  "two integer counts of the same cache: exact", static_cast<double>(c.size.total_bits) / 8.0,
                  std::nullopt, ""});
  rows.back().headline = true;
  // 3. A layout kvlab did not fully read: no PASS on the total it built.
  if (!m.warnings.empty())
    rows.push_back({fmt::format("config layout fields kvlab does not interpret, {}", m.name),
                    "docs/design.md (layer groups)", "fields", 0.0, 0.0,
                    "a total built on a layout kvlab did not read is not a checked number",
                    static_cast<double>(m.warnings.size()), std::nullopt,
                    "see the warnings: the total assumes the layers as listed"});
  return rows;
}

}  // namespace

std::vector<Expectation> judge_kv_size(const KvSizeMeasured& m) {
  if (m.calc) return judge_calculator(*m.calc);
  std::vector<Expectation> rows;
  group4_rows(*m.course, rows);
  doc000_rows(*m.course, rows);
  q5_and_ratio_rows(*m.course, rows);
  for (Expectation& e : judge_cheatsheet_tables(m.course->cheat)) rows.push_back(std::move(e));
  return rows;
}

namespace {

void add_sweep(const KvSizeSweep& sw, Result& r) {
  Table t{fmt::format("KV cache over context (GiB), batch {}, {}", sw.batch, cache_dtype_name(sw.dtype)), {"ctx"}, {}};
  Plot p{fmt::format("KV cache over context, batch {}, {}", sw.batch, cache_dtype_name(sw.dtype)), "context (tokens)",
         "KV cache (GiB)", true, true, {}};
  for (std::size_t i = 0; i < sw.labels.size(); ++i) {
    t.columns.push_back(sw.labels[i]);
    p.series.push_back({sw.labels[i], {}, {}, "linespoints"});
    for (std::size_t j = 0; j < sw.contexts.size(); ++j) {
      p.series[i].x.push_back(static_cast<double>(sw.contexts[j]));
      p.series[i].y.push_back(sw.gib[i][j]);
    }
  }
  for (std::size_t j = 0; j < sw.contexts.size(); ++j) {
    std::vector<Cell> row{static_cast<std::int64_t>(sw.contexts[j])};
    for (const auto& line : sw.gib) row.push_back(std::isnan(line[j]) ? Cell{std::string("—")} : Cell{line[j]});
    t.rows.push_back(std::move(row));
  }
  r.tables.push_back(std::move(t));
  r.plots.push_back(std::move(p));
}

Table group4_table(const KvSizeCourse& c) {
  Table t{"004 §1.4 group 4: K+V bytes per token, bf16 (kvlab's formula; data/facts.md reference)",
          {"model", "attention", "L", "K/V heads", "head_dim", "bytes/token", "reference", "KiB/token",
           "GiB per 4096-token sequence"}, {}};
  const ModelSpec* models[] = {&c.l2_7, &c.l2_13, &c.l2_70, &c.l3_8};
  for (std::size_t i = 0; i < 4; ++i) {
    const KvCacheSize& s = c.per_token[i];
    t.rows.push_back({models[i]->name, attention_kind(*models[i], s.layout), static_cast<std::int64_t>(models[i]->n_layer),
                      static_cast<std::int64_t>(s.layout.kv_heads), static_cast<std::int64_t>(s.layout.head_dim),
                      s.bytes_per_token, count_cell(reference_of(*models[i])), s.bytes_per_token / kKiB,
                      static_cast<double>(c.per_seq[i].total_bytes) / kGiB});
  }
  return t;
}

Table estimate_table(const KvSizeCourse& c) {
  Table t{"004 §1.4 estimate: llama-2-70b, batch 32 × ctx 8192, bf16",
          {"variant", "K/V heads", "formula", "bytes", "GiB", "GB"}, {}};
  const char* labels[] = {"GQA-8 (the model)", "MHA", "MQA"};
  const std::optional<std::uint64_t> heads[] = {std::nullopt, c.l2_70.n_head, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    const KvCacheSize& s = c.variants[i];
    const double bytes = static_cast<double>(s.total_bytes);
    t.rows.push_back({labels[i], static_cast<std::int64_t>(s.layout.kv_heads),
                      formula_text(s, KvQuery{32, 8192, CacheDtype::bf16, heads[i]}), count_cell(s.total_bytes),
                      bytes / kGiB, bytes / kGB});
  }
  return t;
}

Table batch_table(const KvSizeCourse& c) {
  const double memory_8 = 8.0 * static_cast<double>(c.a100.memory_bytes), w3 = weights_of(c.l3_70);
  const double per_sample = static_cast<double>(c.l3_70_4k.total_bytes);
  Table t{"000 §2.3: how many 4K sequences fit on 8 × A100-80GB (llama-3-70b, fp16)",
          {"quantity", "value", "unit", "from"}, {}};
  t.rows.push_back({"memory of 8 × a100-80gb", memory_8 / kGB, "GB",
                    "catalogue memory_bytes, the datasheet's 80GB (document: 8 × 80)"});
  t.rows.push_back({"weights", w3 / kGB, "GB", "num_parameters × 2 B (document: ≈ 140)"});
  t.rows.push_back({"left", (memory_8 - w3) / kGB, "GB", "(document: ≈ 500)"});
  t.rows.push_back({"KV budget", kDoc23KvBudgetBytes / kGB, "GB",
                    "document's premise, after activations and framework overhead"});
  t.rows.push_back({"KV per sequence", per_sample / kGB, "GB", "kvlab formula (= 1.25 GiB)"});
  t.rows.push_back({"max batch", std::floor(kDoc23KvBudgetBytes / per_sample), "sequences",
                    "floor(budget / per sequence)"});
  t.rows.push_back({"max batch mixing GB and GiB", kDoc23KvBudgetBytes / kGB / (per_sample / kGiB), "sequences",
                    "400 GB / 1.25 GiB read as GB (the document's 320)"});
  t.rows.push_back({"max batch if all that is left held KV", std::floor((memory_8 - w3) / per_sample), "sequences",
                    "floor(left / per sequence): no activations, no overhead"});
  return t;
}

void course_notes(const KvSizeCourse& c, Result& r) {
  const double w70 = weights_of(c.l2_70), w3 = weights_of(c.l3_70);
  const double per_sample = static_cast<double>(c.l3_70_4k.total_bytes);
  const double memory = static_cast<double>(c.a100.memory_bytes), memory_8 = 8.0 * memory;
  r.notes.push_back(fmt::format(
      "70B weights: llama-2-70b has {} parameters, {:.1f} GiB in bf16; the document's ≈ 130 GiB is "
      "also what a round 70e9 × 2 B gives ({:.1f} GiB).",
      format_number(static_cast<double>(*c.l2_70.num_parameters)), w70 / kGiB, weight_bytes(70e9, 2.0) / kGiB));
  r.notes.push_back(fmt::format(
      "GB vs GiB: 000 writes '1.25 GB' per sample; {} B is {:.4g} GiB but {:.4g} GB. kvlab compares "
      "in GiB, where the number is right, and flags the unit as an erratum.",
      format_number(per_sample), per_sample / kGiB, per_sample / kGB));
  r.notes.push_back(fmt::format(
      "000 §2.3's KV budget, '约 400 GB', is the document's own rough premise: 8 × 80 GB less ≈ 140 "
      "GB of weights leaves {:.4g} GB, and the document sets aside an unstated ≈ {:.0f} GB for "
      "activations and framework overhead. kvlab takes the 400 GB as given; the max batch scales "
      "with it (all {:.4g} GB left would hold {} sequences).",
      (memory_8 - w3) / kGB, (memory_8 - w3 - kDoc23KvBudgetBytes) / kGB, (memory_8 - w3) / kGB,
      format_number(std::floor((memory_8 - w3) / per_sample))));
  r.notes.push_back(fmt::format(
      "a100-80gb memory: the catalogue keeps the datasheet's '80GB', memory_bytes = {} B; the card "
      "itself reports {} MiB, i.e. {:.0f} GiB = {} B = {:.4g} GB. With that, 8 cards hold {:.4g} GB "
      "rather than {:.4g} GB; the table above, like the document, uses the datasheet figure.",
      format_number(memory), format_number(memory / kGB * kGiB / kMiB), memory / kGB,
      format_number(memory / kGB * kGiB), memory / kGB * kGiB / kGB, 8.0 * memory / kGB * kGiB / kGB,
      memory_8 / kGB));
}

void present_course(const KvSizeMeasured& m, Result& r) {
  const KvSizeCourse& c = *m.course;
  r.warnings = std::vector<std::string>{};  // the catalogue's course models: plain decoders
  r.tables.push_back(group4_table(c));
  r.tables.push_back(estimate_table(c));
  r.tables.push_back(batch_table(c));
  course_notes(c, r);
  add_sweep(m.sweep, r);
  r.metric("bytes_per_token", c.per_token[2].bytes_per_token);
  r.metric_exact("bytes", c.variants[0].total_bytes);
  r.metric("bytes_per_token_llama_2_7b", c.per_token[0].bytes_per_token);
  r.metric_exact("bytes_llama_3_70b_4k_fp16", c.l3_70_4k.total_bytes);
  r.metric_exact("bytes_deepseek_v2_4k_fp16", c.dsv2_4k.total_bytes);
  r.metric("max_batch_8xa100_80gb", std::floor(kDoc23KvBudgetBytes / static_cast<double>(c.l3_70_4k.total_bytes)));
  r.tables.push_back(cheatsheet_summary(c.cheat));
  r.notes.push_back(
      "metrics bytes_per_token and bytes are the 004 §1.4 estimate (llama-2-70b, GQA-8, batch 32 × "
      "8192, bf16); `kvlab kv-size --model NAME` computes them for any model.");
  r.notes.push_back(
      "expected = the catalogue's independent per-token reference (data/facts.md) × tokens; measured = "
      "kvlab's formula on the config fields; 'document' is the course's own figure, checked at the "
      "precision it is written (an erratum does not fail the check).");
}

Table calculator_table(const KvSizeCalc& c) {
  const ModelSpec& m = c.model;
  const KvCacheSize& s = c.size;
  const double total = static_cast<double>(s.total_bytes);
  Table t{fmt::format("KV cache of {} ({})", m.name, m.source), {"quantity", "value", "unit"}, {}};
  t.rows.push_back({"attention", attention_kind(m, s.layout), ""});
  t.rows.push_back({"layers L", static_cast<std::int64_t>(m.n_layer), ""});
  if (s.layout.mla) {
    t.rows.push_back({"latent d_c (kv_lora_rank)", static_cast<std::int64_t>(s.layout.latent_dim), "elements"});
    t.rows.push_back({"RoPE key d_r (qk_rope_head_dim)", static_cast<std::int64_t>(s.layout.rope_dim), "elements"});
  } else {
    t.rows.push_back({"K/V heads", static_cast<std::int64_t>(s.layout.kv_heads),
                      c.query.kv_heads ? fmt::format("override (the model has {})", m.n_kv_head) : ""});
    t.rows.push_back({"head_dim", static_cast<std::int64_t>(s.layout.head_dim), "elements"});
  }
  t.rows.push_back({"cache dtype", fmt::format("{} ({} bits)", cache_dtype_name(c.query.dtype),
                                               cache_dtype_bits(c.query.dtype)), ""});
  t.rows.push_back({"elements per token (all layers)", count_cell(s.elements_per_token), "elements"});
  t.rows.push_back({"bytes per token", s.bytes_per_token, "B"});
  t.rows.push_back({"batch × ctx", count_cell(s.tokens), "tokens"});
  t.rows.push_back({"total held at ctx (windows, chunks, attention-free layers applied)",
                    count_cell(s.total_bytes), "B"});
  t.rows.push_back({"total", total / kGiB, "GiB"});
  t.rows.push_back({"total", total / kGB, "GB"});
  t.rows.push_back({"if every layer cached every position", count_cell(s.total_bytes_if_all_full), "B"});
  if (s.total_bytes_if_all_full > 0)
    t.rows.push_back({"held / if every layer cached every position",
                      total / static_cast<double>(s.total_bytes_if_all_full), ""});
  return t;
}

// The layer groups: what each kind of layer holds at this context.
Table groups_table(const KvSizeCalc& c) {
  Table t{fmt::format("layer groups of {} at batch {} × ctx {}, {}", c.model.name, c.query.batch, c.query.ctx,
                      cache_dtype_name(c.query.dtype)),
          {"layers", "count", "kind", "mixer", "window/chunk", "per layer per token", "bytes per token",
           "positions held", "bytes held"}, {}};
  for (const GroupKv& g : c.held.groups) {
    const LayerGroup& lg = g.group;
    std::string width = "—";
    if (lg.kind == LayerKind::mla)
      width = fmt::format("{} + {} (d_c + d_r)", lg.latent_dim, lg.rope_dim);
    else if (lg.kind != LayerKind::none)
      width = fmt::format("2 × {} K/V heads × {}", lg.n_kv_head, lg.head_dim);
    t.rows.push_back({layer_list_text(lg.layers), static_cast<std::int64_t>(lg.count), layer_kind_name(lg.kind),
                      lg.mixer, lg.span ? Cell{static_cast<std::int64_t>(lg.span)} : Cell{std::string("—")}, width,
                      static_cast<double>(g.bits_per_token) / 8.0, static_cast<std::int64_t>(g.positions),
                      static_cast<double>(g.total_bits) / 8.0});
  }
  return t;
}

Table dtypes_table(const KvSizeCalc& c) {
  Table t{"the same cache in each dtype", {"dtype", "bits", "bytes/token", "total bytes", "GiB"}, {}};
  for (const KvSizeDtypeRow& row : c.dtypes) {
    const auto bits = static_cast<std::int64_t>(cache_dtype_bits(row.dtype));
    if (!row.total)  // a wider dtype than asked
      t.rows.push_back({cache_dtype_name(row.dtype), bits, row.one.bytes_per_token, "over 2^64 bits", "—"});
    else
      t.rows.push_back({cache_dtype_name(row.dtype), bits, row.total->bytes_per_token,
                        count_cell(row.total->total_bytes), static_cast<double>(row.total->total_bytes) / kGiB});
  }
  return t;
}

void calculator_notes(const KvSizeMeasured& mm, Result& r) {
  const KvSizeCalc& c = *mm.calc;
  const ModelSpec& m = c.model;
  const KvQuery& q = c.query;
  const KvCacheSize& s = c.size;
  if (!m.kv_bytes_per_token_16bit)
    r.notes.push_back(
        "this config has no kv_bytes_per_token_16bit, so there is no independent reference: the "
        "check below compares the closed form only with a layer-by-layer count of the cache "
        "tensors. That catches arithmetic slips (the factor 2, int4's half byte, batch × ctx) but "
        "not a config whose fields mean something else than kvlab reads them as.");
  if (!m.state_note.empty())
    r.notes.push_back("fixed per-sequence state of the attention-free layers (not in the KV bytes): " +
                      m.state_note + ".");
  std::vector<std::string> defaults;
  if (!mm.options.batch) defaults.push_back(fmt::format("batch {}", kDefaultBatch));
  if (!mm.options.ctx) defaults.push_back(fmt::format("ctx {}", kDefaultCtx));
  if (!mm.options.kv_dtype) defaults.push_back("kv-dtype bf16");
  if (!defaults.empty()) r.notes.push_back(fmt::format("defaults used: {}.", fmt::join(defaults, ", ")));
  if (q.kv_heads && !s.layout.mla)
    r.notes.push_back(fmt::format("--kv-heads {} replaces {}'s {} K/V heads: {} of its {} query "
                                  "heads share each K/V head.", *q.kv_heads, m.name, m.n_kv_head,
                                  m.n_head / *q.kv_heads, m.n_head));
  if (m.max_position_embeddings && q.ctx > *m.max_position_embeddings)
    r.notes.push_back(fmt::format("ctx {} exceeds {}'s trained context (max_position_embeddings "
                                  "= {}); the bytes are computed all the same.", q.ctx, m.name,
                                  *m.max_position_embeddings));
  if (c.held.total_bits != s.total_bits_if_all_full)
    r.notes.push_back(fmt::format(
        "windows, chunks and attention-free layers: a sliding layer holds min(ctx, W) positions "
        "(a rolling cache), a chunked layer min(ctx, C) (the most any step of a chunk needs), an "
        "attention-free layer none; {} B held against {} B if every layer cached every position.",
        format_number(static_cast<double>(s.total_bytes)),
        format_number(static_cast<double>(s.total_bytes_if_all_full))));
}

void present_calculator(const KvSizeMeasured& mm, Result& r) {
  const KvSizeCalc& c = *mm.calc;
  const ModelSpec& m = c.model;
  const KvCacheSize& s = c.size;
  const double total = static_cast<double>(s.total_bytes);
  r.tables.push_back(calculator_table(c));
  r.table_keys.push_back({"layer_groups", r.tables.size()});
  r.tables.push_back(groups_table(c));
  r.tables.push_back(dtypes_table(c));
  // The student's answer, first: in GiB and GB (the course's trap), and exact bytes.
  r.answer = fmt::format("{} GiB = {} GB ({} B)", format_number(total / kGiB), format_number(total / kGB),
                         format_number(total));
  r.warnings = m.warnings;
  r.metric("bytes_per_token", s.bytes_per_token);
  r.metric_exact("bytes", s.total_bytes);
  r.metric_exact("bytes_if_all_full", s.total_bytes_if_all_full);
  r.metric_exact("elements_per_token", s.elements_per_token);
  r.metric("bytes_per_token_16bit", c.own16.bytes_per_token);
  if (m.state_elements_per_layer) {
    std::uint64_t state_layers = 0;
    for (const auto& l : m.layers) state_layers += l.mixer == "mamba";
    r.metric_exact("state_elements_per_sequence",
                   checked_mul(state_layers, *m.state_elements_per_layer, "state elements"));
  }
  calculator_notes(mm, r);
  add_sweep(mm.sweep, r);
  if (c.query.dtype == CacheDtype::int4)
    r.notes.push_back("int4 packs two elements per byte; a final half byte occupies a whole one.");
  if (s.layout.mla)
    r.notes.push_back("MLA caches the latent c_kv (shared by K and V) and the decoupled RoPE key "
                      "(shared by all heads): no factor 2 (000 §2.2, §4.4.3).");
}

std::string claim(const KvSizeMeasured& mm) {
  if (!mm.calc) return kClaim;
  const KvSizeCalc& c = *mm.calc;
  const KvCacheSize& s = c.size;
  const KvQuery& q = c.query;
  if (s.total_bytes == s.total_bytes_if_all_full)
    return fmt::format("KV cache of {}: {} = {} for batch {} × ctx {} in {}", c.model.name, formula_text(s, q),
                       format_number(static_cast<double>(s.total_bytes)), q.batch, q.ctx, cache_dtype_name(q.dtype));
  return fmt::format("KV cache of {}: {} held for batch {} × ctx {} in {}, summed over its layer groups (if every "
                     "layer cached every position: {} = {})", c.model.name,
                     format_number(static_cast<double>(s.total_bytes)), q.batch, q.ctx, cache_dtype_name(q.dtype),
                     formula_text(s, q), format_number(static_cast<double>(s.total_bytes_if_all_full)));
}

void constraints(const KvSizeOptions& o) {
  if (o.model || o.config) return;
  const char* given = o.batch ? "--batch" : o.ctx ? "--ctx" : o.kv_dtype ? "--kv-dtype" : o.kv_heads ? "--kv-heads" : nullptr;
  if (given)
    throw InputError(fmt::format("{}: needs --model or --config (without either, kv-size shows the course's table)",
                                 given));
}

}  // namespace

const CheckDef<KvSizeOptions, KvSizeMeasured>& kv_size_check() {
  using O = KvSizeOptions;
  static const CheckDef<O, KvSizeMeasured> def{
      .spec = {.name = "kv-size",
               .order = 40,
               .source = "004 §1.4 (group 4); 000 §0, §2.2, §2.3, §4.2; 003 Q5",
               .summary = "KV-cache bytes per token and in total (MHA/GQA/MQA/MLA, any cache dtype), for the "
                          "course's models or any config.json",
               .claim_zh = "KV Cache 大小 = 2 × 层数 × KV 头数 × head_dim × 序列长度 × batch × 每元素字节数",
               .description =
                   "Without --model or --config: the course's KV-cache figures (004 §1.4's four-model "
                   "table and 70B estimate with its MHA/MQA variants, 000's LLaMA-3-70B and DeepSeek-V2 "
                   "per-sample sizes and max batch, 003 Q5's 7B example), each compared with the "
                   "catalogue's independent reference, the document's own figure checked for errata.\n"
                   "With --model NAME (a catalogue name, see data/models) or --config PATH (a Hugging Face "
                   "config.json): bytes per token and in total for --batch (default 1) × --ctx (default "
                   "4096) in --kv-dtype (default bf16); --kv-heads replaces the K/V head count (MHA = the "
                   "query heads, MQA = 1; it must divide them; not for MLA models).",
               .derivation =
                   "Per token and layer the cache holds a key and a value vector for each KV head:\n"
                   "  elements = 2 · n_kv_head · head_dim\n"
                   "  bytes    = 2 · n_layer · n_kv_head · head_dim · bytes_per_element · batch · ctx\n"
                   "Example (004 §1.4): 70B, 80 layers, 8 KV heads, head_dim 128, bf16 (2 B), batch 32 × ctx 8192:\n"
                   "  2·80·8·128·2 = 327,680 B per token; × 32·8192 = 262,144 tokens = 85,899,345,920 B = 80 GiB.\n"
                   "The same model with 64 KV heads (MHA) needs 8× that, 640 GiB; with 1 (MQA) 10 GiB.\n"
                   "MLA caches kv_lora_rank + qk_rope_head_dim elements per token and layer instead (no factor 2,\n"
                   "no heads): DeepSeek-V2, 60 · (512 + 64) · 2 B = 69,120 B per token.\n"
                   "Source: 004 §1.4 (group 4); 000 §0, §2.2, §2.3.\n",
               .traits = {.plot = true}},
      // The optionals' defaults are said in words: an empty optional shows none.
      .options = {{"--model", &O::model, Allowed::any_value(), "Catalogue model, e.g. llama-2-70b (data/models)"},
                  {"--config", &O::config, Allowed::path(), "A Hugging Face config.json instead of --model", "FILE",
                   "--model"},
                  {"--batch", &O::batch, Allowed::integers(1, kMaxInt), "Sequences in the batch (default 1)"},
                  {"--ctx", &O::ctx, Allowed::tokens(kMaxInt),
                   "Cached positions per sequence, e.g. 4096, 4k, 128k (default 4096)"},
                  {"--kv-dtype", &O::kv_dtype, Allowed::one_of({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}),
                   "Cache element type (default bf16)"},
                  {"--kv-heads", &O::kv_heads, Allowed::integers(1, kMaxInt),
                   "Override the K/V heads (must divide the query heads; not for MLA)"}},
      .constraints = constraints,
      .measure = [](const O& o, const RunContext&) { return measure_kv_size(o); },
      .judge = judge_kv_size,
      .present = [](const KvSizeMeasured& m, Result& r) { m.calc ? present_calculator(m, r) : present_course(m, r); },
      .claim = claim};
  return def;
}

Result run_kv_size(const KvSizeOptions& o, const RunContext& ctx, const KvSizeParts& parts) {
  return run_check(kv_size_check(), o, ctx,
                   [&parts](const KvSizeOptions& opts, const RunContext&) { return measure_kv_size(opts, parts); });
}

KVLAB_REGISTER_SPEC(kv_size_check);

}  // namespace kvlab::checks::kv_size
