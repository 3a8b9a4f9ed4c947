//===- HostMemory.cpp - the runtime's large host buffers ------------------===//

#include "HostMemory.h"

#include <cstdlib>
#include <sys/mman.h>

namespace kiln::rt {

namespace {
constexpr uint64_t kHugePage = uint64_t(2) << 20;

/// The mapping's length: whole huge pages.
uint64_t mappedBytes(uint64_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
} // namespace

void *allocateHost(uint64_t bytes) {
  if (bytes > UINT64_MAX - 2 * kHugePage)
    return nullptr;
  if (bytes < kHugePage) {
    uint64_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64; // as aligned_alloc requires
    return std::aligned_alloc(64, rounded);
  }
  // Mapped a huge page more, then trimmed to a 2 MiB aligned run.
  uint64_t length = mappedBytes(bytes);
  void *m = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (m == MAP_FAILED)
    return nullptr;
  auto begin = reinterpret_cast<uintptr_t>(m);
  uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > begin)
    munmap(m, aligned - begin);
  if (uintptr_t tail = begin + length + kHugePage - (aligned + length))
    munmap(reinterpret_cast<void *>(aligned + length), tail);
  void *p = reinterpret_cast<void *>(aligned);
  madvise(p, length, MADV_HUGEPAGE); // a hint: without THP, plain pages
  return p;
}

void releaseHost(void *p, uint64_t bytes) {
  if (!p)
    return;
  if (bytes < kHugePage)
    std::free(p);
  else
    munmap(p, mappedBytes(bytes));
}

} // namespace kiln::rt
