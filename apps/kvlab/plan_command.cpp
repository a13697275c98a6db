#include "plan_command.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "cost/plan.hpp"
#include "io/hardware.hpp"
#include "io/units.hpp"
#include "report/plot.hpp"
#include "report/writers.hpp"
#include "framework/options.hpp"

namespace kvlab::app {
namespace {

constexpr std::uint64_t kMaxCtx = std::uint64_t{1} << 40;    // 1.1e12 tokens: far past any model
constexpr std::uint64_t kMaxBatch = std::uint64_t{1} << 40;

std::string gb(double bytes) { return fmt::format("{:.4g} GB", bytes / kGB); }

/// Every token count of a list flag ("4k,32k" arrives as two values), parsed.
std::vector<std::uint64_t> token_counts(const std::string& flag, const std::vector<std::string>& values,
                                        std::uint64_t max) {
  std::vector<std::uint64_t> out;
  for (const auto& v : values) out.push_back(parse_token_count(flag, v, max));
  return out;
}

/// One model to plan: what the user typed and the spec.
struct Subject {
  std::string label;  ///< "--model NAME" or "--config PATH" for errors
  ModelSpec spec;
};

std::vector<Subject> subjects(const PlanFlags& f) {
  std::vector<Subject> out;
  for (const auto& name : f.models) {
    try {
      out.push_back({"--model " + printable(name, 100), load_model(name)});
    } catch (const InputError& e) {
      throw InputError(std::string("--model: ") + e.what());
    }
  }
  for (const auto& path : f.configs) {
    try {
      out.push_back({"--config " + printable(path, 100), read_model_config(path)});
    } catch (const InputError& e) {
      throw InputError(std::string("--config: ") + e.what());
    }
  }
  if (out.empty()) throw InputError("--model, --config: give at least one model (a catalogue name or a config.json)");
  if (out.size() > 1 && (f.params || f.active_params))
    throw InputError(fmt::format("{}: applies to one model; give one --model or --config with it",
                                 f.params ? "--params" : "--active-params"));
  return out;
}

std::string kv_kinds_text(const Plan& p, bool per_sequence) {
  std::string s;
  for (const auto& k : p.kv)
    s += fmt::format("{}{} attention, {} layers: {}", s.empty() ? "" : "; ", k.kind, k.layers,
                     gb(static_cast<double>(per_sequence ? k.bytes_per_sequence : k.bytes)));
  return s;
}

std::string device_text(const Plan& p) {
  return p.query.tp > 1 ? fmt::format("{} × {} (tensor parallel; figures per device)", p.query.tp, p.gpu) : p.gpu;
}

/// The five answer lines of one plan.
std::vector<std::string> answer_lines(const Plan& p) {
  const PlanQuery& q = p.query;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("weights    {}  ({} parameters × {} B{})", gb(p.weights_bytes),
                              format_number(p.n_params), p.bytes_per_param,
                              q.tp > 1 ? fmt::format(" / {} devices", q.tp) : ""));
  lines.push_back(fmt::format("KV cache   {}  at ctx {} × batch {}, {}: {}", gb(static_cast<double>(p.kv_bytes)),
                              format_number(static_cast<double>(q.ctx)), q.batch,
                              cache_dtype_name(q.kv_dtype), kv_kinds_text(p, false)));
  const double used = p.weights_bytes + static_cast<double>(p.kv_bytes);
  lines.push_back(fmt::format("fits       {}: {} {} {} = {} × {} (vLLM's gpu_memory_utilization: the share "
                              "of device memory for weights, activations and KV cache)",
                              p.fits ? "yes" : "NO", gb(used), p.fits ? "<=" : ">", gb(p.budget_bytes),
                              q.memory_utilization, gb(p.memory_bytes)));
  if (p.max_batch_unbounded)
    lines.push_back("max batch  not limited by memory: no per-token cache");
  else if (p.max_batch == 0 && p.weights_bytes >= p.budget_bytes)
    lines.push_back(fmt::format("max batch  0: the weights ({}) leave no room in {}", gb(p.weights_bytes),
                                gb(p.budget_bytes)));
  else if (p.max_batch == 0)
    lines.push_back(fmt::format("max batch  0: one sequence of {} tokens needs {} of KV, more than the {} left "
                                "after the weights",
                                format_number(static_cast<double>(q.ctx)),
                                gb(static_cast<double>(p.kv_bytes_per_sequence)), gb(p.budget_bytes - p.weights_bytes)));
  else
    lines.push_back(fmt::format("max batch  {} sequences of {} tokens ({} of KV each in the {} left after "
                                "the weights)", format_number(static_cast<double>(p.max_batch)),
                                format_number(static_cast<double>(q.ctx)),
                                gb(static_cast<double>(p.kv_bytes_per_sequence)), gb(p.budget_bytes - p.weights_bytes)));
  const auto bounds = [](std::uint64_t b, const DecodeStep& d, const PrefillBound& pf) {
    return fmt::format("at batch {}: decode <= {:.4g} tokens/s ({}-bound), prefill (time to first token) >= "
                       "{:.4g} s ({}-bound)", format_number(static_cast<double>(b)), d.tokens_per_s,
                       bound_name(d.bound), pf.time_s, bound_name(pf.bound));
  };
  if (p.decode_at_max)
    lines.push_back("bounds     " + bounds(p.max_batch, *p.decode_at_max, p.prefill_at_max));
  if (p.decode_at_batch && (!p.decode_at_max || p.max_batch != q.batch))
    lines.push_back(std::string(p.decode_at_max ? "           " : "bounds     ") +
                    bounds(q.batch, *p.decode_at_batch, p.prefill_at_batch) +
                    (p.fits ? "" : " (does not fit)"));
  return lines;
}

/// --verbose: each formula with its numbers.
std::vector<std::string> formula_lines(const Plan& p, const ModelSpec& full, const GpuSpec& g) {
  const PlanQuery& q = p.query;
  const ModelSpec& md = p.share.per_device;
  std::vector<std::string> lines;
  const auto n = [](double v) { return format_number(v); };
  lines.push_back(fmt::format("weights = N × bytes/param / T = {} × {} / {} = {} B", n(p.n_params), p.bytes_per_param,
                              q.tp, n(p.weights_bytes)));
  const double bits = static_cast<double>(cache_dtype_bits(q.kv_dtype));
  if (md.is_mla())
    lines.push_back(fmt::format("KV = L × (d_c + d_r) × bits/8 × ctx × batch = {} × ({} + {}) × {}/8 × {} × {} = {} B",
                                md.n_layer, *md.kv_lora_rank, *md.qk_rope_head_dim, bits, q.ctx, q.batch,
                                n(static_cast<double>(p.kv_bytes))));
  else
    lines.push_back(fmt::format("KV = 2 × L × K/V heads per device × head_dim × bits/8 × ctx × batch = 2 × {} × {} × "
                                "{} × {}/8 × {} × {} = {} B{}", md.n_layer, md.n_kv_head, md.head_dim, bits, q.ctx,
                                q.batch, n(static_cast<double>(p.kv_bytes)),
                                q.tp > 1 ? fmt::format(" (the model's {} K/V heads over {} devices)", full.n_kv_head, q.tp)
                                         : ""));
  lines.push_back(fmt::format("budget = utilization × memory = {} × {} = {} B", q.memory_utilization, n(p.memory_bytes),
                              n(p.budget_bytes)));
  lines.push_back(fmt::format("fits: weights + KV = {} + {} = {} {} {}", n(p.weights_bytes),
                              n(static_cast<double>(p.kv_bytes)), n(p.weights_bytes + static_cast<double>(p.kv_bytes)),
                              p.fits ? "<=" : ">", n(p.budget_bytes)));
  if (p.kv_bytes_per_sequence > 0 && p.weights_bytes <= p.budget_bytes)
    lines.push_back(fmt::format("max batch = floor((budget − weights) / KV per sequence) = floor(({} − {}) / {}) = "
                                "floor({:.6g}) = {}", n(p.budget_bytes), n(p.weights_bytes),
                                n(static_cast<double>(p.kv_bytes_per_sequence)),
                                (p.budget_bytes - p.weights_bytes) / static_cast<double>(p.kv_bytes_per_sequence),
                                p.max_batch));
  const auto step = [&](std::uint64_t b, const DecodeStep& d, const PrefillBound& pf) {
    lines.push_back(fmt::format("decode at batch {}: bytes = weights read + KV = {} + {} = {} B; FLOPs = {} + {} = {}; "
                                "time = max(bytes / {} B/s, FLOPs / {} FLOP/s) = max({:.6g}, {:.6g}) = {:.6g} s; "
                                "tokens/s = {} / time = {:.6g}", b, n(d.weight_bytes), n(static_cast<double>(d.kv_bytes)),
                                n(d.bytes), n(d.flops_weights), n(d.flops_attention), n(d.flops),
                                n(g.bandwidth_bytes_per_s), n(g.bf16_flops_per_s), d.time_memory_s, d.time_compute_s,
                                d.time_s, b, d.tokens_per_s));
    lines.push_back(fmt::format("prefill at batch {}: FLOPs = 2·N_used·B·ctx + B·a₁·ctx·(ctx+1)/2 = {}; bytes = weights "
                                "+ KV written = {}; time = max(FLOPs / peak, bytes / bandwidth) = {:.6g} s", b,
                                n(pf.flops), n(pf.bytes), pf.time_s));
  };
  if (p.decode_at_max) step(p.max_batch, *p.decode_at_max, p.prefill_at_max);
  if (p.decode_at_batch && p.max_batch != q.batch) step(q.batch, *p.decode_at_batch, p.prefill_at_batch);
  return lines;
}

/// The JSON figures of one plan (the contract's metrics and the rest).
nlohmann::json plan_metrics(const Plan& p) {
  nlohmann::json j;
  j["weights_bytes"] = p.weights_bytes;
  j["kv_bytes"] = p.kv_bytes;
  j["kv_bytes_per_sequence"] = p.kv_bytes_per_sequence;
  j["fits"] = p.fits ? 1 : 0;
  j["max_batch"] = p.max_batch;
  j["max_batch_unbounded"] = p.max_batch_unbounded ? 1 : 0;
  const DecodeStep* d = p.decode_at_max ? &*p.decode_at_max : nullptr;
  const PrefillBound* pf = p.decode_at_max ? &p.prefill_at_max : nullptr;
  if (p.max_batch_unbounded) d = &*p.decode_at_batch, pf = &p.prefill_at_batch;
  j["decode_tokens_per_s_bound"] = d ? d->tokens_per_s : 0.0;
  j["prefill_seconds_bound"] = pf ? pf->time_s : 0.0;
  j["decode_tokens_per_s_bound_at_batch"] = p.decode_at_batch->tokens_per_s;
  j["prefill_seconds_bound_at_batch"] = p.prefill_at_batch.time_s;
  j["budget_bytes"] = p.budget_bytes;
  j["memory_bytes"] = p.memory_bytes;
  j["n_params"] = p.n_params;
  j["tp"] = p.query.tp;
  j["ctx"] = p.query.ctx;
  j["batch"] = p.query.batch;
  return j;
}

Table long_table(const std::vector<Plan>& plans) {
  Table t{"plans (per device)",
          {"model", "gpu", "tp", "ctx", "batch", "weights GB", "KV GB", "fits", "max batch",
           "decode tok/s at max batch", "prefill s at max batch", "decode tok/s at batch", "prefill s at batch"},
          {}};
  for (const auto& p : plans) {
    const bool has_max = p.decode_at_max.has_value();
    t.rows.push_back({p.model, p.gpu, static_cast<std::int64_t>(p.query.tp), static_cast<std::int64_t>(p.query.ctx),
                      static_cast<std::int64_t>(p.query.batch), p.weights_bytes / kGB,
                      static_cast<double>(p.kv_bytes) / kGB, std::string(p.fits ? "yes" : "no"),
                      p.max_batch_unbounded ? Cell{std::string("unbounded")}
                                            : Cell{static_cast<std::int64_t>(p.max_batch)},
                      has_max ? Cell{p.decode_at_max->tokens_per_s} : Cell{std::string("—")},
                      has_max ? Cell{p.prefill_at_max.time_s} : Cell{std::string("—")},
                      p.decode_at_batch->tokens_per_s, p.prefill_at_batch.time_s});
  }
  return t;
}

/// Several models at one ctx and batch: one column per model.
Table side_by_side(const std::vector<Plan>& plans) {
  Table t{fmt::format("side by side at ctx {} × batch {} (per device)", plans[0].query.ctx, plans[0].query.batch),
          {"quantity"}, {}};
  for (const auto& p : plans) t.columns.push_back(p.model);
  const auto row = [&](const std::string& name, auto cell) {
    std::vector<Cell> r{name};
    for (const auto& p : plans) r.push_back(cell(p));
    t.rows.push_back(std::move(r));
  };
  row("weights GB", [](const Plan& p) -> Cell { return p.weights_bytes / kGB; });
  row("KV GB", [](const Plan& p) -> Cell { return static_cast<double>(p.kv_bytes) / kGB; });
  row("fits", [](const Plan& p) -> Cell { return std::string(p.fits ? "yes" : "no"); });
  row("max batch", [](const Plan& p) -> Cell {
    return p.max_batch_unbounded ? Cell{std::string("unbounded")} : Cell{static_cast<std::int64_t>(p.max_batch)};
  });
  row("decode tok/s at max batch", [](const Plan& p) -> Cell {
    return p.decode_at_max ? Cell{p.decode_at_max->tokens_per_s} : Cell{std::string("—")};
  });
  row("prefill s at max batch", [](const Plan& p) -> Cell {
    return p.decode_at_max ? Cell{p.prefill_at_max.time_s} : Cell{std::string("—")};
  });
  row("decode tok/s at batch", [](const Plan& p) -> Cell { return p.decode_at_batch->tokens_per_s; });
  row("prefill s at batch", [](const Plan& p) -> Cell { return p.prefill_at_batch.time_s; });
  return t;
}

std::vector<Plot> plan_plots(const std::vector<Plan>& plans, const std::vector<std::uint64_t>& ctxs,
                             const std::vector<std::uint64_t>& batches) {
  std::vector<Plot> out;
  const bool by_ctx = ctxs.size() > 1;
  Plot decode{by_ctx ? "decode tokens/s bound against context" : "decode tokens/s bound against batch",
              by_ctx ? "context (tokens)" : "batch (sequences)", "tokens/s (bound, per device group)", true, true, {}};
  for (const auto& p : plans) {
    const std::string series = by_ctx ? fmt::format("{}, batch {}", p.model, p.query.batch) : p.model;
    auto it = std::find_if(decode.series.begin(), decode.series.end(),
                           [&](const PlotSeries& s) { return s.title == series; });
    if (it == decode.series.end()) {
      decode.series.push_back({series, {}, {}, "linespoints"});
      it = decode.series.end() - 1;
    }
    it->x.push_back(static_cast<double>(by_ctx ? p.query.ctx : p.query.batch));
    it->y.push_back(p.decode_at_batch->tokens_per_s);
  }
  out.push_back(std::move(decode));
  if (by_ctx) {
    Plot mb{"largest batch that fits against context", "context (tokens)", "max batch (sequences)", true, true, {}};
    mb.legend = "top right";
    for (const auto& p : plans) {
      if (p.query.batch != batches.front() || p.max_batch == 0) continue;  // one point per (model, ctx)
      auto it = std::find_if(mb.series.begin(), mb.series.end(), [&](const PlotSeries& s) { return s.title == p.model; });
      if (it == mb.series.end()) {
        mb.series.push_back({p.model, {}, {}, "linespoints"});
        it = mb.series.end() - 1;
      }
      it->x.push_back(static_cast<double>(p.query.ctx));
      it->y.push_back(static_cast<double>(p.max_batch));
    }
    if (!mb.series.empty()) out.push_back(std::move(mb));
  }
  return out;
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, PlanFlags& f) {
  auto* sub = app.add_subcommand(
      "plan", "Does a model fit on a GPU at a context and batch? Weights, KV cache, largest batch, decode and prefill bounds");
  sub->footer(
      "Answers first, per device: the weights; the KV cache at (ctx, batch) by layer kind; whether both fit in "
      "--memory-utilization × memory (vLLM's gpu_memory_utilization, default 0.9: the share of device memory the "
      "engine takes for weights, activations and KV cache); the largest batch at ctx; the decode tokens/s and "
      "prefill (time-to-first-token) roofline bounds at that batch. --ctx and --batch take lists (4k,32k,128k) "
      "and print a table; several --model/--config print side by side. Token counts take k (1,024) and M "
      "(1,048,576). Formulas: lib/cost/plan.hpp; --verbose prints them with the numbers.");
  sub->add_option("--model", f.models, "Catalogue model (data/models); repeat for side by side");
  sub->add_option("--config", f.configs, "A Hugging Face config.json; repeatable")->type_name("FILE");
  sub->add_option("--gpu", f.gpu, "Catalogue GPU (data/hardware) or your own FILE.json in its schema")
      ->type_name("NAME|FILE");
  sub->add_option("--bandwidth", f.bandwidth, "Memory bandwidth, e.g. 3.35TB/s (bare: bytes/s); overrides --gpu's")
      ->type_name("RATE");
  sub->add_option("--peak-flops", f.peak_flops, "Dense bf16 peak, e.g. 989.5TFLOPS (bare: FLOP/s); overrides --gpu's")
      ->type_name("RATE");
  sub->add_option("--memory", f.memory, "Device memory, e.g. 80GiB or 141GB (bare: bytes); overrides --gpu's")
      ->type_name("SIZE");
  sub->add_option("--tp", f.tp, "Tensor-parallel devices: weights and K/V heads split over N (default 1)")
      ->transform(kvlab::checks::IntRange(1, 1024));
  sub->add_option("--ctx", f.ctx, "Tokens per sequence, or a list: 4096, 4k, 32k,128k, 1M (required)")
      ->delimiter(',')
      ->type_name("TOKENS");
  sub->add_option("--batch", f.batch, "Sequences, or a list: 1,8,64 (default 1)")->delimiter(',')->type_name("N");
  std::vector<std::string> dtypes;
  for (CacheDtype d : all_cache_dtypes()) dtypes.push_back(cache_dtype_name(d));
  sub->add_option("--kv-dtype", f.kv_dtype, "Cache element type (default bf16)")->check(CLI::IsMember(dtypes));
  sub->add_option("--weights-dtype", f.weights_dtype, "Weight element type: bytes per parameter (default bf16 = 2)")
      ->check(CLI::IsMember(dtypes));
  sub->add_option("--memory-utilization", f.memory_utilization,
                  "Share of device memory for weights + KV, vLLM's gpu_memory_utilization (default 0.9)")
      ->check(kvlab::checks::FiniteRange(0.0, 1.0, /*lo_open=*/true));
  sub->add_option("--params", f.params, "Parameters N (one model; a config.json has none), e.g. 7.6e9")
      ->check(kvlab::checks::FiniteRange(1.0, 1e15));
  sub->add_option("--active-params", f.active_params, "MoE: parameters one token uses (one model)")
      ->check(kvlab::checks::FiniteRange(1.0, 1e15));
  sub->add_option("--format", f.format, "Output: text (default), md, csv (tables only) or json")
      ->check(CLI::IsMember({"text", "md", "csv", "json"}));
  sub->add_option("--plot", f.plot, "Draw the table: FILE.svg, or 'term' for the terminal (needs gnuplot)");
  sub->add_flag("--verbose", f.verbose, "Show each formula with its numbers");
  return sub;
}

int run_plan(const PlanFlags& f, std::ostream& out) {
  const Format format = parse_format(f.format);
  std::optional<PlotTarget> plot;
  if (!f.plot.empty()) {
    plot = parse_plot_target(f.plot);
    if (!plot->terminal && !std::ofstream(plot->svg_path, std::ios::app))
      throw InputError("--plot: cannot write " + plot->svg_path);
  }
  if (f.ctx.empty()) throw InputError("--ctx: required: the tokens per sequence, e.g. --ctx 8k or --ctx 4k,32k");
  const auto ctxs = token_counts("--ctx", f.ctx, kMaxCtx);
  std::vector<std::uint64_t> batches{1};
  if (!f.batch.empty()) {
    try {
      batches = token_counts("--batch", f.batch, kMaxBatch);
    } catch (const InputError& e) {  // the same grammar, but sequences rather than tokens
      std::string msg = e.what();
      const auto at = msg.find("a token count");
      if (at != std::string::npos) msg.replace(at, 13, "a sequence count");
      throw InputError(msg);
    }
  }
  PlanQuery base;
  base.kv_dtype = parse_cache_dtype(f.kv_dtype);
  base.weights_dtype = parse_cache_dtype(f.weights_dtype);
  if (f.tp < 1) throw InputError(fmt::format("--tp: must be >= 1 (got {})", f.tp));
  base.tp = static_cast<std::uint64_t>(f.tp);
  base.memory_utilization = f.memory_utilization;
  base.params = f.params;
  base.active_params = f.active_params;
  if (!(f.memory_utilization > 0.0 && f.memory_utilization <= 1.0))
    throw InputError(fmt::format("--memory-utilization: must be in (0, 1] (got {})", f.memory_utilization));

  const DeviceSpec dev = resolve_device_flags(HardwareFlags{f.gpu, f.bandwidth, f.peak_flops, f.memory}, "");
  if (!dev.memory_known)
    throw InputError("--memory: plan sizes the cache against the device's memory; give it, e.g. --memory 24GB");
  const auto models = subjects(f);

  std::vector<Plan> plans;
  std::vector<const ModelSpec*> specs;
  for (const auto& s : models)
    for (std::uint64_t c : ctxs)
      for (std::uint64_t b : batches) {
        PlanQuery q = base;
        q.ctx = c;
        q.batch = b;
        try {
          plans.push_back(make_plan(s.spec, dev.spec, q));
        } catch (const InputError& e) {
          const std::string msg = e.what();
          // The plan's own errors name a flag; a model's field errors are prefixed with the model.
          throw InputError(msg.starts_with("--") ? msg : s.label + ": " + msg);
        }
        specs.push_back(&s.spec);
      }
  const bool single = plans.size() == 1;
  const bool side = models.size() > 1 && ctxs.size() == 1 && batches.size() == 1;
  std::vector<Table> tables;
  tables.push_back(side ? side_by_side(plans) : long_table(plans));
  Table kv{"KV cache by layer kind (per device)", {"model", "ctx", "batch", "kind", "layers", "bytes", "bytes per sequence"}, {}};
  for (const auto& p : plans)
    for (const auto& k : p.kv)
      kv.rows.push_back({p.model, static_cast<std::int64_t>(p.query.ctx), static_cast<std::int64_t>(p.query.batch),
                         k.kind, static_cast<std::int64_t>(k.layers), static_cast<std::int64_t>(k.bytes),
                         static_cast<std::int64_t>(k.bytes_per_sequence)});
  tables.push_back(std::move(kv));
  std::vector<std::string> notes;
  notes.push_back(fmt::format("device: {}; {:.4g} TB/s, {:.4g} TFLOP/s dense bf16, {}{}.", dev.provenance,
                              dev.spec.bandwidth_bytes_per_s / 1e12, dev.spec.bf16_flops_per_s / 1e12,
                              gb(static_cast<double>(dev.spec.memory_bytes)),
                              base.tp > 1 ? fmt::format(" each, {} devices", base.tp) : ""));
  notes.push_back("bounds, not predictions: activations, the CUDA graphs and the engine's own memory are not in the "
                  "budget, and a real step is slower than its roofline; decode is costed with ctx positions cached "
                  "(the last step of a sequence), prefill as every prompt at once.");
  std::vector<std::string> warnings;
  for (const auto& p : plans) {
    for (const auto& n : p.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    for (const auto& w : p.warnings)
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }

  const std::string head = fmt::format("plan: {} on {}, ctx {} × batch {}, KV cache {}, weights {}",
                                       single ? plans[0].model : fmt::format("{} model(s)", models.size()),
                                       device_text(plans[0]),
                                       ctxs.size() == 1 ? format_number(static_cast<double>(ctxs[0])) : "list",
                                       batches.size() == 1 ? format_number(static_cast<double>(batches[0])) : "list",
                                       f.kv_dtype, f.weights_dtype);
  switch (format) {
    case Format::json: {
      nlohmann::json j;
      j["command"] = "plan";
      j["model"] = plans[0].model;
      j["gpu"] = plans[0].gpu;
      j["metrics"] = plan_metrics(plans[0]);
      j["plans"] = nlohmann::json::array();
      for (std::size_t i = 0; i < plans.size(); ++i) {
        nlohmann::json pj{{"model", plans[i].model}, {"gpu", plans[i].gpu}, {"metrics", plan_metrics(plans[i])}};
        pj["kv_by_kind"] = nlohmann::json::array();
        for (const auto& k : plans[i].kv)
          pj["kv_by_kind"].push_back({{"kind", k.kind}, {"layers", k.layers}, {"bytes", k.bytes},
                                      {"bytes_per_sequence", k.bytes_per_sequence}});
        if (f.verbose) pj["formulas"] = formula_lines(plans[i], *specs[i], dev.spec);
        j["plans"].push_back(std::move(pj));
      }
      j["tables"] = nlohmann::json::array();
      for (const auto& t : tables) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& r : t.rows) {
          nlohmann::json jr = nlohmann::json::array();
          for (const auto& c : r)
            std::visit([&](const auto& v) { jr.push_back(v); }, c);
          rows.push_back(std::move(jr));
        }
        j["tables"].push_back({{"title", t.title}, {"columns", t.columns}, {"rows", std::move(rows)}});
      }
      j["notes"] = notes;
      j["warnings"] = warnings;
      out << j.dump(2) << '\n';
      break;
    }
    case Format::csv:
      for (const auto& t : tables) write_table(out, t, Format::csv);
      break;
    case Format::text:
    case Format::md: {
      const bool md = format == Format::md;
      out << (md ? "## " : "") << head << "\n\n";
      for (const auto& w : warnings)
        out << (md ? "- **warning**: " : "warning: ") << w << " (the figures below may be wrong)\n";
      if (!warnings.empty()) out << '\n';
      if (single)
        for (const auto& line : answer_lines(plans[0])) out << (md ? "- " : "  ") << line << '\n';
      if (single) out << '\n';
      for (std::size_t i = 0; f.verbose && i < plans.size(); ++i) {
        out << (md ? "### " : "") << "formulas, " << plans[i].model << ", ctx " << plans[i].query.ctx << " × batch "
            << plans[i].query.batch << (md ? "\n\n" : ":\n");
        for (const auto& line : formula_lines(plans[i], *specs[i], dev.spec)) out << (md ? "- " : "  ") << line << '\n';
        out << '\n';
      }
      for (std::size_t i = single ? 1 : 0; i < tables.size(); ++i) {  // one plan: the lines above are its table
        write_table(out, tables[i], format);
        out << '\n';
      }
      out << (md ? "notes:\n\n" : "notes:\n");
      for (const auto& n : notes) out << (md ? "- " : "  - ") << n << '\n';
      break;
    }
  }
  if (plot) {
    const auto plots = plan_plots(plans, ctxs, batches);
    const auto gnuplot = find_gnuplot();
    if (!gnuplot) {
      std::cerr << "kvlab: --plot needs gnuplot, which is not installed (Debian/Ubuntu: apt-get install "
                   "gnuplot-nox); the tables above hold the same numbers\n";
      return 0;
    }
    const std::string drawing = render_plots(*gnuplot, plots, *plot);
    const bool to_stdout = format == Format::text || format == Format::md;
    (to_stdout ? out : std::cerr) << drawing << std::flush;
    if (!plot->terminal) std::cerr << "kvlab: plot written to " << plot->svg_path << '\n';
  }
  return 0;
}

}  // namespace kvlab::app
