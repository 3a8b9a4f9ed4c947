//===- ThreadPool.cpp - the runtime's CPU thread pool ---------------------===//

#include "ThreadPool.h"

#include <cstdlib>

namespace kiln::rt {
namespace {
/// Chunk `i` of `chunks` over [0, n): sizes differ by at most one.
void chunkRange(int64_t n, int64_t chunks, int64_t i, int64_t &begin, int64_t &end) {
  int64_t base = n / chunks, extra = n % chunks;
  begin = i * base + std::min(i, extra);
  end = begin + base + (i < extra ? 1 : 0);
}
} // namespace

ThreadPool::ThreadPool(int threads) {
  // KILN_SPIN=0: workers block right away (for machines shared with other
  // busy processes, where spinning takes their cycles).
  if (const char *e = std::getenv("KILN_SPIN"))
    spinLimit = std::atoi(e) > 0 ? 20000 : 0;
  for (int i = 1; i < threads; ++i)
    workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (auto &w : workers)
    w.join();
}

void ThreadPool::parallelForThunk(void *pool, int64_t n, kiln_artifact_task_fn task,
                                  void *ctx) {
  static_cast<ThreadPool *>(pool)->parallelFor(n, task, ctx);
}

void ThreadPool::parallelFor(int64_t count, kiln_artifact_task_fn fn, void *data) {
  int64_t parts = std::min<int64_t>(count, size());
  if (parts <= 1) {
    if (count > 0)
      fn(data, 0, count);
    return;
  }
  {
    // Under the lock, so a worker deciding to block sees either the new
    // generation or is counted in `sleepers` before we read it below.
    std::lock_guard<std::mutex> lock(mutex);
    n = count;
    chunks = parts;
    task = fn;
    ctx = data;
    pending.store((int)parts - 1, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
  }
  if (sleepers.load(std::memory_order_seq_cst) > 0)
    wake.notify_all();
  int64_t begin, end;
  chunkRange(count, parts, 0, begin, end);
  fn(data, begin, end);
  for (unsigned spins = 0; pending.load(std::memory_order_acquire) != 0; ++spins)
    if (spins > 4096)
      std::this_thread::yield(); // a worker was descheduled: let it run
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    // Spin first: the next parallel loop usually starts within microseconds.
    uint64_t now = generation.load(std::memory_order_acquire);
    for (unsigned spins = 0; now == seen && spins < spinLimit; ++spins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      now = generation.load(std::memory_order_acquire);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex);
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      wake.wait(lock, [&] {
        return stopping || generation.load(std::memory_order_acquire) != seen;
      });
      sleepers.fetch_sub(1, std::memory_order_relaxed);
      if (stopping)
        return;
      now = generation.load(std::memory_order_acquire);
    }
    int64_t count, parts;
    kiln_artifact_task_fn fn;
    void *data;
    {
      // The job and its generation are read together under the lock that
      // published them. A worker left out of the job it woke for (fewer
      // chunks than workers) may find the next one published meanwhile:
      // it then takes that one, once, and never the old one (its caller
      // does not wait for workers it gave no chunk).
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping)
        return;
      seen = generation.load(std::memory_order_relaxed);
      count = n;
      parts = chunks;
      fn = task;
      data = ctx;
    }
    if (index >= parts)
      continue; // fewer chunks than workers this time
    int64_t begin, end;
    chunkRange(count, parts, index, begin, end);
    fn(data, begin, end);
    pending.fetch_sub(1, std::memory_order_acq_rel);
  }
}

} // namespace kiln::rt
