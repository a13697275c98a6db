#include "serve/kv_memory.hpp"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::serve {

const char* allocator_name(KvAllocator a) {
  switch (a) {
    case KvAllocator::max_length: return "max-length preallocation";
    case KvAllocator::exact: return "exact-length contiguous";
    case KvAllocator::paged: return "paged";
  }
  return "?";
}

std::uint64_t slots_for(KvAllocator kind, std::uint64_t len, std::uint64_t max_len, std::uint64_t block) {
  switch (kind) {
    case KvAllocator::max_length: return max_len;
    case KvAllocator::exact: return len;
    case KvAllocator::paged: return (len + block - 1) / block * block;
  }
  return 0;
}

std::uint64_t requests_that_fit(KvAllocator kind, const std::vector<std::uint64_t>& lengths,
                                std::uint64_t capacity_tokens, std::uint64_t max_len, std::uint64_t block) {
  std::uint64_t used = 0, k = 0;
  for (std::uint64_t len : lengths) {
    const std::uint64_t need = slots_for(kind, len, max_len, block);
    if (need > capacity_tokens - used) break;
    used += need;
    ++k;
  }
  return k;
}

namespace {

// First-fit contiguous reservations in [0, capacity).
class ContiguousMemory final : public KvMemory {
 public:
  ContiguousMemory(std::uint64_t capacity, std::uint64_t max_len, bool preallocate_max)
      : capacity_(capacity), max_len_(max_len), max_(preallocate_max) {
    holes_[0] = capacity;
  }
  bool reserve(std::uint64_t id, std::uint64_t len, std::uint64_t final_len) override {
    if (auto it = live_.find(id); it != live_.end()) {
      if (len > it->second.second) throw std::logic_error("contiguous reservation outgrown");
      return true;
    }
    const std::uint64_t want = max_ ? max_len_ : final_len;
    if (len > want) throw std::logic_error("contiguous reservation smaller than the request");
    for (auto it = holes_.begin(); it != holes_.end(); ++it) {
      if (it->second < want) continue;
      const std::uint64_t start = it->first, size = it->second;
      holes_.erase(it);
      if (size > want) holes_[start + want] = size - want;
      live_[id] = {start, want};
      held_ += want;
      return true;
    }
    return false;
  }
  void release(std::uint64_t id) override {
    auto it = live_.find(id);
    if (it == live_.end()) return;
    std::uint64_t start = it->second.first, size = it->second.second;
    held_ -= size;
    live_.erase(it);
    auto next = holes_.lower_bound(start);
    if (next != holes_.end() && start + size == next->first) {
      size += next->second;
      next = holes_.erase(next);
    }
    if (next != holes_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        prev->second += size;
        return;
      }
    }
    holes_[start] = size;
  }
  std::uint64_t held_slots() const override { return held_; }
  std::uint64_t held_slots(std::uint64_t id) const override {
    auto it = live_.find(id);
    return it == live_.end() ? 0 : it->second.second;
  }
  std::uint64_t free_slots() const override {
    std::uint64_t f = 0;
    for (const auto& [s, n] : holes_) f += n;
    return f;
  }
  std::uint64_t largest_free_run() const override {
    std::uint64_t m = 0;
    for (const auto& [s, n] : holes_) m = std::max(m, n);
    return m;
  }
  std::uint64_t capacity_slots() const override { return capacity_; }

 private:
  std::uint64_t capacity_, max_len_;
  bool max_;
  std::map<std::uint64_t, std::uint64_t> holes_;                         // start -> size
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> live_;  // id -> (start, size)
  std::uint64_t held_ = 0;
};

// A pool of equal blocks; a request holds ⌈len / block⌉ of them.
class PagedMemory final : public KvMemory {
 public:
  PagedMemory(std::uint64_t capacity, std::uint64_t block)
      : block_(block), blocks_(capacity / block), free_(blocks_) {}
  bool reserve(std::uint64_t id, std::uint64_t len, std::uint64_t /*final_len*/) override {
    std::uint64_t& have = live_[id];
    const std::uint64_t need = (len + block_ - 1) / block_;
    if (need <= have) return true;
    if (need - have > free_) {
      if (have == 0) live_.erase(id);
      return false;
    }
    free_ -= need - have;
    have = need;
    return true;
  }
  void release(std::uint64_t id) override {
    auto it = live_.find(id);
    if (it == live_.end()) return;
    free_ += it->second;
    live_.erase(it);
  }
  std::uint64_t held_slots() const override { return (blocks_ - free_) * block_; }
  std::uint64_t held_slots(std::uint64_t id) const override {
    auto it = live_.find(id);
    return it == live_.end() ? 0 : it->second * block_;
  }
  std::uint64_t free_slots() const override { return free_ * block_; }
  std::uint64_t largest_free_run() const override { return free_slots(); }
  std::uint64_t capacity_slots() const override { return blocks_ * block_; }

 private:
  std::uint64_t block_, blocks_, free_;
  std::map<std::uint64_t, std::uint64_t> live_;  // id -> blocks held
};

}  // namespace

std::unique_ptr<KvMemory> make_kv_memory(KvAllocator kind, std::uint64_t capacity_tokens,
                                         std::uint64_t max_len, std::uint64_t block) {
  if (block < 1 || block > max_len)
    throw InputError(fmt::format("block: must be in [1, max-len = {}] (got {})", max_len, block));
  if (capacity_tokens < slots_for(KvAllocator::paged, max_len, max_len, block) || capacity_tokens < max_len)
    throw InputError(fmt::format("kv-tokens: must hold one longest request, at least {} token "
                                 "slots (got {})",
                                 slots_for(KvAllocator::paged, max_len, max_len, block), capacity_tokens));
  if (kind == KvAllocator::paged) return std::make_unique<PagedMemory>(capacity_tokens, block);
  return std::make_unique<ContiguousMemory>(capacity_tokens, max_len, kind == KvAllocator::max_length);
}

}  // namespace kvlab::serve
