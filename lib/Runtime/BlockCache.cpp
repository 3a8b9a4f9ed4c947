//===- BlockCache.cpp - a session's blocks for buffers sized at run time --===//

#include "BlockCache.h"
#include "HostMemory.h"

namespace kiln::rt {

BlockCache::~BlockCache() {
  for (const Block &b : free)
    releaseHost(b.p, b.capacity);
  for (auto &[p, b] : taken)
    releaseHost(b.p, b.capacity);
}

void *BlockCache::allocThunk(void *self, uint64_t bytes) {
  auto *cache = static_cast<BlockCache *>(self);
  if (bytes > UINT64_MAX - 63)
    return nullptr;
  uint64_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
  std::lock_guard<std::mutex> lock(cache->mutex);
  // The last given back that fits without wasting more than its size.
  for (size_t i = cache->free.size(); i-- > 0;) {
    Block b = cache->free[i];
    if (b.capacity < rounded || b.capacity / 2 > rounded)
      continue;
    cache->free.erase(cache->free.begin() + i);
    b.lastRun = cache->run;
    cache->taken.emplace(b.p, b);
    return b.p;
  }
  void *p = allocateHost(rounded);
  if (p)
    cache->taken.emplace(p, Block{p, rounded, cache->run});
  return p;
}

void BlockCache::releaseThunk(void *self, void *block, uint64_t) {
  auto *cache = static_cast<BlockCache *>(self);
  std::lock_guard<std::mutex> lock(cache->mutex);
  auto it = cache->taken.find(block);
  if (it == cache->taken.end())
    return; // not ours (a null allocation)
  cache->free.push_back(it->second);
  cache->taken.erase(it);
}

void BlockCache::endRun() {
  std::lock_guard<std::mutex> lock(mutex);
  size_t kept = 0;
  for (const Block &b : free) {
    if (b.lastRun == run)
      free[kept++] = b;
    else
      releaseHost(b.p, b.capacity);
  }
  free.resize(kept);
  ++run;
}

} // namespace kiln::rt
