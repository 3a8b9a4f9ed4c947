//===- MpiBuckets.cpp - reductions overlapped with the step ---------------===//
//
// all_reduce_start queues the gradient in the open bucket and returns; the
// bucket closes when it holds bucketBytes (KILN_ALLREDUCE_BUCKET_BYTES) or
// when the step waits for one of its parts, and a worker thread reduces
// closed buckets in order (one MPI call per bucket, its parts copied side
// by side), while the step computes the next gradients: PyTorch DDP's
// gradient buckets. Only the worker calls MPI once it runs
// (MPI_THREAD_SERIALIZED).
//
//===----------------------------------------------------------------------===//

#include "MpiComm.h"

#include <cstring>

namespace kiln::mpi {
namespace {

/// Queues the open bucket for the worker (the caller holds the lock).
void closeOpen(MpiComm &c) {
  if (!c.open)
    return;
  c.queue.push_back(std::move(c.open));
  c.open.reset();
  c.wake.notify_one();
}

/// Reduces one bucket (the worker, without the lock).
void reduceBucket(MpiComm &c, Bucket &b) {
  if (b.parts.size() == 1) {
    b.rc = reduceNow(c, b.parts[0].data, b.parts[0].count, b.dtype, b.op, b.error);
  } else {
    size_t size = kiln_dtype_size(kiln_dtype_t(b.dtype));
    c.staging.resize(b.bytes);
    uint64_t count = 0;
    for (const auto &p : b.parts) {
      std::memcpy(c.staging.data() + count * size, p.data, p.count * size);
      count += p.count;
    }
    b.rc = reduceNow(c, c.staging.data(), count, b.dtype, b.op, b.error);
    count = 0;
    for (const auto &p : b.parts) {
      std::memcpy(p.data, c.staging.data() + count * size, p.count * size);
      count += p.count;
    }
  }
}

void workerLoop(MpiComm &c) {
  std::unique_lock<std::mutex> lock(c.mutex);
  for (;;) {
    c.wake.wait(lock, [&] { return c.stop || !c.queue.empty(); });
    if (c.queue.empty())
      return; // stopped
    std::shared_ptr<Bucket> b = c.queue.front();
    c.queue.pop_front();
    if (!c.broken.empty()) { // the ranks have parted: no more MPI calls
      b->rc = 1;
      b->error = c.broken;
    } else {
      lock.unlock();
      reduceBucket(c, *b);
      lock.lock();
      if (b->rc)
        c.broken = b->error;
    }
    b->done = true;
    c.finished.notify_all();
  }
}

int32_t start(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op) {
  auto &c = *static_cast<MpiComm *>(impl);
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.started.count(data)) {
    c.error = "all_reduce_start on a buffer whose reduction was not waited for";
    return 1;
  }
  if (c.open && (c.open->dtype != dtype || c.open->op != op))
    closeOpen(c);
  if (!c.open) {
    c.open = std::make_shared<Bucket>();
    c.open->dtype = dtype;
    c.open->op = op;
  }
  c.open->parts.push_back({data, count});
  c.open->bytes += count * kiln_dtype_size(kiln_dtype_t(dtype));
  c.started[data] = c.open;
  if (c.open->bytes >= c.bucketBytes)
    closeOpen(c);
  return 0;
}

int32_t wait(void *impl, void *data) {
  auto &c = *static_cast<MpiComm *>(impl);
  std::unique_lock<std::mutex> lock(c.mutex);
  auto it = c.started.find(data);
  if (it == c.started.end())
    return 0;
  std::shared_ptr<Bucket> b = it->second;
  c.started.erase(it);
  if (b == c.open)
    closeOpen(c);
  // The worker's own deadline (each MPI call's) bounds this wait.
  c.finished.wait(lock, [&] { return b->done; });
  if (b->rc)
    c.error = b->error;
  return b->rc;
}

} // namespace

int32_t reduceQueued(MpiComm &c, void *data, uint64_t count, int32_t dtype, int32_t op) {
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    closeOpen(c); // what was started first is reduced first
  }
  if (int32_t rc = start(&c, data, count, dtype, op))
    return rc;
  return wait(&c, data);
}

void startWorker(MpiComm &c) {
  c.api.all_reduce_start = &start;
  c.api.all_reduce_wait = &wait;
  c.worker = std::thread([&c] { workerLoop(c); });
}

void stopWorker(MpiComm &c) {
  if (!c.worker.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    closeOpen(c);
    c.stop = true;
    c.wake.notify_one();
  }
  c.worker.join();
}

} // namespace kiln::mpi
