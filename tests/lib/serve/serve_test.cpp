// The serving simulator (lib/serve): the trace file regenerates from its seed, the step-time model
// agrees with the roofline, block accounting is exact. Also a regression: an empty chunk contributes
// nothing. The serving checks' own tests: tests/checks/.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/data_dir.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "serve/simulator.hpp"
#include "test_util.hpp"

namespace serve_serve_test {

namespace {

using namespace kvlab;
using namespace kvlab::serve;
using kvlab::test::input_error;

StepTimeModel engine() { return StepTimeModel(load_model("llama-2-7b"), load_gpu("a100-80gb"), 7e9, 2.0); }

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

}  // namespace serve_serve_test
