//===- FakeNccl.cpp - NCCL's entry points over MPI, for tests -------------===//
//
// Loaded by libkiln_nccl in place of libnccl.so.2 (KILN_NCCL_LIBRARY) when
// a CUDA step runs on the PTX emulator (test/emu), whose "device" memory is
// host memory and whose launches are done when they return: ncclAllReduce
// reduces the pointer over MPI_COMM_WORLD at once, ignoring the stream. The
// test is then of everything on Kiln's side: the CUDA step's collectives,
// the session's stream, the id sent over the bootstrap communicator.
//
//===----------------------------------------------------------------------===//

#include <mpi.h>

#include <cstring>

extern "C" {

// NCCL's type names (libkiln_nccl declares the same).
struct ncclUniqueId {
  char internal[128];
};
struct ncclComm;
using ncclComm_t = ncclComm *;

const char *ncclGetErrorString(int rc) { return rc ? "fake NCCL: MPI failed" : "no error"; }

int ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, "fake-nccl", 9);
  return 0;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  int size = 0, me = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  // Every rank must have rank 0's id (libkiln_nccl sends it).
  if (size != nranks || me != rank || std::memcmp(id.internal, "fake-nccl", 9) != 0)
    return 1;
  static char token;
  *comm = reinterpret_cast<ncclComm_t>(&token);
  return 0;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, ncclComm_t,
                  void *) {
  // f32 and f64 (NCCL's 7 and 8); sum, max, min, avg (0, 2, 3, 4).
  MPI_Datatype type = dtype == 7 ? MPI_FLOAT : dtype == 8 ? MPI_DOUBLE : MPI_DATATYPE_NULL;
  MPI_Op mpiOp = op == 2 ? MPI_MAX : op == 3 ? MPI_MIN : MPI_SUM;
  if (type == MPI_DATATYPE_NULL || send != recv)
    return 1;
  if (MPI_Allreduce(MPI_IN_PLACE, recv, int(count), type, mpiOp, MPI_COMM_WORLD) != MPI_SUCCESS)
    return 1;
  if (op == 4) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t i = 0; i < count; ++i)
      if (dtype == 7)
        static_cast<float *>(recv)[i] /= float(size);
      else
        static_cast<double *>(recv)[i] /= size;
  }
  return 0;
}

int ncclCommDestroy(ncclComm_t) { return 0; }
int ncclCommAbort(ncclComm_t) { return 0; }

} // extern "C"
