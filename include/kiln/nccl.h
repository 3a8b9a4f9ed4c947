/*===- nccl.h - Kiln's NCCL communicator (libkiln_nccl) ----------*- C -*-===*
 *
 * Data-parallel training of CUDA artifacts: a kiln_communicator_t whose
 * all_reduce_device is ncclAllReduce on the session's stream. NCCL itself is
 * loaded at run time (libnccl.so.2 from the CUDA toolkit, or the library
 * KILN_NCCL_LIBRARY names), so nothing links it. Rank 0's NCCL unique id
 * reaches the others through `bootstrap` (an MPI communicator of host
 * memory, kiln/mpi.h), which also does the communicator's host-memory
 * reductions (joining a trainer). Each process uses its GPU 0 (give each
 * rank its own GPU with CUDA_VISIBLE_DEVICES), as the CUDA session does.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_NCCL_H
#define KILN_NCCL_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over every rank of `bootstrap` (which must outlive it). */
kiln_status_t kiln_nccl_communicator(const kiln_communicator_t *bootstrap,
                                     kiln_communicator_t **out_comm);
void kiln_nccl_release(kiln_communicator_t *comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_NCCL_H */
