#!/bin/sh
# A CUDA training step on 2 ranks (kiln train --distributed on a CUDA
# artifact: libkiln_nccl, its id sent over MPI), run by the PTX emulator
# with a fake NCCL (KILN_CUDA_DRIVER, KILN_NCCL_LIBRARY set by ctest): 5
# Adam steps on a global batch of 8 end where one process on the whole
# batch does.
# usage: check-nccl.sh KILN DATA_DIR WORK_DIR
. "$(dirname "$0")/setup.sh"
"$kiln" compile "$data/mlp.onnx" --train --loss=cross_entropy --optimizer=adam --lr=1e-3 \
  --distributed --target=cuda --dim batch=1..8 -o mlp-cuda.so
in="--input input=$data/mlp_input.npy --label $data/mlp_label.npy"
"$kiln" train mlp-cuda.so $in --steps 5 --save-params one > one.log
mpi 2 -x KILN_CUDA_DRIVER -x KILN_NCCL_LIBRARY "$kiln" train mlp-cuda.so --distributed $in --steps 5 --save-params two > two.log
"$kiln" compare two one --rtol 1e-5 --atol 1e-7 > two.cmp ||
  { cat two.cmp; echo "FAIL: the CUDA step on 2 ranks differs from 1 process"; exit 1; }
tail -1 one.log
tail -1 two.log
echo "PASS"
