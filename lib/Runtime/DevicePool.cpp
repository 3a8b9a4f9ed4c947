//===- DevicePool.cpp - device memory a CUDA run asks for -----------------===//

#include "DevicePool.h"

#include <algorithm>

namespace kiln::rt {

void *DevicePool::alloc(uint64_t bytes) {
  everUsed = true;
  size_t need = std::max<uint64_t>(bytes, 1);
  // The smallest spare block that holds it, if it wastes at most half.
  auto best = spare.end();
  for (auto it = spare.begin(); it != spare.end(); ++it)
    if (it->bytes >= need && it->bytes / 2 <= need &&
        (best == spare.end() || it->bytes < best->bytes))
      best = it;
  if (best != spare.end()) {
    live.push_back(*best);
    spare.erase(best);
    return (void *)(uintptr_t)live.back().p;
  }
  CUdeviceptr p = 0;
  if (!d)
    return nullptr;
  if (CUresult r = d->cuMemAlloc(&p, need); r != CUDA_SUCCESS) {
    error = cudaErrorText(*d, "cuMemAlloc", r) + " for " + std::to_string(need) +
            " bytes the model sized at run time";
    return nullptr;
  }
  live.push_back({p, need});
  return (void *)(uintptr_t)p;
}

void DevicePool::release(void *block) {
  auto it = std::find_if(live.begin(), live.end(),
                         [&](const Block &b) { return b.p == (CUdeviceptr)(uintptr_t)block; });
  if (it == live.end())
    return;
  spare.push_back(*it);
  live.erase(it);
}

void DevicePool::reclaim() {
  // A failed run may leave blocks it never released.
  spare.insert(spare.end(), live.begin(), live.end());
  live.clear();
}

void DevicePool::freeAll() {
  if (d)
    for (const auto *list : {&live, &spare})
      for (const Block &b : *list)
        d->cuMemFree(b.p);
  live.clear();
  spare.clear();
}

void *DevicePool::allocThunk(void *self, uint64_t bytes) {
  return static_cast<DevicePool *>(self)->alloc(bytes);
}

void DevicePool::releaseThunk(void *self, void *block, uint64_t) {
  static_cast<DevicePool *>(self)->release(block);
}

} // namespace kiln::rt
