//===- BlockCache.cpp - a session's blocks for buffers sized at run time --===//

#include "BlockCache.h"

#include <cstdlib>

namespace kiln::rt {

BlockCache::~BlockCache() {
  for (auto &[size, bucket] : buckets)
    for (void *p : bucket.blocks)
      std::free(p);
}

void *BlockCache::allocThunk(void *self, uint64_t bytes) {
  auto *cache = static_cast<BlockCache *>(self);
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    Bucket &bucket = cache->buckets[bytes];
    bucket.lastRun = cache->run;
    if (!bucket.blocks.empty()) {
      void *p = bucket.blocks.back();
      bucket.blocks.pop_back();
      return p;
    }
  }
  // 64-byte aligned, the size rounded up as aligned_alloc requires.
  uint64_t rounded = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded ? rounded : 64);
}

void BlockCache::releaseThunk(void *self, void *block, uint64_t bytes) {
  auto *cache = static_cast<BlockCache *>(self);
  std::lock_guard<std::mutex> lock(cache->mutex);
  cache->buckets[bytes].blocks.push_back(block);
}

void BlockCache::endRun() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = buckets.begin(); it != buckets.end();) {
    if (it->second.lastRun != run) {
      for (void *p : it->second.blocks)
        std::free(p);
      it = buckets.erase(it);
    } else {
      ++it;
    }
  }
  ++run;
}

} // namespace kiln::rt
