//===- ThreadPool.h - the runtime's CPU thread pool -------------*- C++ -*-===//
//
// A fixed set of workers that run one parallel_for at a time: the range
// [0, n) is cut into contiguous chunks, the calling thread takes one, and
// the call returns when all are done. Compiled kernels call it through
// kiln_artifact_host_t (ArtifactFormat.h).
//
// A model runs dozens of parallel loops of a few microseconds each, back to
// back; waking a thread blocked on a futex costs about as much (more in a
// VM). So workers spin on the job counter for a while after each job
// (about 100 us) before they block, and the caller spins for the workers'
// chunks to finish.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_THREADPOOL_H
#define KILN_LIB_RUNTIME_THREADPOOL_H

#include "kiln/ArtifactFormat.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::rt {

class ThreadPool {
public:
  /// `threads` counts the caller: 1 means no workers at all.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return (int)workers.size() + 1; }
  void parallelFor(int64_t n, kiln_artifact_task_fn task, void *ctx);

  /// The C entry the artifact calls.
  static void parallelForThunk(void *pool, int64_t n, kiln_artifact_task_fn task, void *ctx);

private:
  void workerLoop(int index);

  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake;
  // The job being run, published by the release store to `generation`
  // (which changes once per parallelFor call) and read after an acquire
  // load of it.
  std::atomic<uint64_t> generation{0};
  int64_t n = 0, chunks = 0;
  kiln_artifact_task_fn task = nullptr;
  void *ctx = nullptr;
  std::atomic<int> pending{0};  // workers' chunks not finished yet
  std::atomic<int> sleepers{0}; // workers blocked (or about to block) on `wake`
  bool stopping = false;        // under `mutex`
  unsigned spinLimit = 20000;   // pause loops before a worker blocks
};

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_THREADPOOL_H
