/*===- mpi.h - Kiln's MPI communicator (libkiln_mpi) -------------*- C -*-===*
 *
 * Data-parallel training over MPI: a kiln_communicator_t (runtime.h) whose
 * all_reduce is MPI_Iallreduce, waited for with a deadline so a rank that
 * died or stopped is an error, never a hang. Link libkiln_mpi (and MPI);
 * the runtime itself does not depend on MPI. Run the program under mpirun.
 *
 * The deadline is KILN_COLLECTIVE_TIMEOUT seconds (default 600) of one
 * collective.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_MPI_H
#define KILN_MPI_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A communicator over MPI_COMM_WORLD (a duplicate of it), initializing MPI
 * first unless the program did (then `argc`/`argv` may be NULL). */
kiln_status_t kiln_mpi_init(int *argc, char ***argv, kiln_communicator_t **out_comm);
/* A communicator over the program's own communicator: `mpi_comm` points to
 * an MPI_Comm (duplicated; MPI must be initialized). */
kiln_status_t kiln_mpi_communicator(const void *mpi_comm, kiln_communicator_t **out_comm);
/* Frees the communicator; MPI_Finalize when kiln_mpi_init initialized MPI. */
void kiln_mpi_release(kiln_communicator_t *comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_MPI_H */
