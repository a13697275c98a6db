// prefix-cache — 000 §3.4; 003 part 6: requests that share a prompt prefix share its KV blocks.
//
// Claim (000 §3.4): when requests share a prompt prefix (a system prompt, few-shot examples), the
// KV cache of that prefix can be reused: vLLM indexes pages by hash(prefix) and a hit skips the
// prefill of those tokens; the key is page-level sharing plus copy-on-write, a branching request
// writing only its own pages. 003 part 6: PagedAttention supports copy-on-write sharing of the
// same prompt (system prompt).
//
// kvlab serves, through one paged pool (lib/cache/paged.hpp) and the mini-GPT, --requests requests
// of a shared system prompt (40 tokens = 2.5 blocks of 16) plus 8 tokens of their own, then decodes
// 4 tokens each; then one request with another system prompt (a miss) and one that starts with the
// system prompt's first block and continues with the other prompt's second block (it must reuse
// one block only: the block hash is chained with its parent's). Each request looks its prompt up,
// attaches the cached blocks (a request diverging mid-block shares that block too, and its first
// write there copies it), prefills only the rest and registers its full blocks. The same requests
// are served again with prefix caching off.
// Expected (integer bookkeeping, exact): tokens reused = what an ideal cache can reuse, computed
// from the token lists alone (cache/prefix.hpp: longest common prefix with the earlier requests'
// full blocks, at most prompt − 1); COW copies = requests whose reuse ends mid-block; blocks in use
// = distinct full-block prefixes + partly filled last blocks with caching, Σ ⌈len/16⌉ without; the
// miss shares no block; audit clean
// and every block free at the end. Logits: equal to the run without caching within the float
// rounding bound (support/model_setup.hpp).
//
//   kvlab prefix-cache [--requests 8] [--system-tokens 40] [--user-tokens 8] [--decode 4] [--block-size 16]
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "checks/prefix_cache.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "model/gpt.hpp"
#include "support/model_setup.hpp"

namespace kvlab::checks::prefix_cache {
namespace {

// Largest options: 18 requests of up to 384 tokens, served twice, take about 3 s here.
constexpr int kMaxRequests = 16, kMaxSystem = 256, kMaxUser = 64, kMaxDecode = 64, kMaxBlockSize = 256;

struct Request {
  std::string name;
  std::vector<int> tokens;  // prompt, then the decoded tokens (teacher-forced)
  int prompt = 0;
};

template <class T>
struct Served {
  std::vector<Mat<T>> logits;  // per request [len, vocab]; rows before `reused` not computed
  PrefixServing numbers;
};

template <class T>
Served<T> serve(const MiniGPT<T>& model, const std::vector<Request>& reqs, int bs, int num_blocks, bool caching,
                const PagedFaults& faults) {
  const auto& cfg = model.config();
  PagedKVPool<T> pool(num_blocks, bs, cfg.n_layer, cfg.kv_width(), {}, faults);
  BlockManager& m = pool.manager();
  Served<T> served;
  PrefixServing& s = served.numbers;
  std::vector<std::unique_ptr<PagedKVCache<T>>> views;
  for (const Request& q : reqs) {  // admit one after another: each sees the blocks of those before
    const std::span<const int> ids(q.tokens);
    const PrefixMatch match = caching ? m.match_prefix(ids.first(static_cast<std::size_t>(q.prompt))) : PrefixMatch{};
    views.push_back(pool.view(m.attach(match)));
    Mat<T> out = Mat<T>::Zero(static_cast<Eigen::Index>(q.tokens.size()), cfg.vocab_size);
    const int start = match.tokens;
    out.middleRows(start, q.prompt - start) = model.forward(ids.subspan(static_cast<std::size_t>(start),
                                                                        static_cast<std::size_t>(q.prompt - start)),
                                                            start, *views.back());
    s.computed_tokens += q.prompt - start;
    if (caching) m.cache_full_blocks(views.back()->sequence(), ids.first(static_cast<std::size_t>(q.prompt)));
    s.reused.push_back(start);
    served.logits.push_back(std::move(out));
  }
  const int decode = static_cast<int>(reqs.front().tokens.size()) - reqs.front().prompt;
  for (int g = 0; g < decode; ++g)  // decode in lockstep, one token per request per step
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const int pos = reqs[i].prompt + g;
      const std::span<const int> ids(reqs[i].tokens);
      served.logits[i].row(pos) = model.forward(ids.subspan(static_cast<std::size_t>(pos), 1), pos, *views[i]);
      ++s.computed_tokens;
      if (caching) m.cache_full_blocks(views[i]->sequence(), ids.first(static_cast<std::size_t>(pos) + 1));
    }
  for (const auto& v : views) {
    s.tables.push_back(m.block_table(v->sequence()));
    int shared = 0;
    for (int b : s.tables.back()) shared += m.ref_count(b) > 1;
    s.shared_blocks.push_back(shared);
  }
  s.blocks_in_use = m.blocks_in_use();
  const PoolAudit running = m.audit();
  s.audit_problems.insert(s.audit_problems.end(), running.problems.begin(), running.problems.end());
  for (const auto& v : views) m.free(v->sequence());
  const PoolAudit end = m.audit();
  s.audit_problems.insert(s.audit_problems.end(), end.problems.begin(), end.problems.end());
  s.blocks_free_at_end = end.blocks_free + end.blocks_evictable;
  s.stats = m.stats();
  return served;
}

std::string table_text(const std::vector<int>& t) {
  std::string s;
  for (std::size_t i = 0; i < std::min<std::size_t>(6, t.size()); ++i) s += (i ? ", " : "") + std::to_string(t[i]);
  return "[" + s + (t.size() > 6 ? ", ...]" : "]");
}

template <class T>
MiniGPT<T> serving_model(const PrefixCacheOptions& o, const RunContext& ctx) {
  const int L = o.system_tokens + o.user_tokens + o.decode;
  ModelConfig base;
  base.n_kv_head = 2;
  base.block_size = std::max(64, L);
  return check_model<T>(base, ctx, "prefix-cache", {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"}, {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (the pool keeps every position)"}, {"cla_share", [](const ModelConfig& c) { return c.cla_share == 1; }, "1 (one cache layer per layer)"},
       {"block_size", [L](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= L; },
        fmt::format(">= {} with learned positions (prompt + decode tokens)", L)}});
}

// The requests: a shared system prompt S plus each request's own text; then a miss (another
// system prompt O) and a request that starts like S but continues like O after one block.
std::vector<Request> make_requests(const PrefixCacheOptions& o, const RunContext& ctx, int V) {
  const int bs = o.block_size, P = o.system_tokens + o.user_tokens, L = P + o.decode;
  const std::vector<int> sys = random_tokens(ctx.seed + 1, o.system_tokens, V);
  std::vector<Request> reqs;
  for (int i = 0; i < o.requests; ++i) {
    Request q{fmt::format("request {} (system prompt + own {})", i, o.user_tokens), sys, P};
    const auto own = random_tokens(ctx.seed + 10 + static_cast<std::uint64_t>(i), o.user_tokens + o.decode, V);
    q.tokens.insert(q.tokens.end(), own.begin(), own.end());
    reqs.push_back(std::move(q));
  }
  std::vector<int> other = random_tokens(ctx.seed + 3, L, V);
  other[0] = (sys[0] + 1) % V;  // differs from S at once: a miss
  const int k = std::min(bs, o.system_tokens);
  if (k < P && k < o.system_tokens && other[static_cast<std::size_t>(k)] == sys[static_cast<std::size_t>(k)])
    other[static_cast<std::size_t>(k)] = (other[static_cast<std::size_t>(k)] + 1) % V;
  reqs.push_back({"another system prompt (a miss)", other, P});
  std::vector<int> mixed(sys.begin(), sys.begin() + k);
  mixed.insert(mixed.end(), other.begin() + k, other.end());
  auto tail = random_tokens(ctx.seed + 4, o.decode, V);  // its own decode tokens
  std::copy(tail.begin(), tail.end(), mixed.begin() + P);
  reqs.push_back({fmt::format("S's first {} tokens, then the other prompt", k), mixed, P});
  return reqs;
}

// What an ideal prefix cache reuses, from the token lists alone (the independent reference), and
// the blocks in use after decoding with caching: one per distinct full-block prefix (a full block
// is stored once however many requests hold it: attached on a hit, or deduplicated after it was
// computed), plus each request's partly filled last block; without: Σ ⌈len/B⌉.
void reference(const std::vector<Request>& reqs, int bs, PrefixCacheMeasured& m) {
  const int L = static_cast<int>(reqs.front().tokens.size());
  std::vector<std::vector<int>> earlier;
  for (const Request& q : reqs) {
    const std::span<const int> prompt(q.tokens.data(), static_cast<std::size_t>(q.prompt));
    const int reuse = reference_prefix_reuse(prompt, earlier, bs);
    m.want_reuse.push_back(reuse);
    m.want_saved += reuse;
    m.want_hits += reuse > 0;
    m.want_cow += reuse % bs != 0;
    m.want_blocks_off += (L + bs - 1) / bs;
    earlier.emplace_back(prompt.begin(), prompt.end());
  }
  std::set<std::vector<int>> distinct;
  for (const Request& q : reqs)
    for (int end = bs; end <= L; end += bs) distinct.emplace(q.tokens.begin(), q.tokens.begin() + end);
  m.want_blocks_on = static_cast<int>(distinct.size()) + (L % bs != 0 ? static_cast<int>(reqs.size()) : 0);
}

template <class T>
PrefixCacheMeasured measure_impl(const PrefixCacheOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int bs = o.block_size, P = o.system_tokens + o.user_tokens, L = P + o.decode;
  const MiniGPT<T> model = serving_model<T>(o, ctx);
  PrefixCacheMeasured m{.options = o, .context = ctx, .config = model.config()};
  const std::vector<Request> reqs = make_requests(o, ctx, m.config.vocab_size);
  for (const Request& q : reqs) m.names.push_back(q.name);
  m.miss = static_cast<std::size_t>(o.requests);
  m.prompt = P;
  reference(reqs, bs, m);
  m.num_blocks = m.want_blocks_off;  // what the run without caching needs: no eviction in either
  const Served<T> on = serve(model, reqs, bs, m.num_blocks, true, faults);
  const Served<T> off = serve(model, reqs, bs, m.num_blocks, false, faults);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const int r0 = std::min(on.numbers.reused[i], P - 1);
    const auto rows = static_cast<Eigen::Index>(L - r0);
    m.max_abs_diff = nan_max(m.max_abs_diff, static_cast<double>(max_abs(on.logits[i].bottomRows(rows) - off.logits[i].bottomRows(rows))));
    m.logit_scale = std::max(m.logit_scale, static_cast<double>(max_abs(off.logits[i])));
  }
  m.on = on.numbers;
  m.off = off.numbers;
  return m;
}

int measured_hits(const PrefixCacheMeasured& m) {
  int hits = 0;
  for (int r : m.on.reused) hits += r > 0;
  return hits;
}

int total_prompt(const PrefixCacheMeasured& m) { return static_cast<int>(m.names.size()) * m.prompt; }

void present(const PrefixCacheMeasured& m, Result& r) {
  const PrefixServing &on = m.on, &off = m.off;
  const int total = total_prompt(m), hits = measured_hits(m);
  r.metric_exact("prefill_tokens_reused", on.stats.prefix_hit_tokens);
  r.metric_exact("tokens_computed_caching_on", static_cast<std::uint64_t>(on.computed_tokens));
  r.metric_exact("tokens_computed_caching_off", static_cast<std::uint64_t>(off.computed_tokens));
  r.metric("prompt_token_hit_rate", double(on.stats.prefix_hit_tokens) / total);
  r.metric("request_hit_rate", double(hits) / static_cast<double>(m.names.size()));
  r.metric_exact("blocks_in_use_caching_on", static_cast<std::uint64_t>(on.blocks_in_use));
  r.metric_exact("blocks_in_use_caching_off", static_cast<std::uint64_t>(off.blocks_in_use));
  r.metric_exact("cow_copies", on.stats.cow_copies);
  r.metric_exact("blocks_deduplicated", on.stats.dedupes);
  r.metric("max_abs_diff", m.max_abs_diff);

  Table per{"requests, in arrival order (prefix caching on)",
            {"request", "prompt", "reused", "reference", "block table", "blocks shared (ref > 1)"}, {}};
  for (std::size_t i = 0; i < m.names.size(); ++i)
    per.rows.push_back({m.names[i], std::int64_t{m.prompt}, std::int64_t{on.reused[i]}, std::int64_t{m.want_reuse[i]},
                        table_text(on.tables[i]), std::int64_t{on.shared_blocks[i]}});
  r.tables.push_back(std::move(per));
  r.tables.push_back(Table{"totals",
                           {"", "prefix caching on", "prefix caching off"},
                           {{std::string("tokens through a forward"), std::int64_t{on.computed_tokens}, std::int64_t{off.computed_tokens}},
                            {std::string("blocks in use after decoding"), std::int64_t{on.blocks_in_use}, std::int64_t{off.blocks_in_use}},
                            {std::string("copy-on-write copies"), static_cast<std::int64_t>(on.stats.cow_copies),
                             static_cast<std::int64_t>(off.stats.cow_copies)},
                            {std::string("prompt-token hit rate"), fmt::format("{:.1f}%", 100.0 * on.stats.prefix_hit_tokens / total),
                             std::string("0%")}}});
  const RunContext& ctx = m.context;
  if (!ctx.weights.empty()) r.notes.push_back(weights_note(m.config, ctx.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, 2 K/V heads, {} on {}, seed {}; blocks of {} "
                                  "tokens; pool of {} blocks",
                                  dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed, m.options.block_size, m.num_blocks));
  r.notes.push_back("000 §3.4's \"hit rate 90%+\" for ChatGPT-like services is a production statistic (not checkable); "
                    "the hit rate here follows from the workload: how many requests share how long a prefix.");
  r.notes.push_back("The last prompt token is always computed (its logits give the first output token), so a prompt "
                    "that is entirely cached reuses prompt − 1 tokens.");
  for (const auto& p : on.audit_problems) r.notes.push_back("audit (caching on): " + p);
  for (const auto& p : off.audit_problems) r.notes.push_back("audit (caching off): " + p);
}

}  // namespace

PrefixCacheMeasured measure_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx, const PrefixCacheParts& parts) {
  return with_dtype(ctx.dtype, [&]<class T>() { return measure_impl<T>(o, ctx, parts.faults); });
}

std::vector<Expectation> judge_prefix_cache(const PrefixCacheMeasured& m) {
  const PrefixServing &on = m.on, &off = m.off;
  const int bs = m.options.block_size, L = m.prompt + m.options.decode;
  const Dtype dtype = m.context.dtype;
  const std::string exact = "integer bookkeeping against the token-list reference: exact";
  return {
      {.quantity = "prompt tokens reused from the cache (prefill skipped), all requests", .source = "000 §3.4",
       .unit = "tokens", .expected = double(m.want_saved), .tolerance = 0, .why = exact,
       .measured = double(on.stats.prefix_hit_tokens)},
      {.quantity = "requests that hit the cache", .source = "000 §3.4", .unit = "requests",
       .expected = double(m.want_hits), .tolerance = 0, .why = exact, .measured = double(measured_hits(m))},
      {.quantity = "copy-on-write copies (requests whose reuse ends mid-block)", .source = "000 §3.4; 003 part 6",
       .unit = "blocks", .expected = double(m.want_cow), .tolerance = 0, .why = exact,
       .measured = double(on.stats.cow_copies)},
      {.quantity = "KV blocks in use after decoding, prefix caching on: distinct full-block prefixes + partial last blocks",
       .source = "000 §3.4, §5.2", .unit = "blocks", .expected = double(m.want_blocks_on), .tolerance = 0, .why = exact,
       .measured = double(on.blocks_in_use)},
      {.quantity = fmt::format("KV blocks in use after decoding, prefix caching off: Σ ⌈{}/{}⌉", L, bs),
       .source = "000 §5.2", .unit = "blocks", .expected = double(m.want_blocks_off), .tolerance = 0, .why = exact,
       .measured = double(off.blocks_in_use)},
      {.quantity = "blocks the miss (another system prompt) shares with other requests", .source = "000 §3.4",
       .unit = "blocks", .expected = 0, .tolerance = 0, .why = "a miss gets fresh blocks: exact",
       .measured = double(on.shared_blocks[m.miss])},
      {.quantity = "max |Δlogits| prefix caching on vs off (every row computed with caching on)", .source = "000 §3.4",
       .unit = "", .expected = 0, .tolerance = rounding_bound(m.config, dtype, m.logit_scale),
       .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(m.config),
                          unit_roundoff(dtype), dtype_name(dtype)),
       .measured = m.max_abs_diff},
      {.quantity = "pool audit problems (after decoding and after freeing, both runs)", .source = "000 §6.2",
       .unit = "problems", .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact",
       .measured = double(on.audit_problems.size() + off.audit_problems.size())},
      {.quantity = "blocks free or evictable after freeing every request", .source = "000 §6.2", .unit = "blocks",
       .expected = double(m.num_blocks), .tolerance = 0, .why = "integer bookkeeping: exact",
       .measured = double(on.blocks_free_at_end)}};
}

const CheckDef<PrefixCacheOptions, PrefixCacheMeasured>& prefix_cache_check() {
  using O = PrefixCacheOptions;
  static const CheckDef<O, PrefixCacheMeasured> def{
      .spec = {.name = "prefix-cache",
               .order = 420,
               .source = "000 §3.4; 003 part 6",
               .summary = "shared system prompt: blocks reused by chained hash, COW mid-block, logits unchanged",
               .claim_zh = "共享系统提示：按链式哈希复用块，块中途写时复制，logits 不变",
               .description =
                   "Serves requests that share a system prompt through one paged pool with prefix caching:\n"
                   "hit rate, prefill tokens saved and blocks shared against a token-list reference, a\n"
                   "copy-on-write for each request that diverges mid-block, and logits equal to the same\n"
                   "requests served without the cache.",
               .derivation =
                   "K/V at position t depend only on tokens 0..t (causal attention), so two prompts that\n"
                   "agree on their first n tokens have the same K/V there: the later request may attach the\n"
                   "earlier one's blocks and prefill only the rest. A block is named by hash(parent hash,\n"
                   "its tokens), i.e. by the whole prefix, so equal tokens after a different prefix miss.\n"
                   "Blocks: a full block is stored once per distinct prefix, however many requests hold it;\n"
                   "a block shared only up to the divergence is copied at the first write (COW).\n"
                   "Source: 000 §3.4; 003 part 6; vLLM, arXiv 2309.06180 §4.4.",
               .traits = {.dtype = true, .weights = true}},
      .options = {{"--requests", &O::requests, Allowed::integers(1, kMaxRequests), "Requests sharing the system prompt"},
                  {"--system-tokens", &O::system_tokens, Allowed::integers(1, kMaxSystem), "Tokens of the shared system prompt"},
                  {"--user-tokens", &O::user_tokens, Allowed::integers(1, kMaxUser), "Each request's own prompt tokens"},
                  {"--decode", &O::decode, Allowed::integers(0, kMaxDecode), "Tokens decoded per request"},
                  {"--block-size", &O::block_size, Allowed::integers(1, kMaxBlockSize), "Positions per block"}},
      .constraints = {},
      .measure = [](const O& o, const RunContext& ctx) { return measure_prefix_cache(o, ctx); },
      .judge = judge_prefix_cache,
      .present = present,
      .claim =
          [](const PrefixCacheMeasured& m) {
            return fmt::format("Requests sharing a {}-token system prompt reuse its KV blocks: {} of {} prompt tokens "
                               "skip prefill, a request diverging mid-block copies that block (COW), memory drops from "
                               "{} to {} blocks, and the logits equal a run without prefix caching.",
                               m.options.system_tokens, m.want_saved, total_prompt(m), m.want_blocks_off,
                               m.want_blocks_on);
          }};
  return def;
}

Result run_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx, const PrefixCacheParts& parts) {
  return run_check(prefix_cache_check(), o, ctx, [&parts](const PrefixCacheOptions& opts, const RunContext& c) {
    return measure_prefix_cache(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(prefix_cache_check);

}  // namespace kvlab::checks::prefix_cache
