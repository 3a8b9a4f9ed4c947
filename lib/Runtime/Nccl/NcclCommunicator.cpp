//===- NcclCommunicator.cpp - kiln_communicator_t over NCCL ---------------===//
//
// NCCL is dlopen'ed: the few entry points below, declared with the types
// of NCCL's ABI (nccl.h, NCCL 2.x), so Kiln builds without NCCL and a test
// can substitute a library of its own (KILN_NCCL_LIBRARY).
//
//===----------------------------------------------------------------------===//

#include "kiln/nccl.h"

#include "../Model.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using kiln::rt::makeStatus;

// NCCL's ABI (nccl.h), its type names too: a sanitizer build checks that a
// function is called through a pointer of its own type (FakeNccl.cpp
// declares the same; enums are passed as int).
extern "C" {
struct ncclUniqueId {
  char internal[128];
};
struct ncclComm;
}

namespace {

using NcclUniqueId = ncclUniqueId;
using NcclComm = ncclComm *;
enum : int { kNcclSuccess = 0 };
enum : int { kNcclInt32 = 2, kNcclUint32 = 3, kNcclInt64 = 4, kNcclUint64 = 5, kNcclFloat16 = 6,
             kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9 };
enum : int { kNcclSum = 0, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4 };

struct Nccl {
  void *handle = nullptr;
  int (*getUniqueId)(NcclUniqueId *) = nullptr;
  int (*commInitRank)(NcclComm *, int, NcclUniqueId, int) = nullptr;
  int (*allReduce)(const void *, void *, size_t, int, int, NcclComm, void *) = nullptr;
  int (*commDestroy)(NcclComm) = nullptr;
  int (*commAbort)(NcclComm) = nullptr;
  const char *(*errorString)(int) = nullptr;
};

struct NcclCommunicator {
  kiln_communicator_t api{};
  const kiln_communicator_t *bootstrap = nullptr;
  Nccl nccl;
  NcclComm comm = nullptr;
  std::string error;
};

int dtypeOf(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: return kNcclFloat32;
  case KILN_DTYPE_F64: return kNcclFloat64;
  case KILN_DTYPE_F16: return kNcclFloat16;
  case KILN_DTYPE_BF16: return kNcclBfloat16;
  case KILN_DTYPE_I32: return kNcclInt32;
  case KILN_DTYPE_U32: return kNcclUint32;
  case KILN_DTYPE_I64: return kNcclInt64;
  case KILN_DTYPE_U64: return kNcclUint64;
  default: return -1;
  }
}

int32_t allReduceDevice(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op,
                        void *stream) {
  auto &c = *static_cast<NcclCommunicator *>(impl);
  int type = dtypeOf(dtype);
  int ncclOp = op == KILN_REDUCE_MEAN  ? kNcclAvg
               : op == KILN_REDUCE_MAX ? kNcclMax
               : op == KILN_REDUCE_MIN ? kNcclMin
                                       : kNcclSum;
  if (type < 0 || op < KILN_REDUCE_SUM || op > KILN_REDUCE_MIN) {
    c.error = std::string("NCCL all-reduce of ") + kiln_dtype_name(kiln_dtype_t(dtype)) +
              " data, reduction " + std::to_string(op) + ": not supported";
    return 1;
  }
  if (int rc = c.nccl.allReduce(data, data, count, type, ncclOp, c.comm, stream)) {
    c.error = std::string("ncclAllReduce: ") + c.nccl.errorString(rc);
    return 1;
  }
  return 0;
}

// Host memory: the bootstrap's.
int32_t allReduceHost(void *impl, void *data, uint64_t count, int32_t dtype, int32_t op) {
  auto &c = *static_cast<NcclCommunicator *>(impl);
  return c.bootstrap->all_reduce(c.bootstrap->impl, data, count, dtype, op);
}

const char *lastError(void *impl) {
  auto &c = *static_cast<NcclCommunicator *>(impl);
  if (!c.error.empty())
    return c.error.c_str();
  return c.bootstrap->last_error ? c.bootstrap->last_error(c.bootstrap->impl) : "";
}

void abortAll(void *impl, int32_t code) {
  auto &c = *static_cast<NcclCommunicator *>(impl);
  if (c.comm && c.nccl.commAbort)
    c.nccl.commAbort(c.comm);
  c.comm = nullptr;
  c.bootstrap->abort(c.bootstrap->impl, code);
}

/// Loads NCCL's entry points; the library's name on failure.
kiln_status_t loadNccl(Nccl &n) {
  const char *path = std::getenv("KILN_NCCL_LIBRARY");
  std::string name = path && *path ? path : "libnccl.so.2";
  n.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!n.handle)
    return makeStatus(KILN_NOT_FOUND, "cannot load NCCL (" + name + "): " + dlerror() +
                                          " (install it with the CUDA toolkit, or name it with "
                                          "KILN_NCCL_LIBRARY)");
  auto get = [&](const char *symbol, auto &fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(n.handle, symbol));
    return fn != nullptr;
  };
  if (!get("ncclGetUniqueId", n.getUniqueId) || !get("ncclCommInitRank", n.commInitRank) ||
      !get("ncclAllReduce", n.allReduce) || !get("ncclCommDestroy", n.commDestroy) ||
      !get("ncclGetErrorString", n.errorString))
    return makeStatus(KILN_NOT_FOUND, name + " lacks NCCL's entry points (ncclAllReduce, ...)");
  get("ncclCommAbort", n.commAbort);
  return nullptr;
}

} // namespace

extern "C" {

kiln_status_t kiln_nccl_communicator(const kiln_communicator_t *bootstrap,
                                     kiln_communicator_t **out) {
  if (!bootstrap || !out || !bootstrap->all_reduce)
    return makeStatus(KILN_INVALID_ARGUMENT, "kiln_nccl_communicator: null argument");
  *out = nullptr;
  auto c = std::make_unique<NcclCommunicator>();
  c->bootstrap = bootstrap;
  if (kiln_status_t st = loadNccl(c->nccl))
    return st;
  // Rank 0's id everywhere: a sum to which the other ranks add zeros.
  NcclUniqueId id{};
  if (bootstrap->rank == 0)
    if (int rc = c->nccl.getUniqueId(&id))
      return makeStatus(KILN_INTERNAL, std::string("ncclGetUniqueId: ") + c->nccl.errorString(rc));
  uint64_t words[sizeof id / 8];
  std::memcpy(words, &id, sizeof id);
  if (bootstrap->all_reduce(bootstrap->impl, words, sizeof id / 8, KILN_DTYPE_U64,
                            KILN_REDUCE_SUM))
    return makeStatus(KILN_INTERNAL, std::string("could not send NCCL's id to every rank: ") +
                                         bootstrap->last_error(bootstrap->impl));
  std::memcpy(&id, words, sizeof id);
  if (int rc = c->nccl.commInitRank(&c->comm, bootstrap->size, id, bootstrap->rank))
    return makeStatus(KILN_INTERNAL, std::string("ncclCommInitRank: ") + c->nccl.errorString(rc));
  c->api.impl = c.get();
  c->api.rank = bootstrap->rank;
  c->api.size = bootstrap->size;
  c->api.all_reduce = &allReduceHost;
  c->api.last_error = &lastError;
  c->api.abort = &abortAll;
  c->api.all_reduce_device = &allReduceDevice;
  *out = &c.release()->api;
  return nullptr;
}

void kiln_nccl_release(kiln_communicator_t *comm) {
  if (!comm)
    return;
  std::unique_ptr<NcclCommunicator> c(static_cast<NcclCommunicator *>(comm->impl));
  if (c->comm)
    c->nccl.commDestroy(c->comm);
  // NCCL stays loaded: its threads may outlive the communicator.
}

} // extern "C"
