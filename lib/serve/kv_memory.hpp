// KV memory accounting for the serving simulator: how many token slots each request holds under
// three allocators (000 §5.1–5.2; vLLM, Kwon et al., SOSP'23, arXiv 2309.06180 §3 and §4.2).
// Only the accounting: which slots are held, not the K/V data (lib/cache/ holds real caches).
//
//   max_length  contiguous, reserves max_len slots per request at admission, whatever its length
//               (000 §5.1: "preallocate L_max, maybe only 10% used": internal fragmentation and
//               reservation);
//   exact       contiguous, reserves the request's own final length prompt + output at admission
//               (an oracle that knows the output length; still holds slots for tokens not yet
//               generated: reservation);
//   paged       blocks of `block` slots from a global pool, allocated on demand as the sequence
//               grows: a request of len cached tokens holds ⌈len / block⌉ blocks, so it wastes at
//               most block − 1 slots (its last block's empty slots).
// Contiguous allocators place each reservation first-fit in one address range [0, capacity) and
// merge freed neighbours; free space split into holes too small for the next request is external
// fragmentation (largest_free_run < what is needed while free_slots would suffice).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvlab::serve {

enum class KvAllocator { max_length, exact, paged };
/// "max-length preallocation", "exact-length contiguous", "paged".
const char* allocator_name(KvAllocator a);

/// The slot accounting of one allocator. Ids are the trace's request ids.
class KvMemory {
 public:
  virtual ~KvMemory() = default;
  /// Makes request `id` hold room for `len` cached tokens; `final_len` (prompt + output) is what
  /// a contiguous allocator reserves at the first call. Returns false, changing nothing, when the
  /// room is not there. Throws std::logic_error when len exceeds what a contiguous reservation
  /// holds (a simulator bug).
  virtual bool reserve(std::uint64_t id, std::uint64_t len, std::uint64_t final_len) = 0;
  /// Returns everything `id` holds to the free space (nothing when it holds nothing).
  virtual void release(std::uint64_t id) = 0;
  virtual std::uint64_t held_slots() const = 0;                ///< slots held by live requests
  virtual std::uint64_t held_slots(std::uint64_t id) const = 0;  ///< slots `id` holds
  virtual std::uint64_t free_slots() const = 0;                ///< slots free to reserve
  virtual std::uint64_t largest_free_run() const = 0;          ///< paged: all free slots
  virtual std::uint64_t capacity_slots() const = 0;            ///< held + free when nothing leaks
};

/// An allocator of `capacity_tokens` slots (paged: ⌊capacity / block⌋ blocks of `block` slots),
/// max_len slots per request for max_length. Throws InputError naming "kv-tokens" when capacity
/// is below max_len (one longest request must fit) and "block" for a block of 0 or > max_len.
std::unique_ptr<KvMemory> make_kv_memory(KvAllocator kind, std::uint64_t capacity_tokens,
                                         std::uint64_t max_len, std::uint64_t block);

/// Slots a request of final length `len` holds under `kind` (max_length: max_len; exact: len;
/// paged: ⌈len / block⌉·block), tokens.
std::uint64_t slots_for(KvAllocator kind, std::uint64_t len, std::uint64_t max_len, std::uint64_t block);

/// How many requests of final lengths `lengths` (prompt + output, in order) fit together in
/// `capacity_tokens` slots under `kind`: the largest k with Σ_{i<k} slots_for(len_i) <= capacity
/// (a contiguous allocator packs them back to back from an empty pool, so no holes). The "largest
/// batch each allocator fits" of 000 §2.3 / §5.2, counted at every request's final length.
std::uint64_t requests_that_fit(KvAllocator kind, const std::vector<std::uint64_t>& lengths,
                                std::uint64_t capacity_tokens, std::uint64_t max_len, std::uint64_t block);

}  // namespace kvlab::serve
