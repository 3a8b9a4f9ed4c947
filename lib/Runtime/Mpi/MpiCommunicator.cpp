//===- MpiCommunicator.cpp - kiln_communicator_t over MPI -----------------===//
//
// all_reduce is MPI_Iallreduce in place, then MPI_Test until done or until
// the deadline: a rank that died, stopped early or hangs must end the run
// with an error, not leave the others blocked in MPI_Allreduce forever.
// Half-precision data (which MPI has no type for) is reduced in f32.
//
//===----------------------------------------------------------------------===//

#include "kiln/mpi.h"

#include "MpiComm.h"
#include "../Model.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using kiln::mpi::MpiComm;
using kiln::rt::makeStatus;

namespace {

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

MPI_Datatype mpiType(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: return MPI_FLOAT;
  case KILN_DTYPE_F64: return MPI_DOUBLE;
  case KILN_DTYPE_I32: return MPI_INT32_T;
  case KILN_DTYPE_I64: return MPI_INT64_T;
  case KILN_DTYPE_U32: return MPI_UINT32_T;
  case KILN_DTYPE_U64: return MPI_UINT64_T;
  default: return MPI_DATATYPE_NULL;
  }
}

float halfToFloat(uint16_t h, bool bf16) {
  uint32_t bits;
  if (bf16) {
    bits = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
      bits = sign | 0x7f800000 | (man << 13);
    else if (exp != 0)
      bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (man == 0)
      bits = sign;
    else { // subnormal: normalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f, bool bf16) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (bf16) {
    if ((x & 0x7fffffff) > 0x7f800000)
      return uint16_t((x >> 16) | 0x40); // NaN stays NaN
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16); // round to nearest even
  }
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return uint16_t(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 0x1f)
    return uint16_t(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10)
      return uint16_t(sign);
    man |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exp) << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return uint16_t(half);
}

int32_t fail(std::string &error, std::string message) {
  error = std::move(message);
  return 1;
}

/// MPI_Iallreduce in place, waited for until the deadline.
int32_t reduceInPlace(MpiComm &c, void *data, uint64_t count, MPI_Datatype type, MPI_Op op,
                      const char *what, std::string &error) {
  if (count > uint64_t(INT32_MAX))
    return fail(error, "all-reduce of " + std::to_string(count) + " elements: more than MPI's int count");
  MPI_Request request;
  if (int rc = MPI_Iallreduce(MPI_IN_PLACE, data, int(count), type, op, c.comm, &request))
    return fail(error, "MPI_Iallreduce: " + mpiError(rc));
  auto start = std::chrono::steady_clock::now();
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE))
      return fail(error, "MPI_Test: " + mpiError(rc));
    if (done)
      return 0;
    std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (waited.count() > c.timeoutSeconds)
      return fail(error, "all-reduce of " + std::to_string(count) + " " + what +
                         " elements got no answer from the other ranks in " +
                         std::to_string(int(c.timeoutSeconds)) +
                         " s (KILN_COLLECTIVE_TIMEOUT): a rank died, stopped early or hangs");
    // Spin briefly (a small reduction is done at once), then mostly yield
    // the core to the step's threads: MPI progresses only inside MPI_Test.
    if (polls > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(polls > 100000 ? 1000 : 20));
  }
}

} // namespace

/// The reduction, done now on the calling thread (the worker's, when there
/// is one); a failure's message in `error`.
int32_t kiln::mpi::reduceNow(MpiComm &c, void *data, uint64_t count, int32_t dtype, int32_t op,
                             std::string &error) {
  if (!count)
    return 0;
  bool half = dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16;
  bool floating = half || dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F64;
  MPI_Datatype type = half ? MPI_FLOAT : mpiType(dtype);
  if (type == MPI_DATATYPE_NULL)
    return fail(error, std::string("all-reduce of ") + kiln_dtype_name(kiln_dtype_t(dtype)) +
                       " data is not supported");
  if (op == KILN_REDUCE_MEAN && !floating)
    return fail(error, "the mean over ranks is for floating-point data");
  MPI_Op mpiOp = op == KILN_REDUCE_MAX ? MPI_MAX : op == KILN_REDUCE_MIN ? MPI_MIN : MPI_SUM;
  if (op < KILN_REDUCE_SUM || op > KILN_REDUCE_MIN)
    return fail(error, "unknown reduction " + std::to_string(op));
  const char *name = kiln_dtype_name(kiln_dtype_t(dtype));
  void *buffer = data;
  if (half) {
    c.widened.resize(count);
    auto *h = static_cast<const uint16_t *>(data);
    for (uint64_t i = 0; i < count; ++i)
      c.widened[i] = halfToFloat(h[i], dtype == KILN_DTYPE_BF16);
    buffer = c.widened.data();
  }
  if (int32_t rc = reduceInPlace(c, buffer, count, type, mpiOp, name, error))
    return rc;
  if (op == KILN_REDUCE_MEAN && c.api.size > 1) {
    if (dtype == KILN_DTYPE_F64) {
      auto *v = static_cast<double *>(buffer);
      for (uint64_t i = 0; i < count; ++i)
        v[i] /= c.api.size;
    } else {
      auto *v = static_cast<float *>(buffer);
      for (uint64_t i = 0; i < count; ++i)
        v[i] /= float(c.api.size);
    }
  }
  if (half) {
    auto *h = static_cast<uint16_t *>(data);
    for (uint64_t i = 0; i < count; ++i)
      h[i] = floatToHalf(c.widened[i], dtype == KILN_DTYPE_BF16);
  }
  return 0;
}

namespace {

int32_t allReduce(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op) {
  auto &c = *static_cast<MpiComm *>(impl);
  c.error.clear();
  if (c.api.size == 1)
    return 0; // one rank: every reduction is the data itself
  if (c.worker.joinable()) // after the started ones, in order
    return kiln::mpi::reduceQueued(c, data, count, dtype, op);
  return kiln::mpi::reduceNow(c, data, count, dtype, op, c.error);
}

const char *lastError(void *impl) { return static_cast<MpiComm *>(impl)->error.c_str(); }

void abortAll(void *impl, int32_t code) {
  MPI_Abort(static_cast<MpiComm *>(impl)->comm, code ? code : 1);
}

kiln_status_t wrap(MPI_Comm comm, bool ownsInit, kiln_communicator_t **out) {
  auto c = std::make_unique<MpiComm>();
  if (int rc = MPI_Comm_dup(comm, &c->comm))
    return makeStatus(KILN_INTERNAL, "MPI_Comm_dup: " + mpiError(rc));
  // Failures come back as codes (reported with the rank), not as an abort
  // inside MPI.
  MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->comm, &c->api.rank);
  MPI_Comm_size(c->comm, &c->api.size);
  for (auto [name, value] : {std::pair{"KILN_COLLECTIVE_TIMEOUT", &c->timeoutSeconds},
                             std::pair{"KILN_ALLREDUCE_BUCKET_BYTES", (double *)nullptr}}) {
    const char *t = std::getenv(name);
    if (!t)
      continue;
    char *end = nullptr;
    double number = std::strtod(t, &end);
    if (end == t || *end || !(number > 0))
      return makeStatus(KILN_INVALID_ARGUMENT,
                        std::string(name) + " must be a number > 0, not '" + t + "'");
    if (value)
      *value = number;
    else
      c->bucketBytes = uint64_t(number);
  }
  c->ownsInit = ownsInit;
  c->api.impl = c.get();
  c->api.all_reduce = &allReduce;
  c->api.last_error = &lastError;
  c->api.abort = &abortAll;
  // A worker thread reduces the step's gradients while it goes on, where
  // MPI lets a second thread call it (KILN_ALLREDUCE_ASYNC=0: never).
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  const char *async = std::getenv("KILN_ALLREDUCE_ASYNC");
  if (c->api.size > 1 && level >= MPI_THREAD_SERIALIZED && !(async && std::string(async) == "0"))
    kiln::mpi::startWorker(*c);
  *out = &c.release()->api;
  return nullptr;
}

} // namespace

extern "C" {

kiln_status_t kiln_mpi_init(int *argc, char ***argv, kiln_communicator_t **out) {
  if (!out)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_mpi_init: null out_comm");
  *out = nullptr;
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized)
    if (int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided))
      return makeStatus(KILN_INTERNAL, "MPI_Init_thread: " + mpiError(rc));
  return wrap(MPI_COMM_WORLD, !initialized, out);
}

kiln_status_t kiln_mpi_communicator(const void *mpiComm, kiln_communicator_t **out) {
  if (!out || !mpiComm)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_mpi_communicator: null argument");
  *out = nullptr;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return makeStatus(KILN_FAILED_PRECONDITION, "kiln_mpi_communicator: MPI is not initialized");
  return wrap(*static_cast<const MPI_Comm *>(mpiComm), false, out);
}

void kiln_mpi_release(kiln_communicator_t *comm) {
  if (!comm)
    return;
  std::unique_ptr<MpiComm> c(static_cast<MpiComm *>(comm->impl));
  kiln::mpi::stopWorker(*c);
  MPI_Comm_free(&c->comm);
  if (c->ownsInit) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
}

} // extern "C"
