//===- BlockCache.h - a session's blocks for buffers sized at run time ----===//
//
// Models with dynamic dimensions allocate the buffers whose size depends
// on the call through the host (kiln_artifact_host_t::alloc). A session
// keeps the blocks a call gave back for the next request and the next
// call: a model run at the same shapes allocates nothing after its first
// call, and no page is mapped fresh. A request takes the block given back
// last among those at least its size and at most twice it, whatever size
// it was made for: as the arena's plan does for static shapes, a buffer
// reuses memory just written and still in cache. (Kept by exact size,
// each size had memory of its own, a dynamic ResNet-50 at batch 1 wrote
// each layer's buffers into lines long evicted: 83.5 ms on a Zen 2 core,
// its arena-planned build 78.) Blocks no request of the last call took
// are returned to the system when it ends, so changing shapes does not
// pile them up.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_BLOCKCACHE_H
#define KILN_LIB_RUNTIME_BLOCKCACHE_H

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::rt {

class BlockCache {
public:
  BlockCache() = default;
  BlockCache(const BlockCache &) = delete;
  BlockCache &operator=(const BlockCache &) = delete;
  ~BlockCache();

  /// kiln_artifact_host_t::alloc and ::release.
  static void *allocThunk(void *self, uint64_t bytes);
  static void releaseThunk(void *self, void *block, uint64_t bytes);

  /// A call ended: free the blocks it did not take.
  void endRun();

private:
  struct Block {
    void *p;
    uint64_t capacity;
    uint64_t lastRun; // the call that last took it
  };
  std::mutex mutex;
  std::vector<Block> free;                            // in the order given back
  std::unordered_map<void *, Block> taken;            // handed out, not back yet
  uint64_t run = 1;
};

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_BLOCKCACHE_H
