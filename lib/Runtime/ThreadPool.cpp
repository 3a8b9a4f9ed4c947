//===- ThreadPool.cpp - the runtime's CPU thread pool ---------------------===//

#include "ThreadPool.h"

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
    std::lock_guard<std::mutex> lock(mutex);
    n = count;
    chunks = parts;
    task = fn;
    ctx = data;
    pending = (int)parts - 1;
    ++generation;
  }
  wake.notify_all();
  int64_t begin, end;
  chunkRange(count, parts, 0, begin, end);
  fn(data, begin, end);
  std::unique_lock<std::mutex> lock(mutex);
  finished.wait(lock, [this] { return pending == 0; });
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    int64_t count, parts;
    kiln_artifact_task_fn fn;
    void *data;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
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
    std::lock_guard<std::mutex> lock(mutex);
    if (--pending == 0)
      finished.notify_one();
  }
}

} // namespace kiln::rt
