// Helpers shared by the serving checks (fragmentation, continuous-batching, chunked-prefill): the
// engine they simulate, the per-request and per-step series as tables (what --format csv exports
// and a --plot can draw), and the --long progress bar. No arithmetic of the claims lives here.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "io/catalogue.hpp"
#include "report/result.hpp"
#include "serve/simulator.hpp"
#include "support/cost_common.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {

/// The course's "7B" is a round N = 7e9 at bf16 (as in `kvlab roofline`); llama-2-7b's cache.
inline constexpr double kServeParams = premises::kParams7b;
inline constexpr const char* kServeModel = premises::kModel7b;
inline constexpr const char* kServeGpu = premises::kGpu;
/// Rows of a series table by default; --long shows every row.
inline constexpr std::size_t kSeriesRows = 40;

/// The engine the serving checks simulate: `model` on `gpu`, N = kServeParams at 2 B/param.
/// Throws InputError naming --model or --gpu.
inline serve::StepTimeModel serve_engine(const std::string& model, const std::string& gpu,
                                         ModelSpec* m_out = nullptr, GpuSpec* g_out = nullptr) {
  const ModelSpec m = with_option("--model", [&] { return load_model(model); });
  const GpuSpec g = with_option("--gpu", [&] { return load_gpu(gpu); });
  if (m_out) *m_out = m;
  if (g_out) *g_out = g;
  return with_option("--model", [&] { return serve::StepTimeModel(m, g, kServeParams, 2.0); });
}

/// Indices 0..n-1, or at most `limit` of them evenly spaced (first and last included).
inline std::vector<std::size_t> series_rows(std::size_t n, bool full, std::size_t limit = kSeriesRows) {
  std::vector<std::size_t> rows;
  if (full || n <= limit) {
    for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  for (std::size_t k = 0; k < limit; ++k) rows.push_back(k * (n - 1) / (limit - 1));
  return rows;
}

inline std::string series_title(const std::string& what, std::size_t shown, std::size_t n) {
  return shown == n ? fmt::format("{} (all {})", what, n)
                    : fmt::format("{} ({} of {}, evenly spaced; --long for all)", what, shown, n);
}

/// Per-request series: arrival, lengths, TTFT, TPOT, latency, longest inter-token gap (simulated s).
inline Table request_table(const serve::SimResult& r, const std::string& label, bool full) {
  const auto rows = series_rows(r.requests.size(), full);
  Table t{series_title("requests, " + label, rows.size(), r.requests.size()),
          {"id", "arrival_s", "prompt", "output", "ttft_s_sim", "tpot_s_sim", "latency_s_sim",
           "max_gap_s_sim", "preemptions"},
          {}};
  for (std::size_t k : rows) {
    const serve::RequestRecord& q = r.requests[k];
    const double tpot = q.output_tokens >= 2 ? (q.last_token_s - q.first_token_s) /
                                                   static_cast<double>(q.output_tokens - 1)
                                             : 0.0;
    t.rows.push_back({static_cast<std::int64_t>(q.id), q.arrival_s, static_cast<std::int64_t>(q.prompt_tokens),
                      static_cast<std::int64_t>(q.output_tokens), q.first_token_s - q.arrival_s, tpot,
                      q.returned_s - q.arrival_s, q.max_gap_s, static_cast<std::int64_t>(q.preemptions)});
  }
  return t;
}

/// Per-step series: time, batch, work, and KV memory (stored tokens, held and free slots).
inline Table step_table(const serve::SimResult& r, const std::string& label, bool full) {
  const auto rows = series_rows(r.steps.size(), full);
  Table t{series_title("steps, " + label, rows.size(), r.steps.size()),
          {"step", "start_s_sim", "duration_s_sim", "running", "decodes", "prefill_tokens", "waiting",
           "stored_tokens", "held_slots", "free_slots", "kv_utilization"},
          {}};
  for (std::size_t k : rows) {
    const serve::StepRecord& s = r.steps[k];
    t.rows.push_back({static_cast<std::int64_t>(k), s.start_s, s.duration_s, static_cast<std::int64_t>(s.running),
                      static_cast<std::int64_t>(s.decodes), static_cast<std::int64_t>(s.prefill_tokens),
                      static_cast<std::int64_t>(s.waiting), static_cast<std::int64_t>(s.stored_tokens),
                      static_cast<std::int64_t>(s.held_slots), static_cast<std::int64_t>(s.free_slots),
                      s.held_slots ? static_cast<double>(s.stored_tokens) / static_cast<double>(s.held_slots) : 0.0});
  }
  return t;
}

/// The plots `--plot` draws for serving runs, from the same rows the series tables show:
/// KV memory utilization (stored tokens / held slots) over simulated time, and the distribution
/// (empirical CDF) of request latency, one line per run.
inline void add_series_plots(Result& result, const std::vector<std::pair<std::string, const serve::SimResult*>>& runs,
                             bool full) {
  Plot util{"KV memory utilization over time (stored tokens / held slots)", "simulated time (s)",
            "utilization", false, false, {}, "bottom right"};
  Plot latency{"request latency, empirical CDF", "latency (simulated s)", "fraction of requests", false, false, {},
               "bottom right"};
  for (const auto& [label, sim] : runs) {
    PlotSeries u{label, {}, {}, "lines"};
    for (std::size_t k : series_rows(sim->steps.size(), full)) {
      const serve::StepRecord& s = sim->steps[k];
      u.x.push_back(s.start_s);
      u.y.push_back(s.held_slots ? static_cast<double>(s.stored_tokens) / static_cast<double>(s.held_slots) : 0.0);
    }
    util.series.push_back(std::move(u));
    std::vector<double> lat;
    for (std::size_t k : series_rows(sim->requests.size(), full))
      lat.push_back(sim->requests[k].returned_s - sim->requests[k].arrival_s);
    std::sort(lat.begin(), lat.end());
    PlotSeries c{label, {}, {}, "lines"};
    for (std::size_t i = 0; i < lat.size(); ++i) {
      c.x.push_back(lat[i]);
      c.y.push_back(static_cast<double>(i + 1) / static_cast<double>(lat.size()));
    }
    latency.series.push_back(std::move(c));
  }
  result.plots.push_back(std::move(util));
  result.plots.push_back(std::move(latency));
}

/// A progress bar on stderr for --long runs on a terminal (never when stderr is not a tty, so
/// never in tests); empty otherwise.
inline std::function<void(double)> progress_bar(bool long_run, const std::string& label) {
  if (!long_run || !isatty(STDERR_FILENO)) return {};
  return [label](double f) {
    const int filled = static_cast<int>(f * 30.0);
    std::fprintf(stderr, "\r%s [%s%s] %3d%%%s", label.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(30 - filled), ' ').c_str(), static_cast<int>(f * 100.0),
                 f >= 1.0 ? "\n" : "");
    std::fflush(stderr);
  };
}

/// A yes/no expectation: 1 when `holds`, expected 1 ± 0.
inline Expectation yes_no(const std::string& quantity, const std::string& source, bool holds,
                          const std::string& why, const std::string& document = "") {
  Expectation e{quantity, source, "", 1.0, 0.0, why, holds ? 1.0 : 0.0, std::nullopt, ""};
  e.document = document;
  return e;
}

/// An interval [lo, hi] as an expectation: expected the midpoint, tolerance the half-width.
inline Expectation in_interval(const std::string& quantity, const std::string& source, const std::string& unit,
                               double lo, double hi, double measured, const std::string& why) {
  return Expectation{quantity, source, unit, 0.5 * (lo + hi), 0.5 * (hi - lo), why, measured, std::nullopt, ""};
}

}  // namespace kvlab::checks
