//===- BlockCache.h - a session's blocks for buffers sized at run time ----===//
//
// Models with dynamic dimensions allocate the buffers whose size depends
// on the call through the host (kiln_artifact_host_t::alloc). A session
// keeps the blocks a call gave back, by size, for the next call: a model
// run at the same shapes allocates nothing after its first call, and no
// page is mapped fresh. Blocks of a size the last call did not use are
// returned to the system when it ends, so changing shapes does not pile
// them up.
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

  /// A call ended: free the blocks of sizes it did not ask for.
  void endRun();

private:
  struct Bucket {
    std::vector<void *> blocks;
    uint64_t lastRun = 0;
  };
  std::mutex mutex;
  std::unordered_map<uint64_t, Bucket> buckets;
  uint64_t run = 1;
};

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_BLOCKCACHE_H
