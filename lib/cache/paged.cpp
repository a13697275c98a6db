#include "cache/paged.hpp"

#include <algorithm>
#include <climits>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

namespace {
int ceil_div(int a, int b) { return a / b + (a % b != 0 ? 1 : 0); }
}  // namespace

// ---- BlockManager: construction, sequences ---------------------------------------------------

BlockManager::BlockManager(int num_blocks, int block_size, int n_layer, std::vector<int> free_order,
                           PagedFaults faults)
    : num_blocks_(num_blocks), block_size_(block_size), n_layer_(n_layer), faults_(faults) {
  if (num_blocks < 1 || block_size < 1 || n_layer < 1)
    throw std::invalid_argument(fmt::format("BlockManager: num_blocks ({}), block_size ({}) and n_layer ({}) must be >= 1",
                                            num_blocks, block_size, n_layer));
  if (free_order.empty()) {
    free_order.resize(static_cast<std::size_t>(num_blocks));
    std::iota(free_order.begin(), free_order.end(), 0);
  }
  std::vector<int> sorted = free_order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < num_blocks; ++i)
    if (sorted.size() != static_cast<std::size_t>(num_blocks) || sorted[static_cast<std::size_t>(i)] != i)
      throw std::invalid_argument(fmt::format("BlockManager: free_order must be a permutation of 0..{}", num_blocks - 1));
  ref_.assign(static_cast<std::size_t>(num_blocks), 0);
  evict_pos_.resize(static_cast<std::size_t>(num_blocks));
  in_evictable_.assign(static_cast<std::size_t>(num_blocks), 0);
  free_.assign(free_order.begin(), free_order.end());
}

BlockManager::Sequence& BlockManager::seq_ref(int seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) throw std::invalid_argument(fmt::format("BlockManager: no sequence {}", seq));
  return it->second;
}

const BlockManager::Sequence& BlockManager::seq_ref(int seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) throw std::invalid_argument(fmt::format("BlockManager: no sequence {}", seq));
  return it->second;
}

int BlockManager::add_sequence() {
  const int id = next_seq_++;
  Sequence s;
  s.layer_len.assign(static_cast<std::size_t>(n_layer_), 0);
  seqs_.emplace(id, std::move(s));
  return id;
}

int BlockManager::fork(int parent, int n_tokens) {
  const Sequence& p = seq_ref(parent);
  const int len = num_tokens(parent);
  if (n_tokens < 0) n_tokens = len;
  if (n_tokens > len || *std::min_element(p.layer_len.begin(), p.layer_len.end()) < n_tokens)
    throw std::invalid_argument(fmt::format("fork: {} tokens, but sequence {} holds {}", n_tokens, parent, len));
  Sequence child;
  child.table.assign(p.table.begin(), p.table.begin() + ceil_div(n_tokens, block_size_));
  child.layer_len.assign(static_cast<std::size_t>(n_layer_), n_tokens);
  const std::size_t full = static_cast<std::size_t>(n_tokens / block_size_);
  child.hashes.assign(p.hashes.begin(), p.hashes.begin() + static_cast<std::ptrdiff_t>(std::min(full, p.hashes.size())));
  for (int b : child.table) incref(b);
  const int id = next_seq_++;
  seqs_.emplace(id, std::move(child));
  return id;
}

void BlockManager::free(int seq) {
  Sequence& s = seq_ref(seq);
  if (!faults_.free_keeps_ref)
    for (int b : s.table) decref(b);
  seqs_.erase(seq);
}

void BlockManager::truncate(int seq, int len) {
  Sequence& s = seq_ref(seq);
  const int shortest = *std::min_element(s.layer_len.begin(), s.layer_len.end());
  if (len < 0 || len > shortest)
    throw std::invalid_argument(fmt::format("truncate: length {} out of [0, {}]", len, shortest));
  const std::size_t keep = static_cast<std::size_t>(ceil_div(len, block_size_));
  while (s.table.size() > keep) {
    if (!faults_.free_keeps_ref) decref(s.table.back());
    s.table.pop_back();
  }
  std::fill(s.layer_len.begin(), s.layer_len.end(), len);
  s.hashes.resize(std::min(s.hashes.size(), static_cast<std::size_t>(len / block_size_)));
}

// ---- writing ---------------------------------------------------------------------------------

bool BlockManager::needs_copy(int block) const {
  return ref_[static_cast<std::size_t>(block)] > 1 || cached_.count(block) != 0;
}

std::vector<BlockCopy> BlockManager::reserve(int seq, int layer, int n_new) {
  Sequence& s = seq_ref(seq);
  if (layer < 0 || layer >= n_layer_)
    throw std::invalid_argument(fmt::format("reserve: layer {} out of [0, {})", layer, n_layer_));
  const int start = s.layer_len[static_cast<std::size_t>(layer)];
  if (n_new < 0 || n_new > INT_MAX - start)
    throw std::invalid_argument(fmt::format("reserve: {} new positions after {}", n_new, start));
  if (n_new == 0) return {};
  const int first = start / block_size_, last = (start + n_new - 1) / block_size_;
  // Count first, change nothing until we know the pool can supply every block.
  int needed = 0;
  for (int j = first; j <= last; ++j) {
    if (j >= static_cast<int>(s.table.size())) ++needed;
    else if (needs_copy(s.table[static_cast<std::size_t>(j)]) && !faults_.cow_in_place) ++needed;
  }
  if (needed > blocks_available())
    throw PoolExhausted(fmt::format("paged KV pool exhausted: sequence {} needs {} more block(s) of {} positions "
                                    "for positions {}..{}, but all {} blocks are in use and none can be evicted",
                                    seq, needed, block_size_, start, start + n_new - 1, num_blocks_));
  std::vector<BlockCopy> copies;
  std::vector<int> release;  // released only after every take: a source block must not be reused
  for (int j = first; j <= last; ++j) {
    if (j >= static_cast<int>(s.table.size())) {
      s.table.push_back(take_block());
      continue;
    }
    const int b = s.table[static_cast<std::size_t>(j)];
    if (!needs_copy(b)) continue;
    if (faults_.cow_in_place) {  // the bug: the shared block is written where it is
      ++stats_.writes_to_shared;
      continue;
    }
    const int copy = take_block();  // copy-on-write: a private copy, the table repointed at it
    s.table[static_cast<std::size_t>(j)] = copy;
    copies.push_back({b, copy});
    release.push_back(b);
    ++stats_.cow_copies;
  }
  for (int b : release) decref(b);
  return copies;
}

void BlockManager::advance(int seq, int layer, int n_new) {
  Sequence& s = seq_ref(seq);
  if (layer < 0 || layer >= n_layer_)
    throw std::invalid_argument(fmt::format("advance: layer {} out of [0, {})", layer, n_layer_));
  int& len = s.layer_len[static_cast<std::size_t>(layer)];
  if (n_new < 0 || static_cast<long long>(len) + n_new > static_cast<long long>(s.table.size()) * block_size_)
    throw std::invalid_argument(fmt::format("advance: {} positions after {} exceed the {} reserved", n_new, len,
                                            s.table.size() * static_cast<std::size_t>(block_size_)));
  len += n_new;
}

std::vector<BlockCopy> BlockManager::append_tokens(int seq, int n_new) {
  std::vector<BlockCopy> all;
  for (int l = 0; l < n_layer_; ++l) {
    auto copies = reserve(seq, l, n_new);
    all.insert(all.end(), copies.begin(), copies.end());
    advance(seq, l, n_new);
  }
  return all;
}

int BlockManager::take_block() {
  int b = 0;
  if (!free_.empty()) {
    b = free_.front();
    free_.pop_front();
  } else if (!evictable_.empty()) {  // LRU: the cached block freed longest ago
    b = evictable_.front();
    evictable_.pop_front();
    in_evictable_[static_cast<std::size_t>(b)] = 0;
    uncache(b);
    ++stats_.evictions;
  } else {
    throw PoolExhausted(fmt::format("paged KV pool exhausted: all {} blocks in use", num_blocks_));
  }
  ref_[static_cast<std::size_t>(b)] = 1;
  ++stats_.blocks_allocated;
  note_peak();
  return b;
}

void BlockManager::incref(int block) {
  auto& r = ref_[static_cast<std::size_t>(block)];
  if (r == 0) {  // coming back from the evictable list (a prefix-cache hit) or the free list
    if (in_evictable_[static_cast<std::size_t>(block)]) {
      evictable_.erase(evict_pos_[static_cast<std::size_t>(block)]);
      in_evictable_[static_cast<std::size_t>(block)] = 0;
    } else {
      free_.remove(block);
    }
  }
  ++r;
  note_peak();
}

void BlockManager::decref(int block) {
  auto& r = ref_[static_cast<std::size_t>(block)];
  if (r <= 0) throw std::logic_error(fmt::format("BlockManager: ref count of block {} below 0", block));
  if (--r > 0) return;
  if (cached_.count(block)) {
    evictable_.push_back(block);
    evict_pos_[static_cast<std::size_t>(block)] = std::prev(evictable_.end());
    in_evictable_[static_cast<std::size_t>(block)] = 1;
  } else {
    free_.push_back(block);
  }
}

void BlockManager::uncache(int block) {
  auto it = cached_.find(block);
  if (it == cached_.end()) return;
  auto h = hash_to_block_.find(it->second.hash);
  if (h != hash_to_block_.end() && h->second == block) hash_to_block_.erase(h);
  cached_.erase(it);
}

void BlockManager::note_peak() { stats_.peak_blocks_in_use = std::max(stats_.peak_blocks_in_use, blocks_in_use()); }

// ---- queries ---------------------------------------------------------------------------------

int BlockManager::length(int seq, int layer) const {
  const Sequence& s = seq_ref(seq);
  if (layer < 0 || layer >= n_layer_)
    throw std::invalid_argument(fmt::format("length: layer {} out of [0, {})", layer, n_layer_));
  return s.layer_len[static_cast<std::size_t>(layer)];
}

int BlockManager::num_tokens(int seq) const {
  const Sequence& s = seq_ref(seq);
  return *std::max_element(s.layer_len.begin(), s.layer_len.end());
}

const std::vector<int>& BlockManager::block_table(int seq) const { return seq_ref(seq).table; }

std::vector<int> BlockManager::sequences() const {
  std::vector<int> ids;
  for (const auto& [id, s] : seqs_) ids.push_back(id);
  return ids;
}

int BlockManager::ref_count(int block) const {
  if (block < 0 || block >= num_blocks_)
    throw std::invalid_argument(fmt::format("ref_count: block {} out of [0, {})", block, num_blocks_));
  return ref_[static_cast<std::size_t>(block)];
}

int BlockManager::blocks_in_use() const {
  return num_blocks_ - static_cast<int>(free_.size() + evictable_.size());
}

bool BlockManager::is_cached(int block) const { return cached_.count(block) != 0; }

// ---- prefix caching --------------------------------------------------------------------------

void BlockManager::cache_full_blocks(int seq, std::span<const int> tokens) {
  Sequence& s = seq_ref(seq);
  if (static_cast<int>(tokens.size()) != num_tokens(seq))
    throw std::invalid_argument(fmt::format("cache_full_blocks: {} token ids for a sequence of {} positions",
                                            tokens.size(), num_tokens(seq)));
  const int shortest = *std::min_element(s.layer_len.begin(), s.layer_len.end());
  const std::size_t full = static_cast<std::size_t>(shortest / block_size_);
  const bool chain = !faults_.unchained_hash;
  for (std::size_t k = s.hashes.size(); k < full; ++k) {
    const std::uint64_t parent = k == 0 ? kPrefixRootHash : s.hashes[k - 1];
    const auto chunk = tokens.subspan(k * static_cast<std::size_t>(block_size_), static_cast<std::size_t>(block_size_));
    const std::uint64_t h = prefix_block_hash(parent, chunk, chain);
    s.hashes.push_back(h);
    const int mine = s.table[k];
    auto it = hash_to_block_.find(h);
    if (it == hash_to_block_.end()) {
      if (cached_.count(mine)) continue;  // already cached under another name: keep that one
      hash_to_block_.emplace(h, mine);
      cached_[mine] = CachedInfo{h, parent, std::vector<int>(chunk.begin(), chunk.end())};
      continue;
    }
    const int other = it->second;
    const CachedInfo& info = cached_.at(other);
    const bool same = std::equal(chunk.begin(), chunk.end(), info.tokens.begin(), info.tokens.end()) &&
                      (!chain || info.parent == parent);
    if (other == mine || !same) continue;  // already this block, or a hash collision: keep ours
    // A duplicate of a cached block (this request computed a prefix the cache already holds):
    // point the table at the cached block, taking a reference, and only then release ours.
    if (!faults_.dedupe_skips_ref) incref(other);
    s.table[k] = other;
    decref(mine);
    ++stats_.dedupes;
  }
}

PrefixMatch BlockManager::match_prefix(std::span<const int> prompt) const {
  PrefixMatch m;
  if (prompt.size() < 2) return m;
  const bool chain = !faults_.unchained_hash;
  const std::size_t bs = static_cast<std::size_t>(block_size_);
  std::uint64_t parent = kPrefixRootHash;
  std::size_t pos = 0;
  while (pos + bs <= prompt.size()) {  // full blocks, by chained hash
    const auto chunk = prompt.subspan(pos, bs);
    const std::uint64_t h = prefix_block_hash(parent, chunk, chain);
    auto it = hash_to_block_.find(h);
    if (it == hash_to_block_.end()) break;
    const CachedInfo& info = cached_.at(it->second);
    if (!std::equal(chunk.begin(), chunk.end(), info.tokens.begin(), info.tokens.end()) ||
        (chain && info.parent != parent))
      break;  // a hash collision is a miss
    m.blocks.push_back(it->second);
    pos += bs;
    parent = h;
  }
  m.full_block_hits = static_cast<int>(m.blocks.size());
  // Then the first tokens of one more cached block with the same parent: the request diverges
  // inside it. The longest agreement wins; ties go to the lowest block id.
  if (pos < prompt.size()) {
    int best = 0, best_block = -1;
    const auto rest = prompt.subspan(pos);
    for (const auto& [b, info] : cached_) {
      if (chain && info.parent != parent) continue;
      const int n = common_prefix(rest, info.tokens);
      if (n > best) best = n, best_block = b;
    }
    if (best_block >= 0) {
      m.blocks.push_back(best_block);
      pos += static_cast<std::size_t>(best);
    }
  }
  // The last prompt token is always computed: its logits give the next token.
  m.tokens = static_cast<int>(std::min(pos, prompt.size() - 1));
  m.blocks.resize(static_cast<std::size_t>(ceil_div(m.tokens, block_size_)));
  m.full_block_hits = std::min(m.full_block_hits, m.tokens / block_size_);
  return m;
}

int BlockManager::attach(const PrefixMatch& match) {
  if (match.tokens < 0 || static_cast<int>(match.blocks.size()) != ceil_div(match.tokens, block_size_))
    throw std::invalid_argument(fmt::format("attach: {} blocks cannot cover {} tokens", match.blocks.size(), match.tokens));
  for (int b : match.blocks)
    if (b < 0 || b >= num_blocks_ || !cached_.count(b))
      throw std::invalid_argument(fmt::format("attach: block {} is not a cached block", b));
  const int id = add_sequence();
  Sequence& s = seq_ref(id);
  s.table = match.blocks;
  std::fill(s.layer_len.begin(), s.layer_len.end(), match.tokens);
  for (int k = 0; k < match.tokens / block_size_; ++k) s.hashes.push_back(cached_.at(match.blocks[static_cast<std::size_t>(k)]).hash);
  for (int b : s.table) incref(b);
  stats_.prefix_hit_tokens += static_cast<std::uint64_t>(match.tokens);
  return id;
}

// ---- audit -----------------------------------------------------------------------------------

PoolAudit BlockManager::audit() const {
  PoolAudit a;
  auto problem = [&a](std::string text) {
    if (a.problems.size() < 20) a.problems.push_back(std::move(text));
  };
  std::vector<int> held(static_cast<std::size_t>(num_blocks_), 0);
  for (const auto& [id, s] : seqs_) {
    const int len = *std::max_element(s.layer_len.begin(), s.layer_len.end());
    if (static_cast<int>(s.table.size()) != ceil_div(len, block_size_))
      problem(fmt::format("sequence {}: {} blocks in its table for {} positions (want {})", id, s.table.size(), len,
                          ceil_div(len, block_size_)));
    std::vector<int> sorted = s.table;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      problem(fmt::format("sequence {}: a block appears twice in its table", id));
    for (int b : s.table) {
      if (b < 0 || b >= num_blocks_) {
        problem(fmt::format("sequence {}: table entry {} out of [0, {})", id, b, num_blocks_));
        continue;
      }
      ++held[static_cast<std::size_t>(b)];
      if (ref_[static_cast<std::size_t>(b)] < 1)
        problem(fmt::format("sequence {}: block {} in its table has ref count {}", id, b, ref_[static_cast<std::size_t>(b)]));
    }
  }
  std::vector<int> listed(static_cast<std::size_t>(num_blocks_), 0);
  for (int b : free_) {
    ++listed[static_cast<std::size_t>(b)];
    if (ref_[static_cast<std::size_t>(b)] != 0) problem(fmt::format("block {} is on the free list with ref count {}", b, ref_[static_cast<std::size_t>(b)]));
    if (cached_.count(b)) problem(fmt::format("block {} is on the free list but holds cached content", b));
  }
  for (int b : evictable_) {
    ++listed[static_cast<std::size_t>(b)];
    if (ref_[static_cast<std::size_t>(b)] != 0) problem(fmt::format("block {} is evictable with ref count {}", b, ref_[static_cast<std::size_t>(b)]));
    if (!cached_.count(b)) problem(fmt::format("block {} is evictable but caches nothing", b));
  }
  for (int b = 0; b < num_blocks_; ++b) {
    const auto i = static_cast<std::size_t>(b);
    if (ref_[i] != held[i])
      problem(fmt::format("block {}: ref count {} but {} block table(s) hold it", b, ref_[i], held[i]));
    if (ref_[i] == 0 && listed[i] != 1)
      problem(fmt::format("block {}: unreferenced but {} times on the free/evictable lists (want once)", b, listed[i]));
    if (ref_[i] > 0 && listed[i] != 0) problem(fmt::format("block {}: in use (ref {}) but on a free list", b, ref_[i]));
    if (ref_[i] > 0) ++a.blocks_in_use;
  }
  for (const auto& [h, b] : hash_to_block_) {
    auto it = cached_.find(b);
    if (it == cached_.end() || it->second.hash != h) problem(fmt::format("hash index names block {}, which does not cache it", b));
  }
  for (const auto& [b, info] : cached_) {
    auto it = hash_to_block_.find(info.hash);
    if (it == hash_to_block_.end() || it->second != b) problem(fmt::format("cached block {} is missing from the hash index", b));
  }
  if (stats_.writes_to_shared != 0)
    problem(fmt::format("{} write(s) went into a shared or cached block in place", stats_.writes_to_shared));
  a.blocks_free = static_cast<int>(free_.size());
  a.blocks_evictable = static_cast<int>(evictable_.size());
  return a;
}

// ---- PagedKVPool -----------------------------------------------------------------------------

template <class T>
PagedKVPool<T>::PagedKVPool(int num_blocks, int block_size, int n_layer, int width, std::vector<int> free_order,
                            PagedFaults faults)
    : manager_(num_blocks, block_size, n_layer, std::move(free_order), faults), width_(width), faults_(faults) {
  if (width < 1) throw std::invalid_argument(fmt::format("PagedKVPool: width must be >= 1 (got {})", width));
  const std::uint64_t rows = checked_mul(static_cast<std::uint64_t>(num_blocks), static_cast<std::uint64_t>(block_size),
                                         "paged pool positions (num_blocks x block_size)");
  const std::uint64_t per_layer = checked_mul(rows, static_cast<std::uint64_t>(width), "paged pool elements per layer");
  checked_mul(checked_mul(per_layer, 2, "paged pool K+V elements"), static_cast<std::uint64_t>(n_layer),
              "paged pool elements");
  for (int l = 0; l < n_layer; ++l) {
    k_.emplace_back(Mat<T>::Zero(static_cast<Eigen::Index>(rows), width));
    v_.emplace_back(Mat<T>::Zero(static_cast<Eigen::Index>(rows), width));
  }
}

template <class T>
std::unique_ptr<PagedKVCache<T>> PagedKVPool<T>::view(int seq) {
  return std::make_unique<PagedKVCache<T>>(*this, seq);
}

template <class T>
void PagedKVPool<T>::append(int seq, int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  if (k_new.cols() != width_ || v_new.cols() != width_ || k_new.rows() != v_new.rows())
    throw std::invalid_argument(fmt::format("PagedKVPool::append: K [{}, {}] and V [{}, {}], want [T, {}]", k_new.rows(),
                                            k_new.cols(), v_new.rows(), v_new.cols(), width_));
  const int n = static_cast<int>(k_new.rows());
  const int bs = manager_.block_size();
  const int start = manager_.length(seq, layer);
  for (const BlockCopy& c : manager_.reserve(seq, layer, n))
    for (int l = 0; l < n_layer(); ++l) {  // the copy carries every layer of the block
      const Eigen::Index to = static_cast<Eigen::Index>(c.to) * bs, from = static_cast<Eigen::Index>(c.from) * bs;
      k_[static_cast<std::size_t>(l)].middleRows(to, bs) = k_[static_cast<std::size_t>(l)].middleRows(from, bs);
      v_[static_cast<std::size_t>(l)].middleRows(to, bs) = v_[static_cast<std::size_t>(l)].middleRows(from, bs);
    }
  const auto& table = manager_.block_table(seq);
  for (int i = 0; i < n; ++i) {
    const int pos = start + i;
    const Eigen::Index r = static_cast<Eigen::Index>(table[static_cast<std::size_t>(pos / bs)]) * bs + pos % bs;
    k_[static_cast<std::size_t>(layer)].row(r) = k_new.row(i);
    v_[static_cast<std::size_t>(layer)].row(r) = v_new.row(i);
  }
  manager_.advance(seq, layer, n);
}

template <class T>
void PagedKVPool<T>::gather(int seq, int layer, bool values, Mat<T>& out) const {
  const int len = manager_.length(seq, layer);
  const int bs = manager_.block_size();
  const auto& table = manager_.block_table(seq);
  const Mat<T>& src = (values ? v_ : k_)[static_cast<std::size_t>(layer)];
  out.resize(len, width_);
  for (int j = 0; j * bs < len; ++j) {
    const int n = std::min(bs, len - j * bs);
    const int phys = faults_.gather_ignores_table ? j % manager_.num_blocks() : table[static_cast<std::size_t>(j)];
    out.middleRows(static_cast<Eigen::Index>(j) * bs, n) = src.middleRows(static_cast<Eigen::Index>(phys) * bs, n);
  }
}

template <class T>
Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> PagedKVPool<T>::row(int seq, int layer, int pos, bool values) const {
  if (pos < 0 || pos >= manager_.length(seq, layer))
    throw std::invalid_argument(fmt::format("PagedKVPool::row: position {} out of [0, {})", pos, manager_.length(seq, layer)));
  const int bs = manager_.block_size();
  const Mat<T>& src = (values ? v_ : k_)[static_cast<std::size_t>(layer)];
  const Eigen::Index r = static_cast<Eigen::Index>(manager_.block_table(seq)[static_cast<std::size_t>(pos / bs)]) * bs + pos % bs;
  return Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(src.data() + r * width_, width_);
}

// ---- PagedKVCache ----------------------------------------------------------------------------

template <class T>
PagedKVCache<T>::PagedKVCache(PagedKVPool<T>& pool, int seq)
    : KVCache<T>(pool.n_layer(), pool.width()), pool_(&pool), seq_(seq),
      k_scratch_(static_cast<std::size_t>(pool.n_layer())), v_scratch_(static_cast<std::size_t>(pool.n_layer())) {
  if (!pool.manager().has_sequence(seq)) throw std::invalid_argument(fmt::format("PagedKVCache: no sequence {}", seq));
}

template <class T>
void PagedKVCache<T>::append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  this->check_append(layer, k_new, v_new);
  pool_->append(seq_, layer, k_new, v_new);
  this->stats_.positions_written += static_cast<std::uint64_t>(k_new.rows());
}

template <class T>
ConstMatView<T> PagedKVCache<T>::keys(int layer) const {
  this->check_layer(layer);
  Mat<T>& out = k_scratch_[static_cast<std::size_t>(layer)];
  pool_->gather(seq_, layer, false, out);
  return ConstMatView<T>(out.data(), out.rows(), this->width_);
}

template <class T>
ConstMatView<T> PagedKVCache<T>::values(int layer) const {
  this->check_layer(layer);
  Mat<T>& out = v_scratch_[static_cast<std::size_t>(layer)];
  pool_->gather(seq_, layer, true, out);
  return ConstMatView<T>(out.data(), out.rows(), this->width_);
}

template <class T>
int PagedKVCache<T>::length(int layer) const {
  this->check_layer(layer);
  return pool_->manager().length(seq_, layer);
}

template <class T>
void PagedKVCache<T>::truncate(int len) {
  pool_->manager().truncate(seq_, len);
}

template class PagedKVPool<double>;
template class PagedKVPool<float>;
template class PagedKVCache<double>;
template class PagedKVCache<float>;

}  // namespace kvlab
