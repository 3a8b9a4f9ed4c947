#!/bin/sh
# Data-parallel training over MPI (kiln train --distributed under mpirun,
# oversubscribed on this machine): 2 and 4 ranks, each on its shard of a
# global batch of 8, end 20 Adam steps with the parameters one process
# reaches on the whole batch (a CNN's batch norm synchronized); a checkpoint
# resumes exactly; overlapped and bucketed reductions equal synchronous
# ones; a batch the ranks cannot share, different artifacts on different
# ranks, a rank that stops early or is killed, and an artifact compiled
# without --distributed are errors that end every rank, never a hang.
# usage: check.sh KILN DATA_DIR WORK_DIR
. "$(dirname "$0")/setup.sh"

# The key projection's bias (qkv.bias, elements 64-127) and the CNN's
# convolution bias before its batch norm (b1) have gradients of zero up to
# rounding (softmax ignores a shift shared by all keys; batch norm removes
# any per-channel shift); Adam turns that rounding into full lr-sized steps,
# which no two summation orders agree on, so they are frozen here.
train_model() { # name model input loss [compile flags]
  name=$1 model=$2 input=$3 loss=$4; shift 4
  "$kiln" compile "$model" --train --loss="$loss" --optimizer=adam --lr=1e-3 \
    --distributed "$@" -o "$name.so"
  in="--input $input=$data/${name}_input.npy --label $data/${name}_label.npy"
  "$kiln" train "$name.so" $in --steps 20 --save-params "$name-1" > "$name-1.log"
  for n in 2 4; do
    mpi "$n" "$kiln" train "$name.so" --distributed --threads 1 $in --steps 20 \
      --save-params "$name-$n" > "$name-$n.log"
    "$kiln" compare "$name-$n" "$name-1" --rtol 1e-5 --atol "${atol:-1e-7}" > "$name-$n.cmp" ||
      { cat "$name-$n.cmp"; echo "FAIL: $name on $n ranks differs from 1 process"; exit 1; }
    # Rank 0 printed the global mean loss, the single process's.
    tail -1 "$name-$n.log" | awk -v want="$(tail -1 "$name-1.log")" '
      { split($2, g, "="); split(want, w, " "); split(w[2], v, "=");
        d = g[2] - v[2]; if (d < 0) d = -d;
        if (d > 1e-5 * (v[2] < 0 ? -v[2] : v[2]) + 1e-7) { print "FAIL: loss " $0 " vs " want; exit 1 } }'
  done
  echo "ok: $name, 2 and 4 ranks"
}
train_model mlp "$data/mlp.onnx" input cross_entropy
# The transformer's other weights see gradients of a few ulps too (a
# near-zero element of its QKV and first feed-forward weights: 4.7e-7
# apart after 20 steps on an AVX2 Zen 2, whose tiles sum in another order):
# an absolute tolerance of 1e-6, a thousandth of the learning rate.
atol=1e-6
train_model transformer "$data/transformer.onnx" input mse --freeze qkv.bias
atol=1e-7
# SyncBatchNorm: batch statistics over the global batch, so the ranks' run
# equals the single process's, running statistics included.
train_model cnn "$data/../lit/Lowering/Artifact/Inputs/cnn-train-dynamic.onnxtxt" x mse \
  --sync-batch-norm --freeze b1

# A checkpoint (parameters and Adam's state) resumes exactly: 10 + 10 steps
# on 2 ranks end where 20 do.
in="--input input=$data/mlp_input.npy --label $data/mlp_label.npy"
mpi 2 "$kiln" train mlp.so --distributed --threads 1 $in --steps 10 --save-params half > /dev/null
mpi 2 "$kiln" train mlp.so --distributed --threads 1 $in --steps 10 --load-params half \
  --save-params resumed > /dev/null
"$kiln" compare resumed mlp-2 --rtol 0 --atol 0 > resume.cmp ||
  { cat resume.cmp; echo "FAIL: the resumed run differs"; exit 1; }
"$kiln" compare resumed/optimizer mlp-2/optimizer --rtol 0 --atol 0 > resume-state.cmp ||
  { cat resume-state.cmp; echo "FAIL: the resumed optimizer state differs"; exit 1; }
echo "ok: checkpoint resumes exactly"

# The reductions run on libkiln_mpi's worker thread, gathered into buckets,
# while the step goes on; done one by one on the step's thread, or in tiny
# buckets, the result is the same bit for bit.
mpi 2 -x KILN_ALLREDUCE_ASYNC=0 "$kiln" train mlp.so --distributed --threads 1 $in --steps 20 \
  --save-params sync > /dev/null
mpi 2 -x KILN_ALLREDUCE_BUCKET_BYTES=300 "$kiln" train mlp.so --distributed --threads 1 $in \
  --steps 20 --save-params small > /dev/null
for run in sync small; do
  "$kiln" compare "$run" mlp-2 --rtol 0 --atol 0 > "$run.cmp" ||
    { cat "$run.cmp"; echo "FAIL: $run reductions differ"; exit 1; }
done
echo "ok: overlapped, bucketed and synchronous reductions agree"

# An artifact compiled for one rank's share (the example's static batch of
# 4, the same weights): 2 ranks on the global 8 end where the dynamic one
# does; on 4 ranks (shares of 2) it is an error naming the batches.
"$kiln" compile "$data/../../examples/mlp/model.onnx" --train --loss=cross_entropy \
  --optimizer=adam --lr=1e-3 --distributed -o static4.so
mpi 2 "$kiln" train static4.so --distributed --threads 1 $in --steps 20 --save-params static \
  > /dev/null
"$kiln" compare static mlp-2 --rtol 1e-5 --atol 1e-7 > static.cmp ||
  { cat static.cmp; echo "FAIL: the static per-rank artifact differs"; exit 1; }
echo "ok: an artifact for one rank's share"

expect_error() { # what pattern command...
  what=$1 pattern=$2; shift 2
  if "$@" > "$what.out" 2>&1; then
    cat "$what.out"; echo "FAIL: $what succeeded"; exit 1
  fi
  grep -q "$pattern" "$what.out" || { cat "$what.out"; echo "FAIL: $what: no '$pattern'"; exit 1; }
  echo "ok: $what"
}
expect_error indivisible "a batch of 8, which 3 ranks cannot share equally" \
  mpi 3 "$kiln" train mlp.so --distributed --threads 1 $in
"$kiln" compile "$data/mlp.onnx" --train --loss=cross_entropy --optimizer=adam --lr=1e-2 \
  --distributed -o other.so
expect_error mismatch "the ranks run different artifacts" \
  mpi 2 sh -c "exec \"$kiln\" train \$([ \$OMPI_COMM_WORLD_RANK = 0 ] && echo mlp.so || echo other.so) \
    --distributed --threads 1 $in"
expect_error stopped "got no answer from the other ranks in 3 s" \
  mpi 2 -x KILN_COLLECTIVE_TIMEOUT=3 sh -c "exec \"$kiln\" train mlp.so --distributed \
    --threads 1 $in --steps \$([ \$OMPI_COMM_WORLD_RANK = 0 ] && echo 5 || echo 1)"
# A rank killed mid-run: mpirun ends the others at once.
expect_error killed "exited on signal 9" \
  mpi 2 sh -c "if [ \$OMPI_COMM_WORLD_RANK = 1 ]; then (sleep 1; kill -9 \$\$) & fi; \
    exec \"$kiln\" train mlp.so --distributed --threads 1 $in --steps 1000000"
expect_error share "but the artifact takes a batch of 4 (compile it for 2" \
  mpi 4 "$kiln" train static4.so --distributed --threads 1 $in
"$kiln" compile "$data/mlp.onnx" --train --loss=cross_entropy -o single.so
expect_error single "compile it with --train --distributed" \
  mpi 2 "$kiln" train single.so --distributed --threads 1 $in
echo "PASS"
