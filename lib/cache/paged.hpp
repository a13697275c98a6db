// A paged KV cache, vLLM-style (000 §5.2–5.3, §6.2; Kwon et al., "Efficient Memory Management for
// Large Language Model Serving with PagedAttention", SOSP 2023, arXiv 2309.06180).
//
// The cache memory is one global pool of fixed-size physical blocks; each sequence owns a block
// table that maps its logical block j (positions j·block_size .. j·block_size + block_size − 1)
// to a physical block. Blocks are handed out from a free list when a sequence grows, and several
// tables may hold the same block (fork: parallel sampling, beam search; prefix caching). Each
// block has a ref count = the number of tables holding it; a write into a block whose ref count
// is above 1 first copies it (copy-on-write) and repoints the writer's table at the copy.
//
//   BlockManager     the bookkeeping only: free list, ref counts, block tables, copy-on-write
//                    decisions, the prefix cache (hash -> block, LRU of unreferenced cached
//                    blocks), the audit. Knows no K/V values.
//   PagedKVPool<T>   a BlockManager plus the storage: per layer, K and V are
//                    [num_blocks, block_size, n_kv_head, head_dim], held as a row-major
//                    [num_blocks·block_size, n_kv_head·head_dim] matrix (row b·block_size + s is
//                    slot s of physical block b). It carries out the copies the manager orders.
//   PagedKVCache<T>  one sequence seen through the KVCache<T> interface, so MiniGPT runs on it
//                    unchanged: append() writes through the block table; keys()/values() gather
//                    the sequence's blocks, in table order, into a contiguous scratch buffer
//                    [length, width] and return a view of it (a real paged-attention kernel reads
//                    the blocks in place; kvlab's attention wants contiguous rows).
//
// Prefix caching (000 §3.4; vLLM automatic prefix caching): when a sequence's block fills up, the
// caller registers it under prefix_block_hash(parent hash, its token ids) (cache/prefix.hpp). A
// new request looks up its prompt block by block, attaches the cached blocks it finds (taking a
// reference) and skips their prefill. Past the last full-block hit it may also share the first
// tokens of one more cached block (the request diverges mid-block): its first write there copies
// the block. Cached blocks are immutable: any write into a cached or shared block copies it.
// Unreferenced cached blocks stay in the pool, evictable, and are evicted least recently freed
// first, only when the plain free list is empty. A pool that cannot supply a block throws
// PoolExhausted before it changes anything: never a silent overwrite.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kv_cache.hpp"
#include "cache/prefix.hpp"
#include "core/tensor.hpp"

namespace kvlab {

/// Every block of the pool is in use and none can be evicted. Nothing was changed.
class PoolExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Deliberate bugs, for the unit tests that show the checks catch them. All off by default.
struct PagedFaults {
  bool cow_in_place = false;          ///< write into a shared block instead of copying it
  bool free_keeps_ref = false;        ///< free()/truncate() do not decrement ref counts
  bool gather_ignores_table = false;  ///< keys()/values() read physical blocks 0, 1, 2, ...
  bool unchained_hash = false;        ///< a block's hash leaves out its parent's hash
  bool dedupe_skips_ref = false;      ///< dedupe repoints a table without taking a reference
};

/// One copy-on-write (or nothing else): copy every layer's K/V of block `from` into `to`.
struct BlockCopy {
  int from = -1;
  int to = -1;
};

/// What a lookup of a prompt in the prefix cache found: the blocks to attach (in table order) and
/// the tokens they cover. tokens ≤ blocks.size()·block_size; when it is less, the last block is
/// shared only up to `tokens` and the request diverges inside it.
struct PrefixMatch {
  std::vector<int> blocks;
  int tokens = 0;
  int full_block_hits = 0;  ///< blocks matched by hash (the rest: one partial block, or none)
};

/// Counters of what the pool did since it was made.
struct PoolStats {
  std::uint64_t blocks_allocated = 0;  ///< blocks taken from the free list or by eviction
  std::uint64_t cow_copies = 0;        ///< copy-on-write copies
  std::uint64_t evictions = 0;         ///< cached blocks evicted to satisfy an allocation
  std::uint64_t prefix_hit_tokens = 0; ///< prompt tokens attached from the prefix cache
  std::uint64_t dedupes = 0;           ///< blocks replaced by an equal cached block
  std::uint64_t writes_to_shared = 0;  ///< writes into a block with ref > 1 or cached (a bug)
  int peak_blocks_in_use = 0;          ///< most blocks with ref ≥ 1 at any time
};

/// The pool's invariants, checked. problems is empty when every one holds.
struct PoolAudit {
  std::vector<std::string> problems;
  int blocks_in_use = 0;     ///< ref count ≥ 1
  int blocks_free = 0;       ///< on the free list (no cached content)
  int blocks_evictable = 0;  ///< ref count 0 with cached content
  bool ok() const { return problems.empty(); }
};

/// Bookkeeping of a paged KV cache: block tables, ref counts, free list, prefix cache.
/// Sequences are named by the ids add_sequence()/fork()/attach return; ids are never reused.
class BlockManager {
 public:
  /// A pool of num_blocks blocks of block_size positions, for a model of n_layer layers.
  /// free_order, when given, is the initial free list (a permutation of 0..num_blocks−1; blocks
  /// are taken from its front); default 0, 1, 2, .... Throws std::invalid_argument on a size < 1
  /// or a free_order that is not a permutation.
  BlockManager(int num_blocks, int block_size, int n_layer, std::vector<int> free_order = {},
               PagedFaults faults = {});

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int n_layer() const { return n_layer_; }

  /// A new sequence with an empty block table.
  int add_sequence();
  /// A new sequence sharing the parent's blocks that cover its first n_tokens positions
  /// (⌈n_tokens/block_size⌉ blocks; a partly covered last block is shared too and copied on the
  /// child's or the parent's next write into it). n_tokens < 0: the parent's whole length.
  /// Throws std::invalid_argument on an unknown parent or n_tokens above its length.
  int fork(int parent, int n_tokens = -1);
  /// Releases the sequence's blocks (ref count − 1; at 0 a block returns to the free list, or to
  /// the evictable LRU when it holds cached content) and forgets the sequence.
  void free(int seq);
  /// Keeps the first len positions of every layer; blocks past ⌈len/block_size⌉ are released.
  void truncate(int seq, int len);

  /// Makes positions [length(seq, layer), + n_new) of `layer` writable: allocates the blocks the
  /// table lacks and copies (copy-on-write) every shared or cached block in the range. Returns the
  /// copies for the caller to carry out on the data; the table already points at the copies.
  /// Throws PoolExhausted (changing nothing) when the pool cannot supply the blocks needed.
  std::vector<BlockCopy> reserve(int seq, int layer, int n_new);
  /// Records that `layer` of `seq` now holds n_new more positions (after reserve and the write).
  void advance(int seq, int layer, int n_new);
  /// reserve + advance on every layer: n_new positions of bookkeeping without data.
  std::vector<BlockCopy> append_tokens(int seq, int n_new);

  /// Positions held by `layer` of `seq`.
  int length(int seq, int layer) const;
  /// Positions of the sequence (its longest layer).
  int num_tokens(int seq) const;
  /// The sequence's block table: logical block j -> physical block.
  const std::vector<int>& block_table(int seq) const;
  bool has_sequence(int seq) const { return seqs_.count(seq) != 0; }
  std::vector<int> sequences() const;
  /// Ref count of a physical block (number of block tables holding it).
  int ref_count(int block) const;
  /// Blocks with ref count ≥ 1.
  int blocks_in_use() const;
  /// Blocks an allocation can take now: the free list plus the evictable cached blocks.
  int blocks_available() const { return static_cast<int>(free_.size() + evictable_.size()); }
  /// The free list, front first (blocks without cached content).
  std::vector<int> free_list() const { return {free_.begin(), free_.end()}; }
  const PoolStats& stats() const { return stats_; }

  // ---- prefix caching -----------------------------------------------------------------------

  /// Registers the sequence's full blocks in the prefix cache. `tokens` are the sequence's token
  /// ids, num_tokens(seq) of them. A full block whose hash is already cached under another
  /// physical block is a duplicate: the table is pointed at the cached block (taking a reference)
  /// and then the duplicate is released. Throws std::invalid_argument on a size mismatch.
  void cache_full_blocks(int seq, std::span<const int> tokens);
  /// The longest cached prefix of `prompt`: full blocks by chained hash (the stored token ids are
  /// compared too, so a hash collision is a miss), then possibly a partial match into one more
  /// cached block; capped at prompt.size() − 1 tokens. Changes nothing.
  PrefixMatch match_prefix(std::span<const int> prompt) const;
  /// A new sequence whose table is match.blocks (each taking a reference) and whose length is
  /// match.tokens in every layer: its prefill starts at match.tokens.
  int attach(const PrefixMatch& match);
  /// Whether a physical block is registered in the prefix cache.
  bool is_cached(int block) const;

  /// Checks the invariants: every table entry in range with ref count ≥ 1 and tables of
  /// ⌈length/block_size⌉ blocks; ref count = number of tables holding the block; no block with
  /// ref count ≥ 1 on the free list or the evictable list; every block exactly once in use, free
  /// or evictable (so after everything is freed the free list and evictable list hold all);
  /// no write ever went into a shared or cached block; the hash index agrees with the blocks.
  PoolAudit audit() const;

 private:
  struct Sequence {
    std::vector<int> table;       // logical block -> physical block
    std::vector<int> layer_len;   // positions per layer
    std::vector<std::uint64_t> hashes;  // chained hashes of the leading full blocks seen so far
  };
  struct CachedInfo {
    std::uint64_t hash = 0;
    std::uint64_t parent = 0;
    std::vector<int> tokens;  // the block's block_size token ids
  };

  Sequence& seq_ref(int seq);
  const Sequence& seq_ref(int seq) const;
  int take_block();             // from the free list, else evicts; caller checked availability
  void incref(int block);
  void decref(int block);
  bool needs_copy(int block) const;
  void uncache(int block);
  void note_peak();

  int num_blocks_, block_size_, n_layer_;
  PagedFaults faults_;
  std::vector<int> ref_;                              // [num_blocks]
  std::list<int> free_;                               // blocks with ref 0 and no cached content
  std::list<int> evictable_;                          // ref 0, cached; front = least recently freed
  std::vector<std::list<int>::iterator> evict_pos_;   // [num_blocks] position in evictable_
  std::vector<char> in_evictable_;                    // [num_blocks]
  std::unordered_map<std::uint64_t, int> hash_to_block_;
  std::map<int, CachedInfo> cached_;                  // physical block -> what it caches
  std::map<int, Sequence> seqs_;
  int next_seq_ = 0;
  PoolStats stats_;
};

template <class T>
class PagedKVCache;

/// The storage of a paged KV cache plus its BlockManager.
template <class T>
class PagedKVPool {
 public:
  /// num_blocks blocks of block_size positions, for n_layer layers of `width` = n_kv_head·head_dim
  /// elements per position: 2·n_layer·num_blocks·block_size·width elements in all (K and V).
  /// Throws InputError when that element count overflows 64 bits, std::invalid_argument on a
  /// size < 1 (and as BlockManager on a bad free_order).
  PagedKVPool(int num_blocks, int block_size, int n_layer, int width, std::vector<int> free_order = {},
              PagedFaults faults = {});

  BlockManager& manager() { return manager_; }
  const BlockManager& manager() const { return manager_; }
  int n_layer() const { return manager_.n_layer(); }
  int width() const { return width_; }
  int block_size() const { return manager_.block_size(); }

  /// A KVCache<T> view of sequence `seq` (which must exist); the view does not own it.
  std::unique_ptr<PagedKVCache<T>> view(int seq);

  /// Appends k_new, v_new ([T_new, width]) to `layer` of `seq` through its block table, copying
  /// shared blocks first. Throws PoolExhausted (nothing written) when the pool is full,
  /// std::invalid_argument on a wrong shape.
  void append(int seq, int layer, const Mat<T>& k_new, const Mat<T>& v_new);
  /// Gathers the sequence's K (or V) of `layer` in table order into out ([length, width]).
  void gather(int seq, int layer, bool values, Mat<T>& out) const;
  /// One position's K (or V) row as stored: slot `pos % block_size` of block table[pos / bs].
  Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row(int seq, int layer, int pos, bool values) const;

 private:
  BlockManager manager_;
  int width_;
  PagedFaults faults_;
  std::vector<Mat<T>> k_, v_;  // per layer [num_blocks·block_size, width]
};

/// One sequence of a PagedKVPool behind the KVCache<T> interface (for MiniGPT::forward).
/// keys()/values() gather into a scratch buffer owned by the view: valid until the next call.
template <class T>
class PagedKVCache final : public KVCache<T> {
 public:
  PagedKVCache(PagedKVPool<T>& pool, int seq);
  void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) override;
  ConstMatView<T> keys(int layer) const override;
  ConstMatView<T> values(int layer) const override;
  int length(int layer) const override;
  void truncate(int len) override;
  int sequence() const { return seq_; }

 private:
  PagedKVPool<T>* pool_;
  int seq_;
  mutable std::vector<Mat<T>> k_scratch_, v_scratch_;  // per layer [length, width]
};

}  // namespace kvlab
