#include "core/huge_pages.hpp"

#include <cstdlib>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace kvlab {

void* allocate_streamed(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePageBytes) return ::operator new(bytes, std::align_val_t{64});
  const std::size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: ordinary pages if the kernel declines
#endif
  return p;
}

void free_streamed(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePageBytes)
    ::operator delete(p, std::align_val_t{64});
  else
    std::free(p);
}

}  // namespace kvlab
