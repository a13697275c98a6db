// Request traces for the serving simulator: who arrives when, with how long a prompt, wanting how
// many output tokens.
//
// The generator (generate_trace) is seeded and documented so that a trace can be rebuilt from its
// parameters alone (data/traces/README.md):
//   - arrivals: a Poisson process of rate λ requests/s, i.e. independent exponential gaps
//     −ln(1 − U)/λ, U uniform in [0, 1) from kvlab::Rng; the first request arrives after one gap;
//   - prompt and output lengths: independent log-normals, exp(μ + σ·Z) rounded to the nearest
//     integer, with μ = ln(mean) − σ²/2 so that the untruncated mean is the stated mean. The
//     defaults are ShareGPT-like: mean prompt 161 and mean output 338 tokens, the ShareGPT means
//     the vLLM paper reports (Kwon et al., SOSP'23, arXiv 2309.06180, §6.1 and Fig. 11: 161.31
//     input, 337.99 output tokens), σ = 1 for both (a heavy right tail, as in that figure);
//   - truncation: prompt clamped to [1, max_prompt], output to [1, max_len − prompt], so that no
//     request exceeds max_len = prompt + output tokens (vLLM's ShareGPT runs cap sequences at
//     2048 tokens for OPT). Clamping moves the means a little; trace_stats reports the real ones.
// Draw order per request: gap, prompt, output (the normal draws use kvlab's own Box–Muller), so a
// seed replays on every platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlab::serve {

/// One request of a trace.
struct Request {
  std::uint64_t id = 0;             ///< 0, 1, 2, ... in arrival order
  double arrival_s = 0.0;           ///< arrival time, seconds from the trace's start
  std::uint64_t prompt_tokens = 0;  ///< P >= 1
  std::uint64_t output_tokens = 0;  ///< O >= 1, tokens the request generates (the first comes from prefill)
};

/// The generator's parameters (defaults: ShareGPT-like lengths, see the top of this file).
struct TraceSpec {
  std::uint64_t requests = 200;     ///< number of requests, >= 1
  double rate_per_s = 8.0;          ///< Poisson arrival rate λ, requests/s, > 0; 0 means all at t = 0
  double prompt_mean = 161.31;      ///< mean prompt length before truncation, tokens
  double prompt_sigma = 1.0;        ///< σ of ln(prompt length)
  double output_mean = 337.99;      ///< mean output length before truncation, tokens
  double output_sigma = 1.0;        ///< σ of ln(output length)
  std::uint64_t max_prompt = 1024;  ///< prompt clamp, tokens
  std::uint64_t max_len = 2048;     ///< prompt + output clamp, tokens (> max_prompt)
  std::uint64_t seed = 1234;
};

/// Draws a trace (rules at the top of this file). Throws InputError naming the field ("requests",
/// "rate", "prompt-mean", ...) for a value outside its range: requests in [1, 1e6], rate in
/// [0, 1e6], means in [1, 1e6], sigmas in [0, 4], 1 <= max_prompt < max_len <= 2^24.
std::vector<Request> generate_trace(const TraceSpec& spec);

/// The trace as CSV: a header "id,arrival_s,prompt_tokens,output_tokens" and one line per
/// request, arrival with 9 decimals (nanoseconds). Byte-identical for the same trace.
std::string trace_csv(const std::vector<Request>& trace);

/// Parses trace_csv's format back; arrivals must be non-decreasing, lengths >= 1, ids 0, 1, ...
/// Throws InputError naming `origin` and the line for anything else.
std::vector<Request> parse_trace_csv(const std::string& text, const std::string& origin);

/// Summary of a trace: counts and means of what was actually drawn (after truncation).
struct TraceStats {
  std::uint64_t requests = 0;
  double duration_s = 0.0;           ///< last arrival
  double prompt_mean = 0.0, output_mean = 0.0;
  std::uint64_t prompt_max = 0, output_max = 0, len_max = 0;  ///< len = prompt + output
  std::uint64_t prompt_total = 0, output_total = 0;
};
/// Counts, means and maxima of `trace` (zeros for an empty trace). Throws nothing.
TraceStats trace_stats(const std::vector<Request>& trace);

}  // namespace kvlab::serve
