//===- DevicePool.h - device memory a CUDA run asks for -----------*- C++ -*-===//
//
// A CUDA host program allocates at run time the buffers sized by values
// read before the run (a Reshape to a shape given as data, NonZero's
// output, a Loop's state whose size changes): host->alloc and
// host->release of its session. A released block is handed out again at
// once, in stream order: the run's kernels and copies all go to one
// stream, so whatever the new owner enqueues runs after every queued use
// by the old one (cudaFreeAsync's rule). A Loop that allocates per
// iteration so needs one iteration's blocks, not one per iteration. All
// are freed with the session.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_DEVICEPOOL_H
#define KILN_LIB_RUNTIME_DEVICEPOOL_H

#include "CudaDriver.h"

#include <string>
#include <vector>

namespace kiln::rt {

class DevicePool {
public:
  explicit DevicePool(const CudaDriver *&driver) : d(driver) {}
  ~DevicePool() { freeAll(); }
  DevicePool(const DevicePool &) = delete;
  DevicePool &operator=(const DevicePool &) = delete;

  /// `bytes` of device memory (the CUDA context current), or null with
  /// `error` set.
  void *alloc(uint64_t bytes);
  /// A block alloc gave, reusable by the next alloc (stream order).
  void release(void *block);
  /// The run's stream has synchronized: blocks a failed run never
  /// released may be handed out.
  void reclaim();
  void freeAll();
  /// Whether any run allocated (such runs are not captured as a graph:
  /// their blocks may differ from run to run).
  bool used() const { return everUsed; }
  std::string error;

  /// kiln_artifact_host_t's alloc and release, `self` the pool.
  static void *allocThunk(void *self, uint64_t bytes);
  static void releaseThunk(void *self, void *block, uint64_t bytes);

private:
  struct Block {
    CUdeviceptr p;
    size_t bytes;
  };
  const CudaDriver *&d;
  std::vector<Block> live, spare;
  bool everUsed = false;
};

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_DEVICEPOOL_H
