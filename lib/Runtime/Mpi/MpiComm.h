//===- MpiComm.h - libkiln_mpi's communicator object ------------*- C++ -*-===//
//
// Shared by MpiCommunicator.cpp (the C API, reductions done now) and
// MpiBuckets.cpp (reductions started by the step and done by a worker
// thread, gathered into buckets).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_MPI_MPICOMM_H
#define KILN_LIB_RUNTIME_MPI_MPICOMM_H

#include "kiln/runtime.h"

#include <mpi.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::mpi {

/// Consecutive reductions of one dtype and op, reduced as one buffer.
struct Bucket {
  struct Part {
    void *data;
    uint64_t count;
  };
  std::vector<Part> parts;
  int32_t dtype = 0, op = 0;
  uint64_t bytes = 0;
  bool done = false; // under MpiComm::mutex
  int32_t rc = 0;
  std::string error;
};

struct MpiComm {
  kiln_communicator_t api{};
  MPI_Comm comm = MPI_COMM_NULL;
  bool ownsInit = false; // MPI_Finalize on release
  double timeoutSeconds = 600;
  std::string error;          // the last failure, for api.last_error
  std::vector<float> widened; // f16/bf16 data, as f32 (the reducing thread's)

  // Started reductions (the step's), when MPI allows a thread of ours:
  // the step's thread fills `open` and queues it full or at a wait; the
  // worker reduces the queue in order. Buckets close at the same points of
  // the step on every rank, so every rank issues the same reductions.
  uint64_t bucketBytes = uint64_t(4) << 20;
  std::shared_ptr<Bucket> open;
  std::map<void *, std::shared_ptr<Bucket>> started; // data -> its bucket, until waited
  std::deque<std::shared_ptr<Bucket>> queue;
  std::vector<uint8_t> staging; // the worker's: a bucket's parts side by side
  std::mutex mutex;
  std::condition_variable wake, finished;
  bool stop = false;
  std::string broken; // a failed bucket's message: later ones fail at once
  std::thread worker;
};

/// Checks and reduces `count` elements at `data` now, on this thread.
int32_t reduceNow(MpiComm &c, void *data, uint64_t count, int32_t dtype, int32_t op,
                  std::string &error);
/// Starts the worker thread (the communicator then offers start and wait).
void startWorker(MpiComm &c);
/// Stops and joins it.
void stopWorker(MpiComm &c);
/// A reduction done by the worker after those started before it.
int32_t reduceQueued(MpiComm &c, void *data, uint64_t count, int32_t dtype, int32_t op);

} // namespace kiln::mpi

#endif // KILN_LIB_RUNTIME_MPI_MPICOMM_H
