// The serving simulator (lib/serve) and its checks: the trace file regenerates from its seed, the
// step-time model agrees with the roofline, block accounting is exact, and each check fails with a
// deliberately broken part (a static scheduler that secretly refills, a chunker
// that drops a chunk). Also a regression: an empty chunk contributes nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chunked_prefill.hpp"
#include "io/data_dir.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "serve/simulator.hpp"
#include "test_util.hpp"

namespace {

using namespace kvlab;
using namespace kvlab::serve;
using kvlab::test::input_error;

StepTimeModel engine() { return StepTimeModel(load_model("llama-2-7b"), load_gpu("a100-80gb"), 7e9, 2.0); }

// Whether the expectation whose quantity contains `part` exists and fails.
bool row_fails(const Result& r, const std::string& part) {
  for (const auto& e : r.expectations)
    if (e.quantity.find(part) != std::string::npos) return !e.holds();
  FAIL("no expectation with '" << part << "'");
  return false;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("serve: the trace file in data/traces regenerates byte for byte from its seed") {
  TraceSpec s;
  s.requests = 1000;
  s.rate_per_s = 8.0;
  s.seed = 1234;
  const std::string path = data_dir() + "/traces/sharegpt_like_1000_rate8_seed1234.csv";
  REQUIRE(std::filesystem::exists(path));
  const std::string file = read_all(path);
  CHECK(trace_csv(generate_trace(s)) == file);
  const auto parsed = parse_trace_csv(file, path);
  CHECK(trace_csv(parsed) == file);
  const TraceStats st = trace_stats(parsed);
  CHECK(st.requests == 1000);
  CHECK(st.len_max <= s.max_len);
  CHECK(st.prompt_max <= s.max_prompt);
  // ShareGPT-like means (161.31, 337.99 before truncation): within 15% on 1000 draws.
  CHECK(std::abs(st.prompt_mean / 161.31 - 1) < 0.15);
  CHECK(std::abs(st.output_mean / 337.99 - 1) < 0.15);
  // a different seed gives a different trace
  s.seed = 1235;
  CHECK(trace_csv(generate_trace(s)) != file);
}

TEST_CASE("serve: trace generator and parser reject bad input, naming the field") {
  TraceSpec s;
  s.requests = 0;
  CHECK(input_error([&] { generate_trace(s); }).find("requests") != std::string::npos);
  s = TraceSpec{};
  s.rate_per_s = std::nan("");
  CHECK(input_error([&] { generate_trace(s); }).find("rate") != std::string::npos);
  s = TraceSpec{};
  s.max_prompt = s.max_len;
  CHECK(input_error([&] { generate_trace(s); }).find("max-len") != std::string::npos);
  CHECK(input_error([] { parse_trace_csv("nope\n", "t.csv"); }).find("t.csv") != std::string::npos);
  CHECK(input_error([] { parse_trace_csv("id,arrival_s,prompt_tokens,output_tokens\n0,1.0,0,5\n", "t.csv"); })
            .find("line 2") != std::string::npos);
  CHECK(input_error([] {
          parse_trace_csv("id,arrival_s,prompt_tokens,output_tokens\n0,2.0,1,5\n1,1.0,1,5\n", "t.csv");
        }).find("line 3") != std::string::npos);
}

TEST_CASE("serve: a decode-only step costs what the roofline's decode step costs") {
  const ModelSpec m = load_model("llama-2-7b");
  const GpuSpec g = load_gpu("a100-80gb");
  const StepTimeModel e(m, g, 7e9, 2.0);
  for (std::uint64_t b : {1u, 8u, 64u}) {
    StepWork w;
    w.decode_ctx.assign(b, 1024);
    DecodeQuery q;
    q.n_params = 7e9;
    q.kv.batch = b;
    q.kv.ctx = 1024;
    const DecodeStep d = decode_step(m, g, q);
    CHECK(e.cost(w).time_s == doctest::Approx(d.time_s).epsilon(1e-12));
    CHECK(e.cost(w).flops == doctest::Approx(d.flops).epsilon(1e-12));
  }
}

TEST_CASE("serve: chunks compute the prompt's FLOPs exactly; an empty chunk contributes nothing") {
  const StepTimeModel e = engine();
  StepWork whole;
  whole.prefill.push_back({0, 4096});
  double flops = 0;
  for (std::uint64_t s = 0; s < 4096; s += 1024) {
    StepWork c;
    c.prefill.push_back({s, 1024});
    flops += e.cost(c).flops;
  }
  CHECK(flops == doctest::Approx(e.cost(whole).flops).epsilon(1e-12));
  // regression: a batch where one request's chunk is empty
  StepWork mixed;
  mixed.prefill.push_back({512, 256});
  mixed.decode_ctx = {100, 200};
  StepWork with_empty = mixed;
  with_empty.prefill.push_back({3000, 0});
  with_empty.prefill.insert(with_empty.prefill.begin(), PrefillChunk{0, 0});
  CHECK(e.cost(with_empty).time_s == e.cost(mixed).time_s);
  CHECK(e.cost(with_empty).bytes == e.cost(mixed).bytes);
  CHECK(e.cost(with_empty).flops == e.cost(mixed).flops);
  StepWork nothing;
  nothing.prefill.push_back({7, 0});
  CHECK(e.cost(nothing).time_s == 0.0);
  // a 4096-token prefill of a 7B on an A100 is compute-bound and over 100 ms (000 §3.2)
  CHECK(e.cost(whole).time_compute_s > e.cost(whole).time_memory_s);
  CHECK(e.cost(whole).time_s > 0.1);
}

TEST_CASE("serve: block accounting: paged ⌈len/b⌉ blocks, contiguous first fit with merging") {
  auto paged = make_kv_memory(KvAllocator::paged, 4096, 2048, 16);
  CHECK(paged->capacity_slots() == 4096);
  CHECK(paged->reserve(1, 17, 100));
  CHECK(paged->held_slots(1) == 32);
  CHECK(paged->reserve(1, 32, 100));
  CHECK(paged->held_slots(1) == 32);
  CHECK(paged->reserve(1, 33, 100));
  CHECK(paged->held_slots(1) == 48);
  CHECK_FALSE(paged->reserve(2, 4096, 4096));  // 256 blocks wanted, 253 free
  CHECK(paged->held_slots(2) == 0);
  CHECK(paged->held_slots() + paged->free_slots() == 4096);
  paged->release(1);
  CHECK(paged->free_slots() == 4096);

  auto exact = make_kv_memory(KvAllocator::exact, 4096, 2048, 16);
  CHECK(exact->reserve(1, 10, 1000));
  CHECK(exact->reserve(2, 10, 1000));
  CHECK(exact->reserve(3, 10, 1000));
  exact->release(2);  // a hole of 1000 between 1 and 3; 1096 free at the end
  CHECK(exact->free_slots() == 2096);
  CHECK(exact->largest_free_run() == 1096);
  CHECK_FALSE(exact->reserve(4, 10, 1500));  // 2096 free, but no hole of 1500: external fragmentation
  exact->release(3);                         // merges with both neighbours
  CHECK(exact->largest_free_run() == 3096);
  CHECK(exact->reserve(4, 10, 1500));
  auto maxlen = make_kv_memory(KvAllocator::max_length, 4096, 2048, 16);
  CHECK(maxlen->reserve(1, 5, 5));
  CHECK(maxlen->held_slots() == 2048);
  CHECK(input_error([] { make_kv_memory(KvAllocator::paged, 2000, 2048, 16); }).find("kv-tokens") != std::string::npos);
  CHECK(input_error([] { make_kv_memory(KvAllocator::paged, 4096, 2048, 0); }).find("block") != std::string::npos);
  CHECK(requests_that_fit(KvAllocator::paged, {17, 16, 1}, 48, 2048, 16) == 2);
  CHECK(requests_that_fit(KvAllocator::exact, {17, 16, 1}, 48, 2048, 16) == 3);
  CHECK(requests_that_fit(KvAllocator::max_length, {17, 16, 1}, 4096, 2048, 16) == 2);
}

TEST_CASE("serve: a chunker that plans empty chunks changes nothing") {
  TraceSpec s;
  s.requests = 60;
  s.rate_per_s = 20;
  const auto trace = generate_trace(s);
  SimConfig cfg;
  cfg.policy = Policy::chunked;
  cfg.prefill_chunk = 256;
  cfg.kv_tokens = 65536;
  SimParts with_empty;
  with_empty.chunker = [](const std::vector<PendingPrefill>& p, std::uint64_t budget) {
    auto plan = fcfs_chunker(p, budget);
    std::vector<ChunkPlan> out;
    for (const PendingPrefill& q : p) out.push_back({q.request, q.done, 0});  // every pending: empty
    out.insert(out.end(), plan.begin(), plan.end());
    return out;
  };
  const SimResult a = simulate(trace, cfg, engine());
  const SimResult b = simulate(trace, cfg, engine(), with_empty);
  REQUIRE(a.requests.size() == b.requests.size());
  CHECK(a.makespan_s == b.makespan_s);
  CHECK(a.steps.size() == b.steps.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].first_token_s == b.requests[i].first_token_s);
    CHECK(a.requests[i].last_token_s == b.requests[i].last_token_s);
    CHECK(a.requests[i].prefill_chunks == b.requests[i].prefill_chunks);
    CHECK(a.requests[i].tokens_emitted == a.requests[i].output_tokens);
  }
  // and chunked gives the same tokens as unchunked
  cfg.policy = Policy::continuous;
  const SimResult c = simulate(trace, cfg, engine());
  for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(c.requests[i].tokens_emitted == a.requests[i].tokens_emitted);
}

TEST_CASE("serve: simulator accounting under memory pressure (preemption) and static semantics") {
  TraceSpec s;
  s.requests = 120;
  s.rate_per_s = 0;
  const auto trace = generate_trace(s);
  SimConfig cfg;
  cfg.kv_tokens = 8192;
  cfg.max_batch = 1000;
  const SimResult r = simulate(trace, cfg, engine());
  CHECK(r.preemptions > 0);
  for (const auto& q : r.requests) {
    CHECK(q.tokens_emitted == q.output_tokens);
    CHECK(q.prefill_tokens == q.prompt_tokens + q.recomputed_tokens);
    CHECK(q.returned_s == q.last_token_s);
  }
  CHECK(r.final_free_slots == r.final_capacity_slots);
  cfg.policy = Policy::static_batching;
  cfg.max_batch = 8;
  const SimResult st = simulate(trace, cfg, engine());
  for (const auto& step : st.steps) CHECK_FALSE((step.admitted > 0 && step.running_before > 0));
  const SimSummary sum = summarize(st);
  CHECK(sum.busy_fraction <= 1.0);
  CHECK(sum.tokens_emitted == trace_stats(trace).output_total);
  CHECK(quantile({3, 1, 2}, 0.5) == 2);
  CHECK(quantile({1, 2, 3, 4}, 0.99) == 4);
  CHECK(quantile({1, 2, 3, 4}, 0.25) == 1);
}

// ---- the checks bite ----


TEST_CASE("chunked-prefill: passes, and fails with a chunker that drops a chunk") {
  using namespace kvlab::checks;
  const RunContext ctx;
  ChunkedPrefillOptions o;
  const Result ok = run_chunked_prefill(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("stall_s_sim_whole") >= 0.1);
  CHECK(ok.metric_value("stall_s_sim_chunked") < ok.metric_value("stall_s_sim_whole"));

  ChunkedPrefillParts drops;  // skips every prompt's second chunk: progress jumps, nothing computed
  drops.chunker = [](const std::vector<PendingPrefill>& p, std::uint64_t budget) {
    auto plan = fcfs_chunker(p, budget);
    for (auto& c : plan)
      if (c.start == budget) c.start += c.tokens, c.tokens = 0;
    return plan;
  };
  const Result dropped = run_chunked_prefill(o, ctx, drops);
  CHECK_FALSE(dropped.passed());
  CHECK(row_fails(dropped, "chunked: prompt tokens computed"));

  ChunkedPrefillParts empty_chunks;  // plans an empty chunk for every pending request first
  empty_chunks.chunker = [](const std::vector<PendingPrefill>& p, std::uint64_t budget) {
    std::vector<ChunkPlan> out;
    for (const auto& q : p) out.push_back({q.request, q.done, 0});
    auto plan = fcfs_chunker(p, budget);
    out.insert(out.end(), plan.begin(), plan.end());
    return out;
  };
  const Result same = run_chunked_prefill(o, ctx, empty_chunks);
  CHECK(same.passed());
  CHECK(same.metric_value("stall_s_sim_chunked") == ok.metric_value("stall_s_sim_chunked"));

  o.chunk = 0;
  CHECK(input_error([&] { run_chunked_prefill(o, ctx); }).find("--chunk") != std::string::npos);
  o = ChunkedPrefillOptions{};
  o.decoder_output = 2;  // decoders done long before the prompt's prefill ends
  CHECK(input_error([&] { run_chunked_prefill(o, ctx); }).find("--decoder-output") != std::string::npos);
}

TEST_CASE("chunked-prefill: the claim states this run's prompt and chunks; the course's figure only at its options") {
  using namespace kvlab::checks;
  const RunContext ctx;
  const Result course = run_chunked_prefill({}, ctx);
  CHECK(course.claim.find("4 chunks × 1024") != std::string::npos);
  CHECK(course.claim.find("100+ ms") != std::string::npos);

  ChunkedPrefillOptions o;
  o.chunk = 512;
  const Result eight = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(eight.claim.find("4096-token prompt") != std::string::npos, eight.claim);
  CHECK_MESSAGE(eight.claim.find("8 chunks of 512") != std::string::npos, eight.claim);
  CHECK_MESSAGE(eight.claim.find("split into 4 chunks × 1024") == std::string::npos, eight.claim);
  for (const auto& e : eight.expectations) CHECK_FALSE(e.stated.has_value());

  o = ChunkedPrefillOptions{};
  o.long_prompt = 3000;
  o.chunk = 1024;
  const Result three = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(three.claim.find("3000-token prompt") != std::string::npos, three.claim);
  CHECK_MESSAGE(three.claim.find("3 chunks of 1024 (the last 952)") != std::string::npos, three.claim);

  o.chunk = 4096;
  const Result one = run_chunked_prefill(o, ctx);
  CHECK_MESSAGE(one.claim.find("is one chunk") != std::string::npos, one.claim);
  CHECK_MESSAGE(one.claim.find("stall shrinks and") == std::string::npos, one.claim);
}

TEST_CASE("chunked-prefill: its first plot shows the decode stall that chunking removes") {
  using namespace kvlab::checks;
  const Result r = run_chunked_prefill({}, RunContext{});
  REQUIRE_FALSE(r.plots.empty());
  const Plot& stall = r.plots.front();
  CHECK(stall.title.find("stall") != std::string::npos);
  REQUIRE(stall.series.size() >= 2);
  const auto peak = [](const PlotSeries& s) { return *std::max_element(s.y.begin(), s.y.end()); };
  // The plotted step times are the simulated ones: the tallest is each run's longest stall.
  CHECK(peak(stall.series[0]) == doctest::Approx(r.metric_value("stall_s_sim_whole") * 1e3));
  CHECK(peak(stall.series[1]) == doctest::Approx(r.metric_value("stall_s_sim_chunked") * 1e3));
  CHECK(peak(stall.series[0]) > 2.0 * peak(stall.series[1]));
  // Time runs from the long prompt's arrival (x = 0) or just before to after its prefill.
  CHECK(*std::min_element(stall.series[0].x.begin(), stall.series[0].x.end()) <= 0.0);
  CHECK(*std::max_element(stall.series[0].x.begin(), stall.series[0].x.end()) > peak(stall.series[0]));
}
