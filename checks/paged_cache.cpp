// paged-cache — 000 §5.3, §6.2, sanity check [f]: the block table, ref counts and copy-on-write.
//
// Claim (000 §5.3): request A maps logical blocks [0, 1, 2, 3] to physical [12, 7, 34, 19];
// request B maps [0, 1, 2] to [12, 7, 5]: they share their first 32 tokens (2 blocks × 16); each
// physical block keeps a ref count, and when A writes into a block whose ref count is above 1 the
// block is copied and A's mapping changed (COW). 000 §6.2 sketches the pool (free list, ref
// counts, block tables, allocate / append / free / share_prefix); sanity check [f] says "ref_count
// + share correct".
//
// kvlab replays the example on its real pool (lib/cache/paged.hpp) with K/V data in it: the free
// list is ordered so that the pool hands out the document's block ids, A appends 4 blocks, B forks
// A's first 2 blocks and appends half a block, A rolls back into shared block 7 (as speculative
// decoding does, 000 §7.6) and writes. Every sequence is mirrored in a contiguous cache; what the
// pool gathers through each block table must equal the mirror bit for bit. Then the pool is filled
// to exhaustion (the next append must throw and change nothing) and every sequence is freed.
// Expected: tables, shared tokens, ref counts, copies, block counts exactly (integer bookkeeping:
// tolerance 0); gathered K/V equal to the mirrors exactly (copies, no arithmetic); audit clean.
//
//   kvlab paged-cache [--block-size 16] [--num-blocks 64]
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checks/paged_cache.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/rng.hpp"

namespace kvlab::checks::paged_cache {
namespace {

constexpr int kMaxBlockSize = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kMaxPositions = 65536;  // num_blocks × block_size: the pool then holds 8 MB
constexpr int kLayers = 2, kWidth = 8;

const std::vector<int> kTableA = {12, 7, 34, 19};  // 000 §5.3
const std::vector<int> kTableB = {12, 7, 5};

// The pool, and beside it each sequence's K/V in a plain contiguous cache (the reference).
struct Fixture {
  PagedKVPool<double> pool;
  std::map<int, PreallocCache<double>> mirror;
  Rng rng;
  int audit_problems = 0;
  std::vector<std::string> first_problems;

  Fixture(int num_blocks, int bs, std::vector<int> order, PagedFaults faults, std::uint64_t seed)
      : pool(num_blocks, bs, kLayers, kWidth, std::move(order), faults), rng(seed) {}

  Mat<double> draw(int n) {
    Mat<double> m(n, kWidth);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal();
    return m;
  }
  // n new positions of fresh random K/V in every layer, written to the pool and the mirror.
  void write(int seq, int n) {
    for (int l = 0; l < kLayers; ++l) {
      const Mat<double> k = draw(n), v = draw(n);
      pool.append(seq, l, k, v);
      mirror.at(seq).append(l, k, v);
    }
  }
  // Largest |gathered − mirror| over every live sequence, layer and element (inf on a length
  // mismatch).
  double max_mirror_diff() const {
    double worst = 0;
    Mat<double> got;
    for (int seq : pool.manager().sequences())
      for (int l = 0; l < kLayers; ++l)
        for (bool values : {false, true}) {
          pool.gather(seq, l, values, got);
          const auto& m = mirror.at(seq);
          const auto want = values ? m.values(l) : m.keys(l);
          if (got.rows() != want.rows()) return std::numeric_limits<double>::infinity();
          if (got.rows() > 0) worst = nan_max(worst, max_abs(got - want));
        }
    return worst;
  }
  void audit(const std::string& when) {
    const PoolAudit a = pool.manager().audit();
    audit_problems += static_cast<int>(a.problems.size());
    for (const auto& p : a.problems)
      if (first_problems.size() < 5) first_problems.push_back(when + ": " + p);
  }
};

std::string table_text(const std::vector<int>& t) { return fmt::format("[{}]", fmt::join(t, ", ")); }

int matching_entries(const std::vector<int>& got, const std::vector<int>& want) {
  int n = 0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) n += got[i] == want[i];
  return n - static_cast<int>(std::max(got.size(), want.size()) - std::min(got.size(), want.size()));
}

// The free list in the order that hands out the document's ids: 12, 7, 34, 19, 5, then 0, 1, ...
std::vector<int> document_order(int num_blocks) {
  std::vector<int> order = {12, 7, 34, 19, 5};
  for (int b = 0; b < num_blocks; ++b)
    if (std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
  return order;
}

// Records the pool after a step (the step table) and adds its audit to the fixture's.
void record(Fixture& f, PagedCacheMeasured& out, const std::string& step, int a, int b) {
  const BlockManager& m = f.pool.manager();
  PagedStep s{.step = step};
  if (a >= 0 && m.has_sequence(a)) s.table_a = m.block_table(a);
  if (b >= 0 && m.has_sequence(b)) s.table_b = m.block_table(b);
  for (int block : {12, 7, 34, 19, 5}) s.refs.push_back(m.ref_count(block));
  s.cow_copies = m.stats().cow_copies;
  s.blocks_in_use = m.blocks_in_use();
  s.audit_problems = static_cast<int>(m.audit().problems.size());
  out.steps.push_back(std::move(s));
  f.audit(step);
}

// 1. A: 4 blocks of tokens. 2. B: fork A's first 2 blocks, then half a block of its own.
std::pair<int, int> share(Fixture& f, PagedCacheMeasured& out, int bs, int cap) {
  BlockManager& m = f.pool.manager();
  const int a = m.add_sequence();
  f.mirror.emplace(a, PreallocCache<double>(kLayers, kWidth, cap));
  f.write(a, 4 * bs);
  record(f, out, fmt::format("A appends {} tokens", 4 * bs), a, -1);
  out.table_a = m.block_table(a);

  const int b = m.fork(a, 2 * bs);
  f.mirror.emplace(b, PreallocCache<double>(kLayers, kWidth, cap));
  for (int l = 0; l < kLayers; ++l)  // B's mirror: A's first 2·bs positions
    f.mirror.at(b).append(l, f.mirror.at(a).keys(l).topRows(2 * bs).eval(), f.mirror.at(a).values(l).topRows(2 * bs).eval());
  const int b_own = std::max(1, bs / 2);
  f.write(b, b_own);
  record(f, out, fmt::format("B forks A's first {} tokens, appends {}", 2 * bs, b_own), a, b);
  out.table_b = m.block_table(b);
  for (int p = 0; p < std::min(m.num_tokens(a), m.num_tokens(b)); ++p)
    out.shared_tokens += f.pool.row(a, 0, p, false).data() == f.pool.row(b, 0, p, false).data();
  const std::vector<int> want_refs = {2, 2, 1, 1, 1};
  for (std::size_t i = 0; i < want_refs.size(); ++i)
    out.ref_error += std::abs(m.ref_count(std::vector<int>{12, 7, 34, 19, 5}[i]) - want_refs[i]);
  out.mirror_diff = f.max_mirror_diff();
  return {a, b};
}

// 3. A rolls back into shared block 7 and writes: copy-on-write.
void rollback_and_write(Fixture& f, PagedCacheMeasured& out, int bs, int a, int b) {
  BlockManager& m = f.pool.manager();
  const int rollback = bs + bs / 2;
  m.truncate(a, rollback);
  f.mirror.at(a).truncate(rollback);
  const std::uint64_t copies_before = m.stats().cow_copies;
  f.write(a, 1);
  out.cow_on_write = m.stats().cow_copies - copies_before;
  record(f, out,
         bs > 1 ? fmt::format("A rolls back to {} and writes 1 token into block 7", rollback)
                : fmt::format("A rolls back to {} (releasing block 7) and writes 1 token", rollback),
         a, b);
  out.ref7_after_write = m.ref_count(7);
  out.mirror_diff = std::max(out.mirror_diff, f.max_mirror_diff());
}

// 4. Fill the pool; one more position must throw PoolExhausted and change nothing.
int exhaust(Fixture& f, PagedCacheMeasured& out, int bs, int cap, int a, int b) {
  BlockManager& m = f.pool.manager();
  const int d = m.add_sequence();
  f.mirror.emplace(d, PreallocCache<double>(kLayers, kWidth, cap));
  f.write(d, m.blocks_available() * bs);
  const int in_use = m.blocks_in_use(), d_len = m.num_tokens(d);
  const std::vector<int> d_table = m.block_table(d);
  bool threw = false;
  try {
    f.pool.append(d, 0, f.draw(1), f.draw(1));
  } catch (const PoolExhausted& e) {
    threw = true;
    out.exhausted_message = e.what();
  }
  const bool unchanged = m.num_tokens(d) == d_len && m.blocks_in_use() == in_use && m.block_table(d) == d_table &&
                         f.max_mirror_diff() == 0.0;
  out.exhausted_refused = threw && unchanged;
  record(f, out, "D fills the pool; one more token is refused", a, b);
  return d;
}

std::string step_table_cell(const std::optional<std::vector<int>>& t) { return t ? table_text(*t) : std::string("—"); }

void present(const PagedCacheMeasured& m, Result& r) {
  const PagedCacheOptions& o = m.options;
  r.metric_exact("shared_tokens", static_cast<std::uint64_t>(m.shared_tokens));
  r.metric_exact("cow_copies", m.cow_copies);
  r.metric_exact("blocks_allocated", m.blocks_allocated);
  r.metric_exact("audit_problems", static_cast<std::uint64_t>(m.audit_problems));
  r.metric_exact("blocks_free_at_end", static_cast<std::uint64_t>(m.blocks_free_at_end));
  Table steps{"block tables and ref counts, step by step",
              {"step", "A table", "B table", "ref 12, 7, 34, 19, 5", "copies (COW)", "blocks in use", "audit"}, {}};
  for (const PagedStep& s : m.steps)
    steps.rows.push_back({s.step, step_table_cell(s.table_a), step_table_cell(s.table_b),
                          fmt::format("{}", fmt::join(s.refs, ", ")), static_cast<std::int64_t>(s.cow_copies),
                          std::int64_t{s.blocks_in_use},
                          s.audit_problems == 0 ? std::string("clean") : fmt::format("{} problem(s)", s.audit_problems)});
  r.tables.push_back(std::move(steps));
  r.notes.push_back(fmt::format("pool: {} blocks × {} positions, {} layers × width {}, float64 K/V drawn from seed {}; "
                                "free list ordered 12, 7, 34, 19, 5, 0, 1, ... so the pool hands out the document's ids",
                                o.num_blocks, o.block_size, kLayers, kWidth, m.context.seed));
  r.notes.push_back("kvlab's fork shares ⌈n/block size⌉ blocks (a partly filled last block too, copied on the next write, "
                    "as vLLM); 000 §6.2's share_prefix shares ⌊n/page⌋ full pages only, so for n = 40 and pages of 16 "
                    "the new sequence lacks positions 32..39 and later reads them from an uninitialized page (E34).");
  r.notes.push_back("000 §6.2's append_token pops the free list without the OOM check allocate() has (E27); kvlab's "
                    "pool throws PoolExhausted before changing anything: " + m.exhausted_message);
  for (const auto& p : m.first_problems) r.notes.push_back("audit: " + p);
}

}  // namespace

PagedCacheMeasured measure_paged_cache(const PagedCacheOptions& o, const RunContext& ctx, const PagedCacheParts& parts) {
  const int bs = o.block_size, cap = o.num_blocks * bs;
  Fixture f(o.num_blocks, bs, document_order(o.num_blocks), parts.faults, ctx.seed);
  PagedCacheMeasured out{.options = o, .context = ctx};
  const auto [a, b] = share(f, out, bs, cap);
  rollback_and_write(f, out, bs, a, b);
  const int d = exhaust(f, out, bs, cap, a, b);
  // 5. Free everything.
  BlockManager& m = f.pool.manager();
  for (int s : {a, b, d}) {
    m.free(s);
    f.mirror.erase(s);
  }
  record(f, out, "free A, B, D", a, b);
  const PoolAudit end = m.audit();
  out.blocks_free_at_end = end.blocks_free + end.blocks_evictable;
  out.audit_problems = f.audit_problems;
  out.first_problems = f.first_problems;
  out.cow_copies = m.stats().cow_copies;
  out.blocks_allocated = m.stats().blocks_allocated;
  return out;
}

std::vector<Expectation> judge_paged_cache(const PagedCacheMeasured& m) {
  const int bs = m.options.block_size;
  const std::string bookkeeping = "integer bookkeeping: exact";
  Expectation shared{.quantity = "tokens A and B share (same physical slot)", .source = "000 §5.3", .unit = "tokens",
                     .expected = 2.0 * bs, .tolerance = 0, .why = "2 shared blocks × block size: exact",
                     .measured = double(m.shared_tokens)};
  if (bs == 16) shared.stated = Stated::parse("32", "共享前 32 个 token（2 blocks × 16 tokens）");
  // With one position per block a rollback cannot end inside a block: A's write lands in a new
  // block, nothing shared is written and nothing is copied.
  const bool can_cow = bs > 1;
  return {
      {.quantity = "A's table entries equal to [12, 7, 34, 19]", .source = "000 §5.3", .unit = "entries", .expected = 4,
       .tolerance = 0, .why = bookkeeping, .measured = double(matching_entries(m.table_a, kTableA))},
      {.quantity = "B's table entries equal to [12, 7, 5]", .source = "000 §5.3", .unit = "entries", .expected = 3,
       .tolerance = 0, .why = bookkeeping, .measured = double(matching_entries(m.table_b, kTableB))},
      shared,
      {.quantity = "ref counts of blocks 12, 7, 34, 19, 5: Σ|ref − (2, 2, 1, 1, 1)|", .source = "000 §5.3", .unit = "",
       .expected = 0, .tolerance = 0, .why = bookkeeping, .measured = double(m.ref_error)},
      {.quantity = "copy-on-write copies on A's first write into shared block 7", .source = "000 §5.3, §6.2",
       .unit = "blocks", .expected = can_cow ? 1.0 : 0.0, .tolerance = 0,
       .why = can_cow ? bookkeeping : "block size 1: the write goes to a new block; exact",
       .measured = double(m.cow_on_write)},
      {.quantity = "ref count of block 7 after A's write (B alone)", .source = "000 §5.3", .unit = "", .expected = 1,
       .tolerance = 0, .why = bookkeeping, .measured = double(m.ref7_after_write)},
      {.quantity = "max |gathered K/V − contiguous mirror|, every sequence, before and after the copy",
       .source = "000 §5.2 (4), §6.2", .unit = "", .expected = 0, .tolerance = 0,
       .why = "a gather copies values, no arithmetic: bit-identical", .measured = m.mirror_diff},
      {.quantity = "append to an exhausted pool throws PoolExhausted and changes nothing", .source = "000 §6.2",
       .unit = "yes = 1", .expected = 1, .tolerance = 0, .why = "a yes/no outcome",
       .measured = m.exhausted_refused ? 1.0 : 0.0},
      {.quantity = "audit problems, summed over the steps", .source = "000 §A.2 [f]", .unit = "problems", .expected = 0,
       .tolerance = 0, .why = "each invariant holds or not: exact", .measured = double(m.audit_problems)},
      {.quantity = "blocks free (free list + evictable) after freeing every sequence", .source = "000 §6.2",
       .unit = "blocks", .expected = double(m.options.num_blocks), .tolerance = 0, .why = bookkeeping,
       .measured = double(m.blocks_free_at_end)}};
}

const CheckDef<PagedCacheOptions, PagedCacheMeasured>& paged_cache_check() {
  using O = PagedCacheOptions;
  static const CheckDef<O, PagedCacheMeasured> def{
      .spec = {.name = "paged-cache",
               .order = 400,
               .source = "000 §5.3, §6.2, §A.2 [f]",
               .summary = "block tables [12, 7, 34, 19] / [12, 7, 5], ref counts, copy-on-write, audit",
               .claim_zh = "块表 [12, 7, 34, 19] / [12, 7, 5]、引用计数、写时复制（copy-on-write）",
               .description =
                   "Replays 000 §5.3's block-table example on kvlab's paged pool with K/V data in it: A and B\n"
                   "share two blocks, A's write into a shared block is copied (COW), an exhausted pool\n"
                   "refuses, and after freeing every block is back on the free list. Each sequence is\n"
                   "mirrored in a contiguous cache and compared bit for bit.",
               .derivation =
                   "A holds 4 blocks; B = fork(A, 2 blocks) + its own third block: blocks 12 and 7 are in two\n"
                   "tables, so their ref count is 2 and A, B share 2 × 16 = 32 tokens; 34, 19 and 5 have 1.\n"
                   "A write into a block with ref > 1 must not change what the other table sees: copy the\n"
                   "block, point the writer's table at the copy, ref(7) = 2 − 1 = 1 (copy-on-write).\n"
                   "Freeing decrements each ref; a block at 0 returns to the free list, so after every\n"
                   "sequence is freed the free list holds all num_blocks blocks.\n"
                   "Source: 000 §5.3, §6.2, §A.2 [f].",
               .traits = {}},
      .options = {{"--block-size", &O::block_size, Allowed::integers(1, kMaxBlockSize), "Positions per block"},
                  {"--num-blocks", &O::num_blocks, Allowed::integers(35, kMaxBlocks), "Blocks in the pool (>= 35)"}},
      .constraints =
          [](const O& o) {
            if (static_cast<long long>(o.num_blocks) * o.block_size > kMaxPositions)
              throw InputError(fmt::format("--num-blocks × --block-size: {} × {} = {} positions; at most {}",
                                           o.num_blocks, o.block_size,
                                           static_cast<long long>(o.num_blocks) * o.block_size, kMaxPositions));
          },
      .measure = [](const O& o, const RunContext& ctx) { return measure_paged_cache(o, ctx); },
      .judge = judge_paged_cache,
      .present = present,
      .claim =
          [](const PagedCacheMeasured& m) {
            const int bs = m.options.block_size;
            return fmt::format("With blocks of {} tokens, A → [12, 7, 34, 19] and B → [12, 7, 5] share their first {} "
                               "tokens; ref counts are 2, 2, 1, 1, 1; A's first write into shared block 7 copies it; an "
                               "exhausted pool refuses; after freeing, every block is free and the audit is clean.",
                               bs, 2 * bs);
          }};
  return def;
}

Result run_paged_cache(const PagedCacheOptions& o, const RunContext& ctx, const PagedCacheParts& parts) {
  return run_check(paged_cache_check(), o, ctx, [&parts](const PagedCacheOptions& opts, const RunContext& c) {
    return measure_paged_cache(opts, c, parts);
  });
}

KVLAB_REGISTER_SPEC(paged_cache_check);

}  // namespace kvlab::checks::paged_cache
