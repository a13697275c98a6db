// kv-size — how many bytes the KV cache takes.
// Source: 004 §1.4 (group 4); 000 §0, §2.1–2.3, §4.2; 003 Q5.
//
// The course's formula, bytes = 2 · L · n_kv · head_dim · (batch · ctx) · bytes/element (MLA:
// L · (d_c + d_r) · (batch · ctx) · bytes/element, no factor 2), evaluated by kvlab's cost library
// on the catalogue's real configs. With no options: every KV-size figure the documents give. The
// expected values come from the catalogue's independent per-token reference (data/facts.md) scaled to
// the tokens asked; the measured values come from the library's formula on the config fields; the
// document's own figure is checked at the precision it is written, and flagged as an erratum when
// it disagrees (0.27 GB; "1.25 GB" that is GiB, and the max batch 320 that the same slip gives;
// 003's 2 GB). Premises are printed as such: 000 §2.3's "约 400 GB" KV budget, and the A100's
// 80 GB from the datasheet (the card reports 80 GiB).
//
//   kvlab kv-size                                          the course's table and estimates
//   kvlab kv-size --model llama-2-70b --batch 32 --ctx 8192 [--kv-heads 64 | --kv-heads 1]
//   kvlab kv-size --model llama-3-70b --ctx 4096 --kv-dtype fp16 --format json
//   kvlab kv-size --config path/to/config.json --kv-dtype int4
#include "kv_size_check.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cost/layers.hpp"
#include "report/writers.hpp"
#include "support/cheatsheet_cells.hpp"
#include "support/cost_common.hpp"
#include "framework/path_option.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {
namespace {

constexpr const char* kName = "kv-size";
constexpr const char* kSource = "004 §1.4 (group 4); 000 §0, §2.2, §2.3, §4.2; 003 Q5";
constexpr const char* kSummary =
    "KV-cache bytes per token and in total (MHA/GQA/MQA/MLA, any cache dtype), for the course's "
    "models or any config.json";
constexpr const char* kClaim =
    "KV cache bytes = 2 · L · n_kv · head_dim · batch · ctx · bytes/element (MLA: L · (d_c + d_r) "
    "· batch · ctx · bytes/element): Llama 2 7B needs half a megabyte per token; 70B with GQA-8 at "
    "batch 32 × 8192 in bf16 needs 80 GiB (MHA 640 GiB, MQA 10 GiB).";
constexpr const char* kExact =
    "integer byte counts on both sides, converted by the same division: exact";

constexpr std::uint64_t kDefaultBatch = 1;
constexpr std::uint64_t kDefaultCtx = 4096;

// 000 §2.3's premise: of 8 × 80 GB, after 140 GB of weights and activation/framework overhead,
// "about 400 GB" is left for the KV cache. An input of the document's estimate, not a result.
constexpr double kDoc23KvBudgetBytes = 400e9;

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

// ---- with no options: the documents' figures ------------------------------------------------

/// One line of the "over context" sweep: a model, possibly with its K/V heads overridden.
struct SweepLine {
  std::string label;
  const ModelSpec* model;
  std::optional<std::uint64_t> kv_heads;
};

/// The cache in GiB at contexts 128, 256, ... up to ctx_max (and ctx_max itself), for each line:
/// a table and the same numbers as a log-log plot (`--plot`). A size past 64 bits is left out.
void add_context_sweep(Result& r, const std::vector<SweepLine>& lines, std::uint64_t batch, CacheDtype dtype,
                       std::uint64_t ctx_max, const KvSizeParts& parts) {
  std::vector<std::uint64_t> contexts;
  for (std::uint64_t c = std::min<std::uint64_t>(128, ctx_max); c < ctx_max && contexts.size() < 40; c *= 2)
    contexts.push_back(c);
  contexts.push_back(ctx_max);
  Table t{fmt::format("KV cache over context (GiB), batch {}, {}", batch, cache_dtype_name(dtype)), {"ctx"}, {}};
  Plot p{fmt::format("KV cache over context, batch {}, {}", batch, cache_dtype_name(dtype)), "context (tokens)",
         "KV cache (GiB)", true, true, {}};
  for (const auto& line : lines) {
    t.columns.push_back(line.label);
    p.series.push_back({line.label, {}, {}, "linespoints"});
  }
  for (std::uint64_t c : contexts) {
    std::vector<Cell> row{static_cast<std::int64_t>(c)};
    for (std::size_t i = 0; i < lines.size(); ++i) {
      double gib = std::numeric_limits<double>::quiet_NaN();
      try {
        gib = static_cast<double>(parts.cache_size(*lines[i].model, KvQuery{batch, c, dtype, lines[i].kv_heads})
                                      .total_bytes) / kGiB;
      } catch (const InputError&) {  // past 64 bits: no point, "—" in the table
      }
      row.push_back(std::isnan(gib) ? Cell{std::string("—")} : Cell{gib});
      p.series[i].x.push_back(static_cast<double>(c));
      p.series[i].y.push_back(gib);
    }
    t.rows.push_back(std::move(row));
  }
  r.tables.push_back(std::move(t));
  r.plots.push_back(std::move(p));
}

Result course_table(const KvSizeParts& parts) {
  Result r{kName, kSource, kClaim, {}, {}, {}, {}};
  r.warnings = std::vector<std::string>{};  // the catalogue's course models: plain decoders
  const auto size = [&](const ModelSpec& m, std::uint64_t batch, std::uint64_t ctx, CacheDtype d,
                        std::optional<std::uint64_t> heads = std::nullopt) {
    return parts.cache_size(m, KvQuery{batch, ctx, d, heads});
  };
  const ModelSpec l2_7 = parts.load_model("llama-2-7b");
  const ModelSpec l2_13 = parts.load_model("llama-2-13b");
  const ModelSpec l2_70 = parts.load_model("llama-2-70b");
  const ModelSpec l3_8 = parts.load_model("llama-3-8b");
  const ModelSpec l3_70 = parts.load_model("llama-3-70b");
  const ModelSpec dsv2 = parts.load_model("deepseek-v2");

  // 004 §1.4, group 4: the four models' bytes per token in bf16.
  Table group4{"004 §1.4 group 4: K+V bytes per token, bf16 (kvlab's formula; data/facts.md reference)",
               {"model", "attention", "L", "K/V heads", "head_dim", "bytes/token", "reference",
                "KiB/token", "GiB per 4096-token sequence"},
               {}};
  for (const ModelSpec* m : {&l2_7, &l2_13, &l2_70, &l3_8}) {
    const KvCacheSize s = size(*m, 1, 1, CacheDtype::bf16);
    const KvCacheSize seq = size(*m, 1, 4096, CacheDtype::bf16);
    group4.rows.push_back({m->name, attention_kind(*m, s.layout),
                           static_cast<std::int64_t>(m->n_layer),
                           static_cast<std::int64_t>(s.layout.kv_heads),
                           static_cast<std::int64_t>(s.layout.head_dim), s.bytes_per_token,
                           count_cell(reference_of(*m)), s.bytes_per_token / kKiB,
                           static_cast<double>(seq.total_bytes) / kGiB});
    r.expect({fmt::format("K+V bytes per token, {}, bf16", m->name), "004 §1.4 (group 4)", "B",
              static_cast<double>(reference_of(*m)), 0.0,
              "kvlab's formula against data/facts.md's independent figure; integer byte counts: exact",
              s.bytes_per_token, std::nullopt, formula_text(s, KvQuery{1, 1, CacheDtype::bf16, {}})});
  }
  r.tables.push_back(std::move(group4));

  const KvCacheSize s7 = size(l2_7, 1, 1, CacheDtype::bf16);
  const KvCacheSize s70 = size(l2_70, 1, 1, CacheDtype::bf16);
  r.expect({"K+V per token, Llama 2 7B, bf16 (half a megabyte)", "004 §1.4 (group 4)",
            "MiB", reference_bytes(l2_7, 1) / kMiB, 0.0, kExact, s7.bytes_per_token / kMiB,
            Stated::parse("0.5", "每个 token 要半兆字节 (half a megabyte: 0.5 MB)", kMB / kMiB),
            bytes_text(s7.bytes_per_token)});
  r.expect({"70B's per-token cache is smaller than 7B's (1 = yes), bf16", "004 §1.4 (group 4)", "",
            1.0, 0.0, "a yes/no claim",
            s70.bytes_per_token < s7.bytes_per_token ? 1.0 : 0.0, std::nullopt,
            fmt::format("{} B < {} B", format_number(s70.bytes_per_token),
                        format_number(s7.bytes_per_token))});

  // 004 §1.4: the 70B estimate, and its MHA and MQA variants.
  const std::uint64_t b32 = 32, c8k = 8192, tokens_70 = b32 * c8k;
  Table est{"004 §1.4 estimate: llama-2-70b, batch 32 × ctx 8192, bf16",
            {"variant", "K/V heads", "formula", "bytes", "GiB", "GB"}, {}};
  struct Variant {
    const char* label;
    std::optional<std::uint64_t> heads;
    const char* stated;
  };
  const Variant variants[] = {{"GQA-8 (the model)", std::nullopt, "80"},
                              {"MHA", l2_70.n_head, "640"},
                              {"MQA", std::uint64_t{1}, "10"}};
  std::uint64_t bytes_gqa = 0;
  for (const auto& v : variants) {
    const KvQuery q{b32, c8k, CacheDtype::bf16, v.heads};
    const KvCacheSize s = parts.cache_size(l2_70, q);
    const double bytes = static_cast<double>(s.total_bytes);
    if (!v.heads) bytes_gqa = s.total_bytes;
    est.rows.push_back({v.label, static_cast<std::int64_t>(s.layout.kv_heads), formula_text(s, q),
                        count_cell(s.total_bytes), bytes / kGiB, bytes / kGB});
    r.expect({fmt::format("KV cache, 70B {}, 32 × 8192, bf16", v.label), "004 §1.4, §2.2", "GiB",
              reference_bytes(l2_70, tokens_70, 16, v.heads) / kGiB, 0.0, kExact, bytes / kGiB,
              Stated::parse(v.stated, fmt::format("= {} GiB", v.stated)),
              formula_text(s, q) + " = " + bytes_text(bytes)});
  }
  r.tables.push_back(std::move(est));

  // 004 §1.4: "70B 的 bf16 权重本身约 130 GiB".
  const double w70 = weight_bytes(static_cast<double>(l2_70.num_parameters.value_or(0)), 2.0);
  r.expect({"weights, llama-2-70b, bf16", "004 §1.4", "GiB", 130.0, 5.0,
            "the document writes ≈ 130 GiB: two significant figures, ± half a unit of the tens",
            w70 / kGiB, Stated::parse("130", "≈ 130 GiB"),
            fmt::format("{} params × 2 B = {}", format_number(static_cast<double>(*l2_70.num_parameters)),
                        bytes_text(w70))});
  r.notes.push_back(fmt::format(
      "70B weights: llama-2-70b has {} parameters, {:.1f} GiB in bf16; the document's ≈ 130 GiB is "
      "also what a round 70e9 × 2 B gives ({:.1f} GiB).",
      format_number(static_cast<double>(*l2_70.num_parameters)), w70 / kGiB,
      weight_bytes(70e9, 2.0) / kGiB));

  // 000 §0 and §2.3: LLaMA-3-70B, 4K context, fp16, one sample.
  const KvQuery q3{1, 4096, CacheDtype::fp16, {}};
  const KvCacheSize s3 = parts.cache_size(l3_70, q3);
  const double per_sample = static_cast<double>(s3.total_bytes);
  r.expect({"KV cache per sample, llama-3-70b, ctx 4096, fp16", "000 §0, §2.3", "GiB",
            reference_bytes(l3_70, 4096) / kGiB, 0.0, kExact, per_sample / kGiB,
            Stated::parse("1.25", "≈ 1.25 GB", kGB / kGiB).flags("E3"),
            formula_text(s3, q3) + " = " + bytes_text(per_sample) + ": the document's GB is GiB"});
  r.notes.push_back(fmt::format(
      "GB vs GiB: 000 writes '1.25 GB' per sample; {} B is {:.4g} GiB but {:.4g} GB. kvlab compares "
      "in GiB, where the number is right, and flags the unit as an erratum.",
      format_number(per_sample), per_sample / kGiB, per_sample / kGB));

  // 000 §2.3: weights of a 70B model in fp16, and the max batch on 8 × A100-80GB.
  const double w3 = weight_bytes(static_cast<double>(l3_70.num_parameters.value_or(0)), 2.0);
  r.expect({"weights, llama-3-70b, fp16", "000 §2.3", "GB", 140.0, 5.0,
            "the document writes ≈ 140 GB: two significant figures, ± half a unit of the tens",
            w3 / kGB, Stated::parse("140", "≈ 140 GB"), bytes_text(w3)});
  const double max_batch = std::floor(kDoc23KvBudgetBytes / per_sample);
  const double max_batch_ref = std::floor(kDoc23KvBudgetBytes / reference_bytes(l3_70, 4096));
  const double max_batch_mixed = kDoc23KvBudgetBytes / kGB / (per_sample / kGiB);
  r.expect({"max batch, llama-3-70b, 4K fp16, 400 GB of KV budget", "000 §2.3", "sequences",
            max_batch_ref, 0.0, "whole sequences: floor of an exact ratio", max_batch,
            Stated::parse("320", "≈ 400 / 1.25 ≈ 320").flags("E4"),
            fmt::format("the same GB/GiB slip as the 1.25 GB row, one slip with two consequences: "
                        "a sample's cache is {} B = {:.4g} GiB but {:.4g} GB, so floor(400 GB / {:.4g} "
                        "GB) = floor({:.2f}) = {}, while {:.4g} / {:.4g} = {:.4g} divides GB by GiB "
                        "(the 400 GB budget is itself the document's rough premise, see the notes)",
                        format_number(per_sample), per_sample / kGiB, per_sample / kGB,
                        per_sample / kGB, kDoc23KvBudgetBytes / per_sample, max_batch,
                        kDoc23KvBudgetBytes / kGB, per_sample / kGiB, max_batch_mixed)});
  Table batch_table{"000 §2.3: how many 4K sequences fit on 8 × A100-80GB (llama-3-70b, fp16)",
                    {"quantity", "value", "unit", "from"}, {}};
  const GpuSpec a100 = with_option("catalogue GPU a100-80gb", [] { return load_gpu(premises::kGpu); });
  const double memory_8 = 8.0 * static_cast<double>(a100.memory_bytes);
  batch_table.rows.push_back({"memory of 8 × a100-80gb", memory_8 / kGB, "GB",
                              "catalogue memory_bytes, the datasheet's 80GB (document: 8 × 80)"});
  batch_table.rows.push_back({"weights", w3 / kGB, "GB", "num_parameters × 2 B (document: ≈ 140)"});
  batch_table.rows.push_back({"left", (memory_8 - w3) / kGB, "GB", "(document: ≈ 500)"});
  batch_table.rows.push_back({"KV budget", kDoc23KvBudgetBytes / kGB, "GB",
                              "document's premise, after activations and framework overhead"});
  batch_table.rows.push_back({"KV per sequence", per_sample / kGB, "GB", "kvlab formula (= 1.25 GiB)"});
  batch_table.rows.push_back({"max batch", max_batch, "sequences", "floor(budget / per sequence)"});
  batch_table.rows.push_back({"max batch mixing GB and GiB", max_batch_mixed,
                              "sequences", "400 GB / 1.25 GiB read as GB (the document's 320)"});
  batch_table.rows.push_back({"max batch if all that is left held KV", std::floor((memory_8 - w3) / per_sample),
                              "sequences", "floor(left / per sequence): no activations, no overhead"});
  r.tables.push_back(std::move(batch_table));
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
      format_number(static_cast<double>(a100.memory_bytes)),
      format_number(static_cast<double>(a100.memory_bytes) / kGB * kGiB / kMiB),
      static_cast<double>(a100.memory_bytes) / kGB,
      format_number(static_cast<double>(a100.memory_bytes) / kGB * kGiB),
      static_cast<double>(a100.memory_bytes) / kGB * kGiB / kGB,
      8.0 * static_cast<double>(a100.memory_bytes) / kGB * kGiB / kGB, memory_8 / kGB));

  // 000 §2.2: DeepSeek-V2 (MLA), 4K context, fp16, one sample.
  const KvQuery qd{1, 4096, CacheDtype::fp16, {}};
  const KvCacheSize sd = parts.cache_size(dsv2, qd);
  const double ds_bytes = static_cast<double>(sd.total_bytes);
  r.expect({"KV cache per sample, deepseek-v2 (MLA), ctx 4096, fp16", "000 §2.2", "GB",
            reference_bytes(dsv2, 4096) / kGB, 0.0, kExact, ds_bytes / kGB,
            Stated::parse("0.27", "≈ 0.27 GB").flags("E2"),
            formula_text(sd, qd) + " = " + bytes_text(ds_bytes) + ": neither unit gives 0.27"});

  // 003 Q5: "a 7B model (32 layers, 4096) at 2048 tokens: about 2 GB".
  const KvQuery q5{1, 2048, CacheDtype::fp16, {}};
  const KvCacheSize s5 = parts.cache_size(l2_7, q5);
  const KvCacheSize s5_fp32 = parts.cache_size(l2_7, KvQuery{1, 2048, CacheDtype::fp32, {}});
  const KvCacheSize s5_b2 = parts.cache_size(l2_7, KvQuery{2, 2048, CacheDtype::fp16, {}});
  r.expect({"KV cache, 7B (32 layers, d 4096, MHA), 2048 tokens, fp16", "003 Q5", "GiB",
            reference_bytes(l2_7, 2048) / kGiB, 0.0, kExact,
            static_cast<double>(s5.total_bytes) / kGiB, Stated::parse("2", "KV Cache 约占 2GB 显存", kGB / kGiB).flags("E1"),
            fmt::format("{} = {}; 2 GiB needs fp32 ({} B) or batch 2 ({} B)", formula_text(s5, q5),
                        bytes_text(static_cast<double>(s5.total_bytes)),
                        format_number(static_cast<double>(s5_fp32.total_bytes)),
                        format_number(static_cast<double>(s5_b2.total_bytes)))});

  // 000 §4.2: LLaMA-2-70B, H = 64, G = 8 -> 8× smaller than MHA.
  const KvCacheSize mha = size(l2_70, 1, 1, CacheDtype::bf16, l2_70.n_head);
  const double ratio = mha.bytes_per_token / s70.bytes_per_token;
  r.expect({"KV cache of MHA ÷ GQA, llama-2-70b (H = 64, G = 8)", "000 §4.2", "×",
            static_cast<double>(l2_70.n_head) / static_cast<double>(l2_70.n_kv_head), 0.0,
            "a ratio of exact byte counts, expected H / G from the config", ratio,
            Stated::parse("8", "8×"),
            fmt::format("{} B / {} B", format_number(mha.bytes_per_token), format_number(s70.bytes_per_token))});

  add_context_sweep(r, {{"llama-2-7b (MHA)", &l2_7, {}}, {"llama-2-13b (MHA)", &l2_13, {}},
                        {"llama-2-70b (GQA-8)", &l2_70, {}}, {"llama-3-8b (GQA-8)", &l3_8, {}}},
                    1, CacheDtype::bf16, 32768, parts);
  r.metric("bytes_per_token", s70.bytes_per_token);
  r.metric_exact("bytes", bytes_gqa);
  r.metric("bytes_per_token_llama_2_7b", s7.bytes_per_token);
  r.metric_exact("bytes_llama_3_70b_4k_fp16", s3.total_bytes);
  r.metric_exact("bytes_deepseek_v2_4k_fp16", sd.total_bytes);
  r.metric("max_batch_8xa100_80gb", max_batch);
  judge_cheatsheet_tables(r, parts.cheat_table);
  r.notes.push_back(
      "metrics bytes_per_token and bytes are the 004 §1.4 estimate (llama-2-70b, GQA-8, batch 32 × "
      "8192, bf16); `kvlab kv-size --model NAME` computes them for any model.");
  r.notes.push_back(
      "expected = the catalogue's independent per-token reference (data/facts.md) × tokens; measured = "
      "kvlab's formula on the config fields; 'document' is the course's own figure, checked at the "
      "precision it is written (an erratum does not fail the check).");
  return r;
}

// ---- with --model or --config: a calculator ------------------------------------------------

Result calculator(const KvSizeOptions& o, const KvSizeParts& parts) {
  const ModelSpec m = resolve_model(o.model, o.config, parts.load_model, parts.read_config);
  KvQuery q;
  q.batch = o.batch ? positive_count("--batch", *o.batch) : kDefaultBatch;
  q.ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDefaultCtx;
  q.dtype = o.kv_dtype ? parse_cache_dtype(*o.kv_dtype) : CacheDtype::bf16;
  if (o.kv_heads) q.kv_heads = positive_count("--kv-heads", *o.kv_heads);
  require_cache_fits(m, q, model_origin(o.model, o.config));

  const KvCacheSize s = parts.cache_size(m, q);
  const double total = static_cast<double>(s.total_bytes);
  const std::string claim =
      s.total_bytes == s.total_bytes_if_all_full
          ? fmt::format("KV cache of {}: {} = {} for batch {} × ctx {} in {}", m.name,
                        formula_text(s, q), format_number(total), q.batch, q.ctx,
                        cache_dtype_name(q.dtype))
          : fmt::format("KV cache of {}: {} held for batch {} × ctx {} in {}, summed over its layer "
                        "groups (if every layer cached every position: {} = {})", m.name,
                        format_number(total), q.batch, q.ctx, cache_dtype_name(q.dtype),
                        formula_text(s, q),
                        format_number(static_cast<double>(s.total_bytes_if_all_full)));
  Result r{kName, kSource, claim, {}, {}, {}, {}};

  Table t{fmt::format("KV cache of {} ({})", m.name, m.source), {"quantity", "value", "unit"}, {}};
  t.rows.push_back({"attention", attention_kind(m, s.layout), ""});
  t.rows.push_back({"layers L", static_cast<std::int64_t>(m.n_layer), ""});
  if (s.layout.mla) {
    t.rows.push_back({"latent d_c (kv_lora_rank)", static_cast<std::int64_t>(s.layout.latent_dim), "elements"});
    t.rows.push_back({"RoPE key d_r (qk_rope_head_dim)", static_cast<std::int64_t>(s.layout.rope_dim), "elements"});
  } else {
    t.rows.push_back({"K/V heads", static_cast<std::int64_t>(s.layout.kv_heads),
                      q.kv_heads ? fmt::format("override (the model has {})", m.n_kv_head) : ""});
    t.rows.push_back({"head_dim", static_cast<std::int64_t>(s.layout.head_dim), "elements"});
  }
  t.rows.push_back({"cache dtype", fmt::format("{} ({} bits)", cache_dtype_name(q.dtype),
                                               cache_dtype_bits(q.dtype)), ""});
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
  r.tables.push_back(std::move(t));

  // The layer groups: what each kind of layer holds at this context.
  const KvHeld held = kv_held(m, q);
  Table groups{fmt::format("layer groups of {} at batch {} × ctx {}, {}", m.name, q.batch, q.ctx,
                           cache_dtype_name(q.dtype)),
               {"layers", "count", "kind", "mixer", "window/chunk", "per layer per token",
                "bytes per token", "positions held", "bytes held"},
               {}};
  for (const GroupKv& g : held.groups) {
    const LayerGroup& lg = g.group;
    std::string width = "—";
    if (lg.kind == LayerKind::mla)
      width = fmt::format("{} + {} (d_c + d_r)", lg.latent_dim, lg.rope_dim);
    else if (lg.kind != LayerKind::none)
      width = fmt::format("2 × {} K/V heads × {}", lg.n_kv_head, lg.head_dim);
    groups.rows.push_back({layer_list_text(lg.layers), static_cast<std::int64_t>(lg.count),
                           layer_kind_name(lg.kind), lg.mixer,
                           lg.span ? Cell{static_cast<std::int64_t>(lg.span)} : Cell{std::string("—")},
                           width, static_cast<double>(g.bits_per_token) / 8.0,
                           static_cast<std::int64_t>(g.positions),
                           static_cast<double>(g.total_bits) / 8.0});
  }
  r.table_keys.push_back({"layer_groups", r.tables.size()});
  r.tables.push_back(std::move(groups));

  Table dtypes{"the same cache in each dtype", {"dtype", "bits", "bytes/token", "total bytes", "GiB"}, {}};
  for (CacheDtype d : all_cache_dtypes()) {
    KvQuery qd = q;
    qd.dtype = d;
    const KvCacheSize one = parts.cache_size(m, KvQuery{1, 1, d, q.kv_heads});
    std::uint64_t bits = 0;
    if (__builtin_mul_overflow(s.tokens, one.bits_per_token, &bits)) {  // a wider dtype than asked
      dtypes.rows.push_back({cache_dtype_name(d), static_cast<std::int64_t>(cache_dtype_bits(d)),
                             one.bytes_per_token, "over 2^64 bits", "—"});
      continue;
    }
    const KvCacheSize sd = parts.cache_size(m, qd);
    dtypes.rows.push_back({cache_dtype_name(d), static_cast<std::int64_t>(cache_dtype_bits(d)),
                           sd.bytes_per_token, count_cell(sd.total_bytes),
                           static_cast<double>(sd.total_bytes) / kGiB});
  }
  r.tables.push_back(std::move(dtypes));

  // 1. The formula on this config against the catalogue's independent figure, when there is one.
  const KvCacheSize own16 = parts.cache_size(m, KvQuery{1, 1, CacheDtype::bf16, {}});
  if (m.kv_bytes_per_token_16bit) {
    r.expect({fmt::format("K+V bytes per token, {}, 16-bit, {}", m.name,
                          s.layout.mla ? std::string("MLA latent + RoPE key")
                                       : fmt::format("its own {} K/V heads", m.n_kv_head)),
              "004 §1.4; data/facts.md", "B", static_cast<double>(*m.kv_bytes_per_token_16bit), 0.0,
              "kvlab's formula on the config against data/facts.md's independent figure; integer byte counts: exact",
              own16.bytes_per_token, std::nullopt, ""});
  } else {
    r.notes.push_back(
        "this config has no kv_bytes_per_token_16bit, so there is no independent reference: the "
        "check below compares the closed form only with a layer-by-layer count of the cache "
        "tensors. That catches arithmetic slips (the factor 2, int4's half byte, batch × ctx) but "
        "not a config whose fields mean something else than kvlab reads them as.");
  }
  // 2. The closed form against the tensors a preallocated cache would hold, counted one by one.
  const std::uint64_t counted_bits =
      checked_mul(count_elements(kv_cache_tensors(m, q)), cache_dtype_bits(q.dtype), "KV-cache bits");
  r.expect({fmt::format("KV-cache bytes, {}, batch {} × ctx {}, {}: closed form vs tensor count",
                        m.name, q.batch, q.ctx, cache_dtype_name(q.dtype)),
            "004 §1.4; 000 §2.1", "B", static_cast<double>(counted_bits) / 8.0, 0.0,
            "two integer counts of the same cache: exact",
            static_cast<double>(s.total_bits) / 8.0, std::nullopt, ""}).headline = true;
  // The student's answer, first: in GiB and GB (the course's trap), and exact bytes.
  r.answer = fmt::format("{} GiB = {} GB ({} B)", format_number(total / kGiB), format_number(total / kGB),
                         format_number(total));

  // 3. A layout kvlab did not fully read: no PASS on the total it built.
  r.warnings = m.warnings;
  if (!m.warnings.empty())
    r.expect({fmt::format("config layout fields kvlab does not interpret, {}", m.name),
              "docs/design.md (layer groups)", "fields", 0.0, 0.0,
              "a total built on a layout kvlab did not read is not a checked number",
              static_cast<double>(m.warnings.size()), std::nullopt,
              "see the warnings: the total assumes the layers as listed"});

  r.metric("bytes_per_token", s.bytes_per_token);
  r.metric_exact("bytes", s.total_bytes);
  r.metric_exact("bytes_if_all_full", s.total_bytes_if_all_full);
  r.metric_exact("elements_per_token", s.elements_per_token);
  r.metric("bytes_per_token_16bit", own16.bytes_per_token);
  if (m.state_elements_per_layer) {
    std::uint64_t state_layers = 0;
    for (const auto& l : m.layers) state_layers += l.mixer == "mamba";
    r.metric_exact("state_elements_per_sequence",
                   checked_mul(state_layers, *m.state_elements_per_layer, "state elements"));
  }
  if (!m.state_note.empty())
    r.notes.push_back("fixed per-sequence state of the attention-free layers (not in the KV bytes): " +
                      m.state_note + ".");

  std::vector<std::string> defaults;
  if (!o.batch) defaults.push_back(fmt::format("batch {}", kDefaultBatch));
  if (!o.ctx) defaults.push_back(fmt::format("ctx {}", kDefaultCtx));
  if (!o.kv_dtype) defaults.push_back("kv-dtype bf16");
  if (!defaults.empty()) {
    std::string list;
    for (const auto& d : defaults) list += (list.empty() ? "" : ", ") + d;
    r.notes.push_back("defaults used: " + list + ".");
  }
  if (q.kv_heads && !s.layout.mla)
    r.notes.push_back(fmt::format("--kv-heads {} replaces {}'s {} K/V heads: {} of its {} query "
                                  "heads share each K/V head.", *q.kv_heads, m.name, m.n_kv_head,
                                  m.n_head / *q.kv_heads, m.n_head));
  if (m.max_position_embeddings && q.ctx > *m.max_position_embeddings)
    r.notes.push_back(fmt::format("ctx {} exceeds {}'s trained context (max_position_embeddings "
                                  "= {}); the bytes are computed all the same.", q.ctx, m.name,
                                  *m.max_position_embeddings));
  if (held.total_bits != s.total_bits_if_all_full)
    r.notes.push_back(fmt::format(
        "windows, chunks and attention-free layers: a sliding layer holds min(ctx, W) positions "
        "(a rolling cache), a chunked layer min(ctx, C) (the most any step of a chunk needs), an "
        "attention-free layer none; {} B held against {} B if every layer cached every position.",
        format_number(static_cast<double>(s.total_bytes)),
        format_number(static_cast<double>(s.total_bytes_if_all_full))));
  std::vector<SweepLine> lines{{q.kv_heads ? fmt::format("{} with {} K/V heads", m.name, *q.kv_heads) : m.name,
                                &m, q.kv_heads}};
  if (!s.layout.mla && m.n_head > 1) {
    if (s.layout.kv_heads != m.n_head) lines.push_back({fmt::format("as MHA ({} K/V heads)", m.n_head), &m, m.n_head});
    if (s.layout.kv_heads != 1) lines.push_back({"as MQA (1 K/V head)", &m, std::uint64_t{1}});
  }
  add_context_sweep(r, lines, q.batch, q.dtype, q.ctx, parts);
  if (q.dtype == CacheDtype::int4)
    r.notes.push_back("int4 packs two elements per byte; a final half byte occupies a whole one.");
  if (s.layout.mla)
    r.notes.push_back("MLA caches the latent c_kv (shared by K and V) and the decoupled RoPE key "
                      "(shared by all heads): no factor 2 (000 §2.2, §4.4.3).");
  return r;
}

}  // namespace

Result run_kv_size(const KvSizeOptions& opts, const RunContext& /*ctx*/, const KvSizeParts& parts) {
  if (!opts.model && !opts.config) {
    const char* given = opts.batch ? "--batch" : opts.ctx ? "--ctx" : opts.kv_dtype ? "--kv-dtype"
                                   : opts.kv_heads ? "--kv-heads" : nullptr;
    if (given)
      throw InputError(fmt::format("{}: needs --model or --config (without either, kv-size shows "
                                   "the course's table)", given));
    return course_table(parts);
  }
  return calculator(opts, parts);
}

/// `kvlab kv-size`: binds the flags and calls run_kv_size.
class KvSizeCheck final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override { return kSummary; }
  bool has_plot() const override { return true; }
  std::string derivation() const override {
    return "Per token and layer the cache holds a key and a value vector for each KV head:\n"
           "  elements = 2 · n_kv_head · head_dim\n"
           "  bytes    = 2 · n_layer · n_kv_head · head_dim · bytes_per_element · batch · ctx\n"
           "Example (004 §1.4): 70B, 80 layers, 8 KV heads, head_dim 128, bf16 (2 B), batch 32 × ctx 8192:\n"
           "  2·80·8·128·2 = 327,680 B per token; × 32·8192 = 262,144 tokens = 85,899,345,920 B = 80 GiB.\n"
           "The same model with 64 KV heads (MHA) needs 8× that, 640 GiB; with 1 (MQA) 10 GiB.\n"
           "MLA caches kv_lora_rank + qk_rope_head_dim elements per token and layer instead (no factor 2,\n"
           "no heads): DeepSeek-V2, 60 · (512 + 64) · 2 B = 69,120 B per token.\n"
           "Source: 004 §1.4 (group 4); 000 §0, §2.2, §2.3.\n";
  }
  std::string description() const override {
    return "Without --model or --config: the course's KV-cache figures (004 §1.4's four-model "
           "table and 70B estimate with its MHA/MQA variants, 000's LLaMA-3-70B and DeepSeek-V2 "
           "per-sample sizes and max batch, 003 Q5's 7B example), each compared with the "
           "catalogue's independent reference, the document's own figure checked for errata.\n"
           "With --model NAME (a catalogue name, see data/models) or --config PATH (a Hugging Face "
           "config.json): bytes per token and in total for --batch (default 1) × --ctx (default "
           "4096) in --kv-dtype (default bf16); --kv-heads replaces the K/V head count (MHA = the "
           "query heads, MQA = 1; it must divide them; not for MLA models).";
  }
  void bind(OptionSet& sub) override {
    model_opt_ = sub.add_option("--model", model_, "Catalogue model, e.g. llama-2-70b (data/models)");
    config_opt_ = sub.add_option("--config", config_, "A Hugging Face config.json instead of --model")
                      ->type_name("FILE")
                      ->check(PathGiven());
    model_opt_->excludes(config_opt_);
    const auto positive = PositiveCount();
    batch_opt_ = sub.add_option("--batch", batch_, "Sequences in the batch (default 1)")->check(positive);
    ctx_opt_ = sub.add_option("--ctx", ctx_, "Cached positions per sequence, e.g. 4096, 4k, 128k (default 4096)")
                   ->transform(TokenCount());
    dtype_opt_ = sub.add_option("--kv-dtype", kv_dtype_, "Cache element type (default bf16)")
                     ->check(IsMember({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}));
    heads_opt_ = sub.add_option("--kv-heads", kv_heads_,
                                "Override the K/V heads (must divide the query heads; not for MLA)")
                     ->check(positive);
  }
  Result run(const RunContext& ctx) override {
    KvSizeOptions o;
    if (model_opt_ && model_opt_->given()) o.model = model_;
    if (config_opt_ && config_opt_->given()) o.config = config_;
    if (batch_opt_ && batch_opt_->given()) o.batch = batch_;
    if (ctx_opt_ && ctx_opt_->given()) o.ctx = ctx_;
    if (dtype_opt_ && dtype_opt_->given()) o.kv_dtype = kv_dtype_;
    if (heads_opt_ && heads_opt_->given()) o.kv_heads = kv_heads_;
    return run_kv_size(o, ctx);
  }

 private:
  std::string model_, config_, kv_dtype_;
  std::int64_t batch_ = 1, ctx_ = 4096, kv_heads_ = 1;
  Option *model_opt_ = nullptr, *config_opt_ = nullptr, *batch_opt_ = nullptr,
              *ctx_opt_ = nullptr, *dtype_opt_ = nullptr, *heads_opt_ = nullptr;
};

KVLAB_REGISTER_CHECK(40, KvSizeCheck);

}  // namespace kvlab::checks
