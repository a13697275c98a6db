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
#include "framework/options.hpp"

namespace kvlab::checks {
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
  std::vector<Mat<T>> logits;       // per request [len, vocab]; rows before `reused` not computed
  std::vector<int> reused;          // prompt tokens attached from the cache
  std::vector<std::vector<int>> tables;  // block tables after decoding
  std::vector<int> shared_blocks;   // per request: table entries with ref count > 1
  PoolStats stats;
  int in_use_end = 0;
  int computed_tokens = 0;          // tokens that went through a forward
  int audit_problems = 0;
  std::vector<std::string> problems;
  int free_at_end = 0;
};

template <class T>
Served<T> serve(const MiniGPT<T>& model, const std::vector<Request>& reqs, int bs, int num_blocks, bool caching,
                const PagedFaults& faults) {
  const auto& cfg = model.config();
  PagedKVPool<T> pool(num_blocks, bs, cfg.n_layer, cfg.kv_width(), {}, faults);
  BlockManager& m = pool.manager();
  Served<T> s;
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
    s.logits.push_back(std::move(out));
  }
  const int decode = static_cast<int>(reqs.front().tokens.size()) - reqs.front().prompt;
  for (int g = 0; g < decode; ++g)  // decode in lockstep, one token per request per step
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const int pos = reqs[i].prompt + g;
      const std::span<const int> ids(reqs[i].tokens);
      s.logits[i].row(pos) = model.forward(ids.subspan(static_cast<std::size_t>(pos), 1), pos, *views[i]);
      ++s.computed_tokens;
      if (caching) m.cache_full_blocks(views[i]->sequence(), ids.first(static_cast<std::size_t>(pos) + 1));
    }
  for (const auto& v : views) {
    s.tables.push_back(m.block_table(v->sequence()));
    int shared = 0;
    for (int b : s.tables.back()) shared += m.ref_count(b) > 1;
    s.shared_blocks.push_back(shared);
  }
  s.in_use_end = m.blocks_in_use();
  const PoolAudit running = m.audit();
  s.audit_problems += static_cast<int>(running.problems.size());
  s.problems.insert(s.problems.end(), running.problems.begin(), running.problems.end());
  for (const auto& v : views) m.free(v->sequence());
  const PoolAudit end = m.audit();
  s.audit_problems += static_cast<int>(end.problems.size());
  s.problems.insert(s.problems.end(), end.problems.begin(), end.problems.end());
  s.free_at_end = end.blocks_free + end.blocks_evictable;
  s.stats = m.stats();
  return s;
}

std::string table_text(const std::vector<int>& t) {
  std::string s;
  for (std::size_t i = 0; i < std::min<std::size_t>(6, t.size()); ++i) s += (i ? ", " : "") + std::to_string(t[i]);
  return "[" + s + (t.size() > 6 ? ", ...]" : "]");
}

template <class T>
Result run_impl(const PrefixCacheOptions& o, const RunContext& ctx, const PagedFaults& faults) {
  const int bs = o.block_size, P = o.system_tokens + o.user_tokens, L = P + o.decode;
  ModelConfig base;
  base.n_kv_head = 2;
  base.block_size = std::max(64, L);
  const MiniGPT<T> model = check_model<T>(base, ctx, "prefix-cache", {{"causal", [](const ModelConfig& c) { return c.causal; }, "true (a bidirectional model has no KV cache)"}, {"sliding_window", [](const ModelConfig& c) { return c.sliding_window == 0; }, "0 (the pool keeps every position)"}, {"cla_share", [](const ModelConfig& c) { return c.cla_share == 1; }, "1 (one cache layer per layer)"},
       {"block_size", [L](const ModelConfig& c) { return c.positional == Positional::rope || c.block_size >= L; },
        fmt::format(">= {} with learned positions (prompt + decode tokens)", L)}});
  const ModelConfig& cfg = model.config();
  const int V = cfg.vocab_size;

  // The requests: a shared system prompt S plus each request's own text; then a miss (another
  // system prompt O) and a request that starts like S but continues like O after one block.
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
  const std::size_t miss = static_cast<std::size_t>(o.requests);

  // What an ideal prefix cache reuses, from the token lists alone (the independent reference).
  std::vector<int> want_reuse;
  std::vector<std::vector<int>> earlier;
  int want_hits = 0, want_cow = 0, want_blocks_on = 0, want_blocks_off = 0, want_saved = 0;
  for (const Request& q : reqs) {
    const std::span<const int> prompt(q.tokens.data(), static_cast<std::size_t>(q.prompt));
    const int reuse = reference_prefix_reuse(prompt, earlier, bs);
    want_reuse.push_back(reuse);
    want_saved += reuse;
    want_hits += reuse > 0;
    want_cow += reuse % bs != 0;
    want_blocks_off += (L + bs - 1) / bs;
    earlier.emplace_back(prompt.begin(), prompt.end());
  }
  // Blocks in use after decoding, with caching: one per distinct full-block prefix (a full block is
  // stored once however many requests hold it: attached on a hit, or deduplicated after it was
  // computed), plus each request's partly filled last block.
  std::set<std::vector<int>> distinct;
  for (const Request& q : reqs)
    for (int end = bs; end <= L; end += bs) distinct.emplace(q.tokens.begin(), q.tokens.begin() + end);
  want_blocks_on = static_cast<int>(distinct.size()) + (L % bs != 0 ? static_cast<int>(reqs.size()) : 0);
  const int num_blocks = want_blocks_off;  // what the run without caching needs: no eviction in either
  const Served<T> on = serve(model, reqs, bs, num_blocks, true, faults);
  const Served<T> off = serve(model, reqs, bs, num_blocks, false, faults);

  double diff = 0, scale = 1.0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const int r0 = std::min(on.reused[i], P - 1);
    const auto rows = static_cast<Eigen::Index>(L - r0);
    diff = nan_max(diff, static_cast<double>(max_abs(on.logits[i].bottomRows(rows) - off.logits[i].bottomRows(rows))));
    scale = std::max(scale, static_cast<double>(max_abs(off.logits[i])));
  }
  const double bound = rounding_bound(cfg, ctx.dtype, scale);
  int measured_hits = 0;
  for (int r : on.reused) measured_hits += r > 0;
  const int total_prompt = static_cast<int>(reqs.size()) * P;

  Result r;
  r.check = "prefix-cache";
  r.source = "000 §3.4; 003 part 6";
  r.claim = fmt::format("Requests sharing a {}-token system prompt reuse its KV blocks: {} of {} prompt tokens skip "
                        "prefill, a request diverging mid-block copies that block (COW), memory drops from {} to {} "
                        "blocks, and the logits equal a run without prefix caching.",
                        o.system_tokens, want_saved, total_prompt, want_blocks_off, want_blocks_on);
  const std::string exact = "integer bookkeeping against the token-list reference: exact";
  r.expect({.quantity = "prompt tokens reused from the cache (prefill skipped), all requests", .source = "000 §3.4",
            .unit = "tokens", .expected = double(want_saved), .tolerance = 0, .why = exact,
            .measured = double(on.stats.prefix_hit_tokens)});
  r.expect({.quantity = "requests that hit the cache", .source = "000 §3.4", .unit = "requests",
            .expected = double(want_hits), .tolerance = 0, .why = exact, .measured = double(measured_hits)});
  r.expect({.quantity = "copy-on-write copies (requests whose reuse ends mid-block)", .source = "000 §3.4; 003 part 6",
            .unit = "blocks", .expected = double(want_cow), .tolerance = 0, .why = exact,
            .measured = double(on.stats.cow_copies)});
  r.expect({.quantity = "KV blocks in use after decoding, prefix caching on: distinct full-block prefixes + partial last blocks",
            .source = "000 §3.4, §5.2", .unit = "blocks", .expected = double(want_blocks_on), .tolerance = 0,
            .why = exact, .measured = double(on.in_use_end)});
  r.expect({.quantity = fmt::format("KV blocks in use after decoding, prefix caching off: Σ ⌈{}/{}⌉", L, bs),
            .source = "000 §5.2", .unit = "blocks", .expected = double(want_blocks_off), .tolerance = 0, .why = exact,
            .measured = double(off.in_use_end)});
  r.expect({.quantity = "blocks the miss (another system prompt) shares with other requests", .source = "000 §3.4",
            .unit = "blocks", .expected = 0, .tolerance = 0, .why = "a miss gets fresh blocks: exact",
            .measured = double(on.shared_blocks[miss])});
  r.expect({.quantity = "max |Δlogits| prefix caching on vs off (every row computed with caching on)",
            .source = "000 §3.4", .unit = "", .expected = 0, .tolerance = bound,
            .why = fmt::format("rounding: 2·n·u·max|logit|, n = {} summed terms, u = {:.2g} ({})", reduction_length(cfg),
                               unit_roundoff(ctx.dtype), dtype_name(ctx.dtype)),
            .measured = diff});
  r.expect({.quantity = "pool audit problems (after decoding and after freeing, both runs)", .source = "000 §6.2",
            .unit = "problems", .expected = 0, .tolerance = 0, .why = "each invariant holds or not: exact",
            .measured = double(on.audit_problems + off.audit_problems)});
  r.expect({.quantity = "blocks free or evictable after freeing every request", .source = "000 §6.2", .unit = "blocks",
            .expected = double(num_blocks), .tolerance = 0, .why = "integer bookkeeping: exact",
            .measured = double(on.free_at_end)});

  r.metric_exact("prefill_tokens_reused", on.stats.prefix_hit_tokens);
  r.metric_exact("tokens_computed_caching_on", static_cast<std::uint64_t>(on.computed_tokens));
  r.metric_exact("tokens_computed_caching_off", static_cast<std::uint64_t>(off.computed_tokens));
  r.metric("prompt_token_hit_rate", double(on.stats.prefix_hit_tokens) / total_prompt);
  r.metric("request_hit_rate", double(measured_hits) / static_cast<double>(reqs.size()));
  r.metric_exact("blocks_in_use_caching_on", static_cast<std::uint64_t>(on.in_use_end));
  r.metric_exact("blocks_in_use_caching_off", static_cast<std::uint64_t>(off.in_use_end));
  r.metric_exact("cow_copies", on.stats.cow_copies);
  r.metric_exact("blocks_deduplicated", on.stats.dedupes);
  r.metric("max_abs_diff", diff);

  Table per{"requests, in arrival order (prefix caching on)",
            {"request", "prompt", "reused", "reference", "block table", "blocks shared (ref > 1)"}, {}};
  for (std::size_t i = 0; i < reqs.size(); ++i)
    per.rows.push_back({reqs[i].name, std::int64_t{P}, std::int64_t{on.reused[i]}, std::int64_t{want_reuse[i]},
                        table_text(on.tables[i]), std::int64_t{on.shared_blocks[i]}});
  r.tables.push_back(std::move(per));
  r.tables.push_back(Table{"totals",
                           {"", "prefix caching on", "prefix caching off"},
                           {{std::string("tokens through a forward"), std::int64_t{on.computed_tokens}, std::int64_t{off.computed_tokens}},
                            {std::string("blocks in use after decoding"), std::int64_t{on.in_use_end}, std::int64_t{off.in_use_end}},
                            {std::string("copy-on-write copies"), static_cast<std::int64_t>(on.stats.cow_copies),
                             static_cast<std::int64_t>(off.stats.cow_copies)},
                            {std::string("prompt-token hit rate"), fmt::format("{:.1f}%", 100.0 * on.stats.prefix_hit_tokens / total_prompt),
                             std::string("0%")}}});
  if (!ctx.weights.empty()) r.notes.push_back(weights_note(cfg, ctx.weights));
  else
    r.notes.push_back(fmt::format("mini-GPT: 2 layers, d_model 64, 8 query heads, 2 K/V heads, {} on {}, seed {}; blocks of {} "
                                  "tokens; pool of {} blocks",
                                  dtype_name(ctx.dtype), device_name(ctx.device), ctx.seed, bs, num_blocks));
  r.notes.push_back("000 §3.4's \"hit rate 90%+\" for ChatGPT-like services is a production statistic (not checkable); "
                    "the hit rate here follows from the workload: how many requests share how long a prefix.");
  r.notes.push_back("The last prompt token is always computed (its logits give the first output token), so a prompt "
                    "that is entirely cached reuses prompt − 1 tokens.");
  for (const auto& p : on.problems) r.notes.push_back("audit (caching on): " + p);
  for (const auto& p : off.problems) r.notes.push_back("audit (caching off): " + p);
  return r;
}

}  // namespace

Result run_prefix_cache(const PrefixCacheOptions& o, const RunContext& ctx, const PrefixCacheParts& parts) {
  require_range("--requests", o.requests, 1, kMaxRequests);
  require_range("--system-tokens", o.system_tokens, 1, kMaxSystem);
  require_range("--user-tokens", o.user_tokens, 1, kMaxUser);
  require_range("--decode", o.decode, 0, kMaxDecode);
  require_range("--block-size", o.block_size, 1, kMaxBlockSize);
  Result r = with_dtype(ctx.dtype, [&]<class T>() { return run_impl<T>(o, ctx, parts.faults); });
  return r;
}

namespace {

class PrefixCache final : public Check {
 public:
  std::string name() const override { return "prefix-cache"; }
  std::string source() const override { return "000 §3.4; 003 part 6"; }
  std::string summary() const override { return "shared system prompt: blocks reused by chained hash, COW mid-block, logits unchanged"; }
  std::string description() const override {
    return "Serves requests that share a system prompt through one paged pool with prefix caching:\n"
           "hit rate, prefill tokens saved and blocks shared against a token-list reference, a\n"
           "copy-on-write for each request that diverges mid-block, and logits equal to the same\n"
           "requests served without the cache.";
  }
  std::string derivation() const override {
    return "K/V at position t depend only on tokens 0..t (causal attention), so two prompts that\n"
           "agree on their first n tokens have the same K/V there: the later request may attach the\n"
           "earlier one's blocks and prefill only the rest. A block is named by hash(parent hash,\n"
           "its tokens), i.e. by the whole prefix, so equal tokens after a different prefix miss.\n"
           "Blocks: a full block is stored once per distinct prefix, however many requests hold it;\n"
           "a block shared only up to the divergence is copied at the first write (COW).\n"
           "Source: 000 §3.4; 003 part 6; vLLM, arXiv 2309.06180 §4.4.";
  }
  void bind(OptionSet& sub) override {
    sub.add_option("--requests", opts_.requests, "Requests sharing the system prompt")->check(IntRange(1, kMaxRequests));
    sub.add_option("--system-tokens", opts_.system_tokens, "Tokens of the shared system prompt")->check(IntRange(1, kMaxSystem));
    sub.add_option("--user-tokens", opts_.user_tokens, "Each request's own prompt tokens")->check(IntRange(1, kMaxUser));
    sub.add_option("--decode", opts_.decode, "Tokens decoded per request")->check(IntRange(0, kMaxDecode));
    sub.add_option("--block-size", opts_.block_size, "Positions per block (default 16)")->check(IntRange(1, kMaxBlockSize));
  }
  bool uses_dtype() const override { return true; }
  bool uses_weights() const override { return true; }
  Result run(const RunContext& ctx) override { return run_prefix_cache(opts_, ctx); }

 private:
  PrefixCacheOptions opts_;
};

KVLAB_REGISTER_CHECK(420, PrefixCache);

}  // namespace
}  // namespace kvlab::checks
