// Memory for the large arrays a decode step streams (weights, KV cache) and for the STREAM
// buffers that measure the bandwidth they are judged against (bench/machine.hpp).
//
// Why: with 4 KiB pages a 300 MB weight stream crosses 75,000 page boundaries per decode step;
// the hardware prefetcher stops at each one and every page costs a TLB walk. Linux backs an
// allocation with 2 MiB transparent huge pages when it is 2 MiB-aligned and madvise(MADV_HUGEPAGE)
// asks for them (needed where /sys/kernel/mm/transparent_hugepage/enabled is "madvise", as on the
// machine of docs/perf.md). Measured there, one run, interleaved: a 300 MB dot-product stream
// 1.4x faster, a STREAM copy 1.2x (docs/perf.md, "Huge pages"). The roof and the model use the same
// allocation, so the ratio of the two stays a like-for-like comparison.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace kvlab {

/// Bytes from which allocate_streamed asks for huge pages (one 2 MiB page).
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// `bytes` of uninitialised memory, 64-byte aligned; from kHugePageBytes up, 2 MiB-aligned, rounded
/// up to whole 2 MiB pages and advised to be backed by transparent huge pages (Linux; elsewhere,
/// or when the kernel declines, ordinary pages: the advice never fails the allocation).
/// Throws std::bad_alloc when memory is exhausted. Release with free_streamed(p, bytes).
void* allocate_streamed(std::size_t bytes);
/// Releases memory from allocate_streamed; `bytes` must be the size it was allocated with.
void free_streamed(void* p, std::size_t bytes) noexcept;

/// std::allocator's interface over allocate_streamed / free_streamed.
template <class T>
struct StreamedAllocator {
  using value_type = T;
  StreamedAllocator() = default;
  template <class U>
  constexpr StreamedAllocator(const StreamedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_streamed(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_streamed(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const StreamedAllocator<U>&) const noexcept { return true; }
};

/// A float array for the fast path's weights, caches and activations.
using StreamedFloats = std::vector<float, StreamedAllocator<float>>;

}  // namespace kvlab
