#include "serve/trace.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace kvlab::serve {
namespace {

// exp(μ + σ·Z) rounded to the nearest integer and clamped to [1, hi]; μ = ln(mean) − σ²/2.
std::uint64_t lognormal_length(Rng& rng, double mean, double sigma, std::uint64_t hi) {
  const double mu = std::log(mean) - 0.5 * sigma * sigma;
  const double x = std::exp(mu + sigma * rng.normal());
  const double r = std::nearbyint(std::min(x, static_cast<double>(hi)));
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::max(r, 1.0)), 1, hi);
}

}  // namespace

std::vector<Request> generate_trace(const TraceSpec& s) {
  require_range("requests", static_cast<long long>(std::min<std::uint64_t>(s.requests, 1u << 30)), 1,
                1'000'000);
  require_finite_range("rate", s.rate_per_s, 0.0, 1e6);
  require_finite_range("prompt-mean", s.prompt_mean, 1.0, 1e6);
  require_finite_range("output-mean", s.output_mean, 1.0, 1e6);
  require_finite_range("prompt-sigma", s.prompt_sigma, 0.0, 4.0);
  require_finite_range("output-sigma", s.output_sigma, 0.0, 4.0);
  if (s.max_len > (1u << 24) || s.max_prompt < 1 || s.max_prompt >= s.max_len)
    throw InputError(fmt::format("max-len: must satisfy 1 <= max-prompt < max-len <= 2^24 (got "
                                 "max-prompt {}, max-len {})", s.max_prompt, s.max_len));
  Rng rng(s.seed);
  std::vector<Request> out;
  out.reserve(s.requests);
  double t = 0.0;
  for (std::uint64_t i = 0; i < s.requests; ++i) {
    const double gap = s.rate_per_s > 0.0 ? -std::log1p(-rng.uniform()) / s.rate_per_s : 0.0;
    t += gap;
    Request r;
    r.id = i;
    r.arrival_s = t;
    r.prompt_tokens = lognormal_length(rng, s.prompt_mean, s.prompt_sigma, s.max_prompt);
    r.output_tokens = lognormal_length(rng, s.output_mean, s.output_sigma, s.max_len - r.prompt_tokens);
    out.push_back(r);
  }
  return out;
}

std::string trace_csv(const std::vector<Request>& trace) {
  std::string s = "id,arrival_s,prompt_tokens,output_tokens\n";
  for (const auto& r : trace)
    s += fmt::format("{},{:.9f},{},{}\n", r.id, r.arrival_s, r.prompt_tokens, r.output_tokens);
  return s;
}

std::vector<Request> parse_trace_csv(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  std::vector<Request> out;
  std::uint64_t n = 0;
  if (!std::getline(in, line) || line != "id,arrival_s,prompt_tokens,output_tokens")
    throw InputError(origin + ": line 1: want the header id,arrival_s,prompt_tokens,output_tokens");
  while (std::getline(in, line)) {
    ++n;
    unsigned long long id = 0, p = 0, o = 0;
    double a = 0.0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "%llu,%lf,%llu,%llu%c", &id, &a, &p, &o, &tail) != 4 ||
        id != out.size() || !std::isfinite(a) || a < 0.0 || p < 1 || o < 1 || p > (1u << 24) ||
        o > (1u << 24) || (!out.empty() && a < out.back().arrival_s))
      throw InputError(fmt::format("{}: line {}: want id (0, 1, ...), arrival_s (non-decreasing, "
                                   ">= 0), prompt_tokens and output_tokens in [1, 2^24]",
                                   origin, n + 1));
    out.push_back(Request{id, a, p, o});
  }
  return out;
}

TraceStats trace_stats(const std::vector<Request>& trace) {
  TraceStats st;
  st.requests = trace.size();
  for (const auto& r : trace) {
    st.duration_s = std::max(st.duration_s, r.arrival_s);
    st.prompt_total += r.prompt_tokens;
    st.output_total += r.output_tokens;
    st.prompt_max = std::max(st.prompt_max, r.prompt_tokens);
    st.output_max = std::max(st.output_max, r.output_tokens);
    st.len_max = std::max(st.len_max, r.prompt_tokens + r.output_tokens);
  }
  if (!trace.empty()) {
    st.prompt_mean = static_cast<double>(st.prompt_total) / static_cast<double>(trace.size());
    st.output_mean = static_cast<double>(st.output_total) / static_cast<double>(trace.size());
  }
  return st;
}

}  // namespace kvlab::serve
