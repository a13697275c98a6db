// roofline — why decoding is memory-bound: intensity, step time and the tokens/s bound.
// Source: 004 §1.5 (group 5); 000 §3.1.
//
// One decode step reads every weight once (N · bytes/param) and each sequence's KV cache, and does
// 2·N·B + 4·B·ctx·L·H·head_dim FLOPs; its time is max(bytes / bandwidth, FLOPs / peak) and it
// yields B tokens. With no options: the course's table (A100-80GB ridge ≈ 153 FLOP/B; a 7B model
// at batch 1 ≈ 140 tok/s with intensity ≈ 1; batch 8 → 892 tok/s; batch 64 × 4096 → KV 128 GiB
// against 13 GiB of weights, intensity 6.8), with the assumptions that reproduce it printed, the
// same rows at llama-2-7b's true parameter count, and the batch where decode would turn
// compute-bound. Each step time is also recomputed along a second path (the catalogue's
// independent KV reference) so that a wrong formula in the library makes the check fail.
//
//   kvlab roofline                                     the course's table
//   kvlab roofline --model llama-2-7b --params 7e9 --gpu a100-80gb --batch 8 --ctx 1024
//   kvlab roofline --config path/to/config.json --gpu h100-sxm --batch 64 --kv-dtype fp8
#include "roofline_check.hpp"

#include <cmath>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost/kv_cache.hpp"
#include "report/writers.hpp"
#include "support/cost_common.hpp"
#include "support/options.hpp"

namespace kvlab::checks {
namespace {

// The contract's roofline metrics (issue 2): intensity, tokens_per_s, ridge, kv_bytes, weight_bytes.
void add_step_metrics(Result& r, const DecodeStep& s) {
  r.metric("intensity", s.intensity);
  r.metric("tokens_per_s", s.tokens_per_s);
  r.metric("ridge", s.ridge);
  r.metric_exact("kv_bytes", s.kv_bytes);
  r.metric("weight_bytes", s.weight_bytes);
}

constexpr const char* kName = "roofline";
constexpr const char* kSource = "004 §1.5 (group 5); 000 §3.1";
constexpr const char* kSummary =
    "Decode-step roofline: FLOPs, bytes, intensity vs the GPU's ridge, step time and tokens/s";
constexpr const char* kClaim =
    "A decode step reads all weights and every sequence's KV cache for about 2 FLOPs per weight "
    "per sequence: on an A100-80GB (ridge ≈ 153 FLOP/B) a 7B model at batch 1 has intensity ≈ 1 "
    "and is bandwidth-bound at ≈ 140 tok/s; batch 8 lifts the bound to 892 tok/s; at batch 64 × "
    "4096 the KV cache (128 GiB) outweighs the weights (13 GiB) and intensity falls back to 6.8.";

constexpr const char* kDefaultGpu = "a100-80gb";
constexpr std::uint64_t kDefaultBatch = 1;
constexpr std::uint64_t kDefaultCtx = 4096;
constexpr double kDefaultWeightBytes = 2.0;

// The course's "7B" is a round N = 7e9 parameters (an assumption that reproduces 004 §1.5's
// figures; llama-2-7b's true count, from the catalogue, is shown beside it).
constexpr double kCourseParams = 7e9;

/// The step time recomputed along a second path: the catalogue's independent KV reference
/// (facts.md) in place of the formula on the config fields (or, where the config has none or the
/// K/V heads are overridden, a layer-by-layer count of the cache tensors), the GPU's datasheet
/// rates, and the course's FLOP count. A wrong decode_step disagrees with it.
struct ReferenceStep {
  double time_s = 0.0;
  std::uint64_t kv_bytes = 0;
  std::string kv_from;  ///< where the KV bytes per token came from
};

ReferenceStep reference_step(const ModelSpec& m, const GpuSpec& g, const DecodeQuery& q) {
  ReferenceStep ref;
  const std::uint64_t bits = cache_dtype_bits(q.kv.dtype);
  std::uint64_t bits_per_token = 0;
  if (m.kv_bytes_per_token_16bit && !q.kv.kv_heads) {
    bits_per_token = checked_mul(*m.kv_bytes_per_token_16bit, bits, "reference KV bits") / 2;
    ref.kv_from = "the catalogue's kv_bytes_per_token_16bit (facts.md)";
  } else {
    const auto one = kv_cache_tensors(m, KvQuery{1, 1, q.kv.dtype, q.kv.kv_heads});
    bits_per_token = checked_mul(count_elements(one), bits, "reference KV bits");
    ref.kv_from = "a layer-by-layer count of the cache tensors (no independent reference)";
  }
  const std::uint64_t total_bits =
      checked_mul(checked_mul(q.kv.batch, q.kv.ctx, "batch x ctx"), bits_per_token, "reference KV bits");
  ref.kv_bytes = total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);
  const double b = static_cast<double>(q.kv.batch);
  const double bytes = q.n_params * q.bytes_per_param + static_cast<double>(ref.kv_bytes);
  const double flops = 2.0 * q.n_params * b +
                       b * static_cast<double>(attention_flops_per_sequence(m, q.kv.ctx));
  ref.time_s = std::max(bytes / g.bandwidth_bytes_per_s, flops / g.bf16_flops_per_s);
  return ref;
}

/// The expectation that the library's step time equals the second path's.
Expectation time_expectation(const std::string& what, const std::string& source, const DecodeStep& s,
                             const ReferenceStep& ref) {
  return Expectation{
      fmt::format("decode step time, {}: library vs a second path", what), source, "ms",
      ref.time_s * 1e3, 1e-12 * ref.time_s * 1e3,
      "the same quantities in double along two paths; they may differ by rounding only "
      "(1e-12 relative, ~1e4 ulp)", s.time_s * 1e3, std::nullopt,
      fmt::format("KV bytes from {}", ref.kv_from)};
}

/// A human line for where decode turns compute-bound.
std::string compute_bound_text(const ComputeBoundBatch& cb, double ridge) {
  if (!cb.reachable)
    return fmt::format("never: intensity only tends to {:.4g} FLOP/B < ridge {:.4g} as the batch "
                       "grows, because the KV bytes grow with the batch as fast as the FLOPs",
                       cb.intensity_limit, ridge);
  return fmt::format("from batch {} (B* = {:.4g}; intensity tends to {:.4g} FLOP/B)", cb.min_batch,
                     cb.batch, cb.intensity_limit);
}

// ---- with no options: 004 §1.5's table ------------------------------------------------------

Result course_table(const RooflineParts& parts) {
  Result r{kName, kSource, kClaim, {}, {}, {}, {}};
  const ModelSpec m7 = parts.load_model("llama-2-7b");
  const GpuSpec a100 = parts.load_gpu(kDefaultGpu);
  const double true_params = static_cast<double>(m7.num_parameters.value_or(0));

  const auto query = [](double n, std::uint64_t b, std::uint64_t ctx) {
    return DecodeQuery{n, kDefaultWeightBytes, KvQuery{b, ctx, CacheDtype::bf16, {}}};
  };
  const DecodeQuery q1 = query(kCourseParams, 1, 1024), q8 = query(kCourseParams, 8, 1024),
                    q64 = query(kCourseParams, 64, 4096);
  const DecodeStep s1 = parts.decode_step(m7, a100, q1);
  const DecodeStep s8 = parts.decode_step(m7, a100, q8);
  const DecodeStep s64 = parts.decode_step(m7, a100, q64);

  r.expect({"ridge point, A100-80GB, bf16 dense", "004 §1.5", "FLOP/B", 153.0, 0.5,
            "the document writes ≈ 153: ± half a unit", s1.ridge, Stated::parse("153", "≈ 153"),
            fmt::format("{:.4g} FLOP/s / {:.4g} B/s", a100.bf16_flops_per_s, a100.bandwidth_bytes_per_s)});
  r.expect({"tokens/s bound, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 140.0, 5.0,
            "the document writes ≈ 140: two significant figures", s1.tokens_per_s,
            Stated::parse("140", "≈ 140 tok/s"), ""});
  r.expect({"arithmetic intensity, 7B, batch 1 (ctx 1024)", "004 §1.5 (group 5)", "FLOP/B", 1.0, 0.5,
            "the document writes ≈ 1: ± half a unit", s1.intensity, Stated::parse("1", "≈ 1"), ""});
  r.expect({"tokens/s bound, 7B, batch 8 (ctx 1024)", "004 §1.5 (group 5)", "tok/s", 892.0, 0.5,
            "the document writes 892: ± half a unit", s8.tokens_per_s, Stated::parse("892", "892 tok/s"), ""});
  r.expect({"KV bytes read, 7B MHA, batch 64 × ctx 4096, bf16", "004 §1.5 (group 5)", "GiB",
            static_cast<double>(m7.kv_bytes_per_token_16bit.value_or(0)) * 64.0 * 4096.0 / kGiB, 0.0,
            "integer byte counts (facts.md reference × tokens vs the library): exact",
            static_cast<double>(s64.kv_bytes) / kGiB, Stated::parse("128", "128 GiB"), ""});
  r.expect({"weight bytes read, 7B (7e9 × 2 B)", "004 §1.5 (group 5)", "GiB", 13.0, 0.5,
            "the document writes 13: ± half a unit", s64.weight_bytes / kGiB,
            Stated::parse("13", "13 GiB"), ""});
  r.expect({"arithmetic intensity, 7B, batch 64 × ctx 4096", "004 §1.5 (group 5)", "FLOP/B", 6.8, 0.05,
            "the document writes 6.8: ± half a unit of the tenths", s64.intensity,
            Stated::parse("6.8", "6.8"), ""});
  const std::pair<const char*, std::pair<const DecodeQuery*, const DecodeStep*>> rows[] = {
      {"batch 1, ctx 1024", {&q1, &s1}}, {"batch 8, ctx 1024", {&q8, &s8}},
      {"batch 64, ctx 4096", {&q64, &s64}}};
  for (const auto& [label, qs] : rows)
    r.expect(time_expectation(fmt::format("7B, {}", label), "004 §1.5 (group 5)", *qs.second,
                              reference_step(m7, a100, *qs.first)));

  Table t{"004 §1.5 group 5 reproduced: llama-2-7b (MHA) on a100-80gb, bf16 weights and cache",
          {"N params", "batch", "ctx", "weights GiB", "KV GiB", "GFLOP", "GB read", "FLOP/B",
           "bound", "step ms", "tok/s"},
          {}};
  const auto add_row = [&](double n, const DecodeQuery& q, const DecodeStep& s) {
    t.rows.push_back({n, static_cast<std::int64_t>(q.kv.batch),
                      static_cast<std::int64_t>(q.kv.ctx), s.weight_bytes / kGiB,
                      static_cast<double>(s.kv_bytes) / kGiB, s.flops / 1e9, s.bytes / 1e9,
                      s.intensity, bound_name(s.bound), s.time_s * 1e3, s.tokens_per_s});
  };
  add_row(kCourseParams, q1, s1);
  add_row(kCourseParams, q8, s8);
  add_row(kCourseParams, q64, s64);
  std::vector<std::pair<DecodeQuery, DecodeStep>> true_rows;
  if (true_params > 0)
    for (const DecodeQuery* q : {&q1, &q8, &q64}) {
      DecodeQuery qt = *q;
      qt.n_params = true_params;
      const DecodeStep st = parts.decode_step(m7, a100, qt);
      add_row(true_params, qt, st);
      true_rows.emplace_back(qt, st);
    }
  r.tables.push_back(std::move(t));

  const std::uint64_t ctx_alt = 128;
  Table cb{"where decode turns compute-bound (intensity = ridge), llama-2-7b, N = 7e9, a100-80gb",
           {"ctx", "answer"}, {}};
  for (std::uint64_t c : {std::uint64_t{1024}, std::uint64_t{4096}, ctx_alt}) {
    const auto res = compute_bound_batch(m7, a100, query(kCourseParams, 1, c));
    cb.rows.push_back({static_cast<std::int64_t>(c),
                       compute_bound_text(res, s1.ridge) + (c == ctx_alt ? " (a short context, for contrast)" : "")});
  }
  r.tables.push_back(std::move(cb));

  // Every GPU in the catalogue: the ridge points, to place 000 §3.1's "≈ 200".
  Table ridges{"bf16 ridge points in the catalogue", {"gpu", "bandwidth TB/s", "bf16 TFLOP/s", "ridge FLOP/B"}, {}};
  std::optional<GpuSpec> a100_40;
  for (const auto& name : gpu_names()) {
    const GpuSpec g = parts.load_gpu(name);
    if (name == "a100-40gb") a100_40 = g;
    ridges.rows.push_back({name, g.bandwidth_bytes_per_s / 1e12, g.bf16_flops_per_s / 1e12,
                           ridge_flops_per_byte(g)});
  }
  r.tables.push_back(std::move(ridges));

  r.notes.push_back(fmt::format(
      "assumptions that reproduce the course's table: N = {:.3g} parameters at {} B (bf16); the KV "
      "cache of llama-2-7b (MHA, {} B per token in bf16); ctx 1024 for batch 1 and 8, 4096 for "
      "batch 64; {}: {:.4g} TB/s and {:.4g} TFLOP/s bf16 dense; FLOPs = 2N·B + 4·B·ctx·L·d with L "
      "= {}, d = H·head_dim = {}. Step time = max(bytes / bandwidth, FLOPs / peak).",
      kCourseParams, kDefaultWeightBytes, format_number(static_cast<double>(kv_bytes_per_token_16bit(m7))), a100.name,
      a100.bandwidth_bytes_per_s / 1e12, a100.bf16_flops_per_s / 1e12, m7.n_layer,
      m7.n_head * m7.head_dim));
  if (!true_rows.empty())
    r.notes.push_back(fmt::format(
        "with llama-2-7b's true {} parameters instead of 7e9: {:.1f} tok/s at batch 1, {:.1f} at "
        "batch 8, intensity {:.3g} at batch 64 × 4096 (rows with N = {:.4g} above).",
        format_number(true_params), true_rows[0].second.tokens_per_s, true_rows[1].second.tokens_per_s,
        true_rows[2].second.intensity, true_params));
  if (a100_40)
    r.notes.push_back(fmt::format(
        "000 §3.1's 'A100 BF16 ≈ 200 FLOPs/byte' is the ridge of the A100-40GB: {:.4g} TFLOP/s / "
        "{:.4g} TB/s = {:.1f} FLOP/B; the A100-80GB SXM of 004 §1.5 has {:.4g} TB/s, hence {:.1f}.",
        a100_40->bf16_flops_per_s / 1e12, a100_40->bandwidth_bytes_per_s / 1e12,
        ridge_flops_per_byte(*a100_40), a100.bandwidth_bytes_per_s / 1e12, s1.ridge));
  r.notes.push_back(
      "metrics intensity, tokens_per_s, kv_bytes and weight_bytes are the batch-1 row; `kvlab "
      "roofline --model NAME` computes them for any model, GPU, batch and context.");

  add_step_metrics(r, s1);
  r.metric("tokens_per_s_batch8", s8.tokens_per_s);
  r.metric("intensity_batch64_ctx4096", s64.intensity);
  r.metric_exact("kv_bytes_batch64_ctx4096", s64.kv_bytes);
  return r;
}

// ---- with --model or --config: a calculator ------------------------------------------------

Result calculator(const RooflineOptions& o, const RooflineParts& parts) {
  const ModelSpec m = resolve_model(o.model, o.config, parts.load_model, parts.read_config);
  const GpuSpec g = with_option("--gpu", [&] { return parts.load_gpu(o.gpu.value_or(kDefaultGpu)); });
  DecodeQuery q;
  if (o.params) {
    q.n_params = *o.params;
  } else if (m.num_parameters) {
    q.n_params = static_cast<double>(*m.num_parameters);
  } else {
    throw InputError(fmt::format("--params: {} has no num_parameters; give the parameter count, e.g. "
                                 "--params 7e9", m.name));
  }
  require_finite_range("--params", q.n_params, 1.0, 1e15);
  q.bytes_per_param = o.weight_bytes.value_or(kDefaultWeightBytes);
  require_finite_range("--weight-bytes", q.bytes_per_param, 1.0 / 64, 64.0);
  q.kv.batch = o.batch ? positive_count("--batch", *o.batch) : kDefaultBatch;
  q.kv.ctx = o.ctx ? positive_count("--ctx", *o.ctx) : kDefaultCtx;
  q.kv.dtype = o.kv_dtype ? parse_cache_dtype(*o.kv_dtype) : CacheDtype::bf16;

  const DecodeStep s = parts.decode_step(m, g, q);
  const ReferenceStep ref = reference_step(m, g, q);
  Result r{kName, kSource,
           fmt::format("One decode step of {} on {} at batch {} × ctx {}: {} / {} = {:.4g} FLOP/B "
                       "against a ridge of {:.4g}: {}-bound, {:.4g} tokens/s", m.name, g.name,
                       q.kv.batch, q.kv.ctx, fmt::format("{:.4g} FLOP", s.flops),
                       fmt::format("{:.4g} B", s.bytes), s.intensity, s.ridge, bound_name(s.bound),
                       s.tokens_per_s),
           {}, {}, {}, {}};

  r.expect(time_expectation(fmt::format("{}, batch {} × ctx {}", m.name, q.kv.batch, q.kv.ctx),
                            "004 §1.5", s, ref));
  r.expect({"step time = max(memory time, compute time)", "004 §1.5", "ms",
            std::max(s.time_memory_s, s.time_compute_s) * 1e3, 0.0, "the same doubles: exact",
            s.time_s * 1e3, std::nullopt, ""});
  const bool bound_ok = (s.bound == Bound::memory) == (s.time_memory_s >= s.time_compute_s);
  r.expect({"the bound named is the larger of the two times (1 = yes)", "004 §1.5", "", 1.0, 0.0,
            "a yes/no check", bound_ok ? 1.0 : 0.0, std::nullopt, ""});
  const double b = static_cast<double>(q.kv.batch);
  r.expect({"tokens/s × step time = batch", "004 §1.5", "tokens", b,
            4.0 * std::numeric_limits<double>::epsilon() * b,
            "one division and one multiplication in double: a few ulp", s.tokens_per_s * s.time_s,
            std::nullopt, ""});

  Table t{fmt::format("decode step: {} on {} ({})", m.name, g.name, g.description),
          {"quantity", "value", "unit"}, {}};
  t.rows.push_back({"parameters N", q.n_params, o.params ? "--params" : "num_parameters"});
  t.rows.push_back({"bytes per parameter", q.bytes_per_param, "B"});
  t.rows.push_back({"batch B", static_cast<std::int64_t>(q.kv.batch), "sequences"});
  t.rows.push_back({"ctx", static_cast<std::int64_t>(q.kv.ctx), "positions"});
  t.rows.push_back({"KV cache dtype", cache_dtype_name(q.kv.dtype), ""});
  t.rows.push_back({"weight bytes", s.weight_bytes, "B"});
  t.rows.push_back({"KV bytes", count_cell(s.kv_bytes), "B"});
  t.rows.push_back({"bytes read", s.bytes, "B"});
  t.rows.push_back({"FLOPs, weights (2·N·B)", s.flops_weights, "FLOP"});
  t.rows.push_back({m.is_mla() ? "FLOPs, attention (MLA, absorbed)" : "FLOPs, attention (4·B·ctx·L·H·head_dim)",
                    s.flops_attention, "FLOP"});
  t.rows.push_back({"arithmetic intensity", s.intensity, "FLOP/B"});
  t.rows.push_back({"ridge (bf16 peak / bandwidth)", s.ridge, "FLOP/B"});
  t.rows.push_back({"memory time", s.time_memory_s * 1e3, "ms"});
  t.rows.push_back({"compute time", s.time_compute_s * 1e3, "ms"});
  t.rows.push_back({"bound", bound_name(s.bound), ""});
  t.rows.push_back({"tokens/s bound", s.tokens_per_s, "tok/s"});
  r.tables.push_back(std::move(t));

  const ComputeBoundBatch cb = compute_bound_batch(m, g, q);
  r.notes.push_back("compute-bound at this ctx: " + compute_bound_text(cb, s.ridge) + ".");
  const double footprint = s.weight_bytes + static_cast<double>(s.kv_bytes);
  if (footprint > static_cast<double>(g.memory_bytes))
    r.notes.push_back(fmt::format("weights + KV = {:.4g} GB exceed the {:.4g} GB of one {}: the "
                                  "figures are a bound for the arithmetic, not a deployable setup.",
                                  footprint / kGB, static_cast<double>(g.memory_bytes) / kGB, g.name));
  if (o.params && m.num_parameters &&
      static_cast<double>(*m.num_parameters) != q.n_params) {
    DecodeQuery qt = q;
    qt.n_params = static_cast<double>(*m.num_parameters);
    const DecodeStep st = parts.decode_step(m, g, qt);
    r.notes.push_back(fmt::format("with {}'s own num_parameters = {} instead: {:.4g} tokens/s, "
                                  "intensity {:.4g}.", m.name, format_number(qt.n_params),
                                  st.tokens_per_s, st.intensity));
  }
  if (m.is_mla())
    r.notes.push_back("MLA attention FLOPs use the absorbed form of 000 §4.3.3: 2·(d_c + d_r) for "
                      "the scores and 2·d_c for AV per position, head and layer.");
  r.notes.push_back("the peak is the GPU's dense bf16 tensor rate whatever the dtypes; activations, "
                    "norms and softmax are ignored, as in the course.");

  add_step_metrics(r, s);
  r.metric("flops", s.flops);
  r.metric("bytes", s.bytes);
  r.metric("time_s", s.time_s);
  if (cb.reachable && cb.min_batch > 0) r.metric("compute_bound_batch", static_cast<double>(cb.min_batch));
  return r;
}

}  // namespace

Result run_roofline(const RooflineOptions& opts, const RunContext& /*ctx*/, const RooflineParts& parts) {
  if (!opts.model && !opts.config) {
    const char* given = opts.gpu ? "--gpu" : opts.batch ? "--batch" : opts.ctx ? "--ctx"
                        : opts.params ? "--params" : opts.weight_bytes ? "--weight-bytes"
                        : opts.kv_dtype ? "--kv-dtype" : nullptr;
    if (given)
      throw InputError(fmt::format("{}: needs --model or --config (without either, roofline shows "
                                   "the course's table)", given));
    return course_table(parts);
  }
  return calculator(opts, parts);
}

/// `kvlab roofline`: binds the flags and calls run_roofline.
class RooflineCheck final : public Check {
 public:
  std::string name() const override { return kName; }
  std::string source() const override { return kSource; }
  std::string summary() const override { return kSummary; }
  std::string description() const override {
    return "Without --model or --config: 004 §1.5's decode table on an A100-80GB, with the "
           "assumptions that reproduce it (N = 7e9 at 2 B, llama-2-7b's MHA cache, ctx 1024 for "
           "batch 1 and 8), the same rows at the true parameter count, where decode would turn "
           "compute-bound, and the ridge of every catalogue GPU (000 §3.1's ≈ 200 is the A100-40GB).\n"
           "With --model NAME or --config PATH: one decode step on --gpu (default a100-80gb) at "
           "--batch (default 1) × --ctx (default 4096), weights of --params (default the model's "
           "num_parameters) × --weight-bytes (default 2), cache in --kv-dtype (default bf16).";
  }
  void bind(CLI::App& sub) override {
    model_opt_ = sub.add_option("--model", model_, "Catalogue model, e.g. llama-2-7b (data/models)");
    config_opt_ = sub.add_option("--config", config_, "A Hugging Face config.json instead of --model")
                      ->type_name("FILE");
    model_opt_->excludes(config_opt_);
    gpu_opt_ = sub.add_option("--gpu", gpu_, "Catalogue GPU (data/hardware; default a100-80gb)");
    const auto positive = PositiveCount();
    batch_opt_ = sub.add_option("--batch", batch_, "Sequences decoded together (default 1)")->check(positive);
    ctx_opt_ = sub.add_option("--ctx", ctx_, "Cached positions per sequence (default 4096)")->check(positive);
    params_opt_ = sub.add_option("--params", params_, "Parameter count, e.g. 7e9 (default num_parameters)")
                      ->check(FiniteRange(1.0, 1e15));
    wbytes_opt_ = sub.add_option("--weight-bytes", weight_bytes_, "Bytes per parameter (default 2)")
                      ->check(FiniteRange(1.0 / 64, 64.0));
    dtype_opt_ = sub.add_option("--kv-dtype", kv_dtype_, "Cache element type (default bf16)")
                     ->check(CLI::IsMember({"fp32", "fp16", "bf16", "fp8", "int8", "int4"}));
  }
  Result run(const RunContext& ctx) override {
    RooflineOptions o;
    if (model_opt_ && model_opt_->count()) o.model = model_;
    if (config_opt_ && config_opt_->count()) o.config = config_;
    if (gpu_opt_ && gpu_opt_->count()) o.gpu = gpu_;
    if (batch_opt_ && batch_opt_->count()) o.batch = batch_;
    if (ctx_opt_ && ctx_opt_->count()) o.ctx = ctx_;
    if (params_opt_ && params_opt_->count()) o.params = params_;
    if (wbytes_opt_ && wbytes_opt_->count()) o.weight_bytes = weight_bytes_;
    if (dtype_opt_ && dtype_opt_->count()) o.kv_dtype = kv_dtype_;
    return run_roofline(o, ctx);
  }

 private:
  std::string model_, config_, gpu_, kv_dtype_;
  std::int64_t batch_ = 1, ctx_ = 4096;
  double params_ = 0.0, weight_bytes_ = 2.0;
  CLI::Option *model_opt_ = nullptr, *config_opt_ = nullptr, *gpu_opt_ = nullptr, *batch_opt_ = nullptr,
              *ctx_opt_ = nullptr, *params_opt_ = nullptr, *wbytes_opt_ = nullptr, *dtype_opt_ = nullptr;
};

KVLAB_REGISTER_CHECK(50, RooflineCheck);

}  // namespace kvlab::checks
