# Sourced by check.sh and check-nccl.sh: the arguments (KILN DATA_DIR
# WORK_DIR), a fresh work folder to run in, and mpirun as root,
# oversubscribed, never left hanging.
set -eu
kiln=$1
data=$2
work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { n=$1; shift; timeout 120 mpirun -np "$n" --oversubscribe --bind-to none "$@"; }
