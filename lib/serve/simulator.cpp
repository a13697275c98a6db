#include "serve/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace kvlab::serve {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::static_batching: return "static";
    case Policy::continuous: return "continuous";
    case Policy::chunked: return "chunked";
  }
  return "?";
}

std::vector<ChunkPlan> fcfs_chunker(const std::vector<PendingPrefill>& pending, std::uint64_t budget) {
  std::vector<ChunkPlan> plan;
  for (const PendingPrefill& p : pending) {
    if (budget == 0) break;
    const std::uint64_t c = std::min(p.target - p.done, budget);
    plan.push_back({p.request, p.done, c});
    budget -= c;
  }
  return plan;
}

namespace {

// The simulator's own view of a request (the allocator keeps its own books).
struct State {
  std::uint64_t cached = 0;        // positions whose K/V are stored
  std::uint64_t target = 0;        // positions the current prefill must reach
  std::uint64_t done = 0;          // prefill progress
  std::uint64_t reserved_len = 0;  // the length last passed to reserve()
  bool finished = false;
};

}  // namespace

SimResult simulate(const std::vector<Request>& trace, const SimConfig& cfg, const StepTimeModel& model,
                   const SimParts& parts) {
  if (cfg.max_batch < 1) throw InputError("max-batch: must be >= 1");
  for (const Request& r : trace)
    if (r.prompt_tokens + r.output_tokens > cfg.max_len)
      throw InputError(fmt::format("max-len: request {} needs {} positions, over max-len {}", r.id,
                                   r.prompt_tokens + r.output_tokens, cfg.max_len));
  const std::unique_ptr<KvMemory> mem = parts.make_memory(cfg.allocator, cfg.kv_tokens, cfg.max_len, cfg.block);
  const bool is_static = cfg.policy == Policy::static_batching;
  const std::uint64_t budget = cfg.policy == Policy::chunked ? cfg.prefill_chunk
                                                             : std::numeric_limits<std::uint64_t>::max();

  const std::size_t n = trace.size();
  SimResult out;
  out.requests.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    RequestRecord& rec = out.requests[i];
    rec.id = trace[i].id;
    rec.arrival_s = trace[i].arrival_s;
    rec.prompt_tokens = trace[i].prompt_tokens;
    rec.output_tokens = trace[i].output_tokens;
  }
  std::vector<State> st(n);
  std::deque<std::size_t> waiting;
  std::vector<std::size_t> running;  // admission order
  std::size_t next = 0, finished = 0, reported = 0;
  double t = 0.0;
  const auto final_len = [&](std::size_t i) { return trace[i].prompt_tokens + trace[i].output_tokens; };
  const auto rule_slots = [&](std::size_t i) {
    // what the allocator's rule says request i holds (serve/kv_memory.hpp)
    return cfg.allocator == KvAllocator::paged ? slots_for(KvAllocator::paged, st[i].reserved_len, cfg.max_len, cfg.block)
                                               : slots_for(cfg.allocator, final_len(i), cfg.max_len, cfg.block);
  };

  // vLLM's recompute preemption: free everything, requeue at the front, prefill prompt + emitted
  // tokens again on readmission. recomputed_tokens telescopes to Σ discarded progress + the last
  // re-prefill's extra positions, so that prefill_tokens = prompt + recomputed_tokens at the end.
  const auto preempt = [&](std::size_t v) {
    mem->release(trace[v].id);
    RequestRecord& rec = out.requests[v];
    const std::uint64_t new_target = trace[v].prompt_tokens + rec.tokens_emitted;
    rec.recomputed_tokens += st[v].done + new_target - st[v].target;
    st[v] = State{};
    st[v].target = new_target;
    waiting.push_front(v);
    ++rec.preemptions;
    ++out.preemptions;
  };

  while (finished < n) {
    if (out.steps.size() >= cfg.max_steps)
      throw std::logic_error(fmt::format("simulate: more than {} steps", cfg.max_steps));
    while (next < n && trace[next].arrival_s <= t) waiting.push_back(next++);
    if (running.empty() && waiting.empty()) {
      t = trace[next].arrival_s;
      continue;
    }
    StepRecord step;
    step.start_s = t;
    for (std::size_t i : running) step.running_before += st[i].finished ? 0 : 1;

    // ---- admission ----
    if (!is_static || running.empty()) {
      while (!waiting.empty() && running.size() < cfg.max_batch) {
        const std::size_t i = waiting.front();
        State& s = st[i];
        if (s.target == 0) s.target = trace[i].prompt_tokens;
        const std::uint64_t len = is_static ? final_len(i) : s.target;
        if (!mem->reserve(trace[i].id, len, final_len(i))) {
          const std::uint64_t want = slots_for(cfg.allocator, final_len(i), cfg.max_len, cfg.block);
          step.external_block = cfg.allocator != KvAllocator::paged && mem->free_slots() >= want;
          break;
        }
        s.reserved_len = len;
        waiting.pop_front();
        running.push_back(i);
        ++step.admitted;
        if (out.requests[i].admitted_s < 0) out.requests[i].admitted_s = t;
      }
    }

    // ---- decodes: grow paged reservations, preempting the newest request when the pool is dry ----
    StepWork work;
    std::vector<std::size_t> decoding;
    for (std::size_t k = 0; k < running.size(); ++k) {
      const std::size_t i = running[k];
      State& s = st[i];
      if (s.done < s.target) continue;  // still prefilling
      if (s.finished) {                 // static padding
        work.decode_ctx.push_back(s.cached);
        ++step.padding;
        continue;
      }
      if (s.cached + 1 > s.reserved_len) {
        bool ok = mem->reserve(trace[i].id, s.cached + 1, final_len(i));
        while (!ok && running.size() > k + 1) {  // preempt the newest other request
          const std::size_t v = running.back();
          running.pop_back();
          preempt(v);
          ok = mem->reserve(trace[i].id, s.cached + 1, final_len(i));
        }
        if (!ok) {  // i is the newest: preempt it
          preempt(i);
          running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
          break;  // everyone before k already has room; i was the last in admission order
        }
        s.reserved_len = s.cached + 1;
      }
      work.decode_ctx.push_back(s.cached);
      decoding.push_back(i);
    }

    // ---- prefill chunks ----
    std::vector<PendingPrefill> pending;
    for (std::size_t i : running)
      if (st[i].done < st[i].target) pending.push_back({i, st[i].done, st[i].target});
    const std::vector<ChunkPlan> plan = pending.empty() ? std::vector<ChunkPlan>{} : parts.chunker(pending, budget);
    std::vector<std::size_t> completing;
    for (const ChunkPlan& c : plan) {
      if (c.request >= n || c.start + c.tokens > st[c.request].target)
        throw std::logic_error("simulate: the chunker planned past a prompt's end");
      work.prefill.push_back({c.start, c.tokens});
      State& s = st[c.request];
      const bool was_pending = s.done < s.target;
      s.done = c.start + c.tokens;
      out.requests[c.request].prefill_tokens += c.tokens;
      if (c.tokens > 0) {
        ++out.requests[c.request].prefill_chunks;
        ++step.prefill_chunks;
      }
      step.prefill_tokens += c.tokens;
      if (was_pending && s.done == s.target) completing.push_back(c.request);
    }
    if (work.decode_ctx.empty() && step.prefill_tokens == 0 && completing.empty())
      throw std::logic_error("simulate: a step with no work");

    step.running = running.size();
    const double dt = model.cost(work).time_s;
    const double end = t + dt;
    step.duration_s = dt;
    step.decodes = work.decode_ctx.size();

    // ---- tokens ----
    const auto emit = [&](std::size_t i) {
      RequestRecord& rec = out.requests[i];
      ++rec.tokens_emitted;
      if (rec.first_token_s < 0) {
        rec.first_token_s = end;
      } else {
        const double gap = end - rec.last_token_s;
        out.gaps_s.push_back(gap);
        rec.max_gap_s = std::max(rec.max_gap_s, gap);
      }
      rec.last_token_s = end;
      if (rec.tokens_emitted >= rec.output_tokens) st[i].finished = true;
    };
    for (std::size_t i : decoding) {
      ++st[i].cached;
      emit(i);
    }
    for (std::size_t i : completing) {
      st[i].cached = st[i].target;
      emit(i);
    }

    // ---- departures ----
    const bool batch_done = std::all_of(running.begin(), running.end(), [&](std::size_t i) { return st[i].finished; });
    std::vector<std::size_t> still;
    for (std::size_t i : running) {
      const bool leaves = is_static ? batch_done : st[i].finished;
      if (!leaves) {
        still.push_back(i);
        continue;
      }
      mem->release(trace[i].id);
      out.requests[i].returned_s = end;
      ++finished;
    }
    running.swap(still);

    step.waiting = waiting.size();
    for (std::size_t i : running) {
      step.stored_tokens += st[i].cached;
      step.held_by_rule += rule_slots(i);
      const std::uint64_t h = mem->held_slots(trace[i].id);
      step.waste_max = std::max(step.waste_max, h > st[i].cached ? h - st[i].cached : 0);
    }
    step.held_slots = mem->held_slots();
    step.free_slots = mem->free_slots();
    step.capacity_slots = mem->capacity_slots();
    step.largest_free_run = mem->largest_free_run();
    out.steps.push_back(step);
    out.busy_s += dt;
    t = end;
    if (parts.progress && n > 0 && finished * 100 / n > reported) {
      reported = finished * 100 / n;
      parts.progress(static_cast<double>(finished) / static_cast<double>(n));
    }
  }
  out.makespan_s = t;
  out.final_free_slots = mem->free_slots();
  out.final_capacity_slots = mem->capacity_slots();
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(q * static_cast<double>(v.size()));
  const std::size_t k = static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size())));
  return v[k - 1];
}

static double q_or_0(const std::vector<double>& v, double q) { return v.empty() ? 0.0 : quantile(v, q); }

SimSummary summarize(const SimResult& r) {
  SimSummary s;
  std::vector<double> ttft, tpot, lat;
  for (const RequestRecord& q : r.requests) {
    s.tokens_emitted += q.tokens_emitted;
    s.prefill_tokens += q.prefill_tokens;
    ttft.push_back(q.first_token_s - q.arrival_s);
    lat.push_back(q.returned_s - q.arrival_s);
    if (q.output_tokens >= 2)
      tpot.push_back((q.last_token_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1));
  }
  if (r.makespan_s > 0) {
    s.throughput_tok_s = static_cast<double>(s.tokens_emitted) / r.makespan_s;
    s.requests_per_s = static_cast<double>(r.requests.size()) / r.makespan_s;
    s.busy_fraction = r.busy_s / r.makespan_s;
  }
  s.ttft_mean_s = mean(ttft), s.ttft_p50_s = q_or_0(ttft, 0.5), s.ttft_p99_s = q_or_0(ttft, 0.99);
  s.tpot_mean_s = mean(tpot), s.tpot_p50_s = q_or_0(tpot, 0.5), s.tpot_p99_s = q_or_0(tpot, 0.99);
  s.itl_mean_s = mean(r.gaps_s), s.itl_p50_s = q_or_0(r.gaps_s, 0.5), s.itl_p99_s = q_or_0(r.gaps_s, 0.99);
  s.itl_max_s = r.gaps_s.empty() ? 0.0 : *std::max_element(r.gaps_s.begin(), r.gaps_s.end());
  s.latency_mean_s = mean(lat), s.latency_p50_s = q_or_0(lat, 0.5), s.latency_p99_s = q_or_0(lat, 0.99);
  double stored = 0, held = 0, batch = 0, time = 0;
  for (const StepRecord& st : r.steps) {
    stored += static_cast<double>(st.stored_tokens) * st.duration_s;
    held += static_cast<double>(st.held_slots) * st.duration_s;
    batch += static_cast<double>(st.decodes - st.padding + st.prefill_chunks) * st.duration_s;
    time += st.duration_s;
    s.max_batch = std::max(s.max_batch, st.decodes - st.padding + st.prefill_chunks);
  }
  s.utilization = held > 0 ? stored / held : 0.0;
  s.mean_batch = time > 0 ? batch / time : 0.0;
  return s;
}

}  // namespace kvlab::serve
