#include "cache/prefix.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvlab {

namespace {
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

std::uint64_t fnv_bytes(std::uint64_t h, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    h ^= (value >> (8 * i)) & 0xffU;
    h *= kFnvPrime;
  }
  return h;
}
}  // namespace

std::uint64_t prefix_block_hash(std::uint64_t parent, std::span<const int> tokens, bool chain_parent) {
  std::uint64_t h = kPrefixRootHash;
  if (chain_parent) h = fnv_bytes(h, parent, 8);
  for (int t : tokens) h = fnv_bytes(h, static_cast<std::uint32_t>(t), 4);
  return h;
}

int common_prefix(std::span<const int> a, std::span<const int> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

int reference_prefix_reuse(std::span<const int> prompt, const std::vector<std::vector<int>>& cached,
                           int block_size) {
  if (block_size < 1) throw std::invalid_argument("reference_prefix_reuse: block_size must be >= 1");
  int best = 0;
  for (const auto& seq : cached) {
    const std::size_t full = seq.size() / static_cast<std::size_t>(block_size) * static_cast<std::size_t>(block_size);
    best = std::max(best, common_prefix(prompt, std::span<const int>(seq).first(full)));
  }
  const int cap = std::max(0, static_cast<int>(prompt.size()) - 1);
  return std::min(best, cap);
}

}  // namespace kvlab
