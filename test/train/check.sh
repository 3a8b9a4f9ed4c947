#!/bin/sh
# Training against PyTorch (fixtures from make_fixtures.py): for each example
# model, compile the training step with SGD and with Adam(W), take one step
# on the committed input and label, and compare the gradients and the updated
# parameters with PyTorch's. Usage: check.sh KILN FIXTURES EXAMPLES WORKDIR
# [cuda]: with cuda, the steps are compiled for CUDA and run wherever
# KILN_CUDA_DRIVER points (the PTX emulator in CI), at tf32's tolerances.
set -eu
KILN=$1 FIX=$2 EX=$3 WORK=$4 TARGET=${5:-cpu}
RTOL=1e-4 ATOL=1e-6
if [ "$TARGET" = cuda ]; then RTOL=1e-2 ATOL=1e-4; fi
mkdir -p "$WORK"
fail=0
step() { # model loss fixture-subfolder params-atol optimizer-flags...
  model=$1 loss=$2 sub=$3 patol=$4; shift 4
  # Adam's first step moves every element by about lr, whatever the size of
  # its gradient: tf32's noise flips the near-zero ones, so a CUDA Adam step
  # is not comparable element by element (SGD with momentum is).
  if [ "$TARGET" = cuda ] && [ "$sub" = adam ]; then return; fi
  so="$WORK/$model-$sub.so"
  "$KILN" compile "$EX/$model/model.onnx" --train --loss="$loss" --target="$TARGET" "$@" -o "$so"
  input=$("$KILN" inspect "$so" | sed -n '/^inputs:/{n;p;q}' | sed 's/^ *\([^:]*\):.*/\1/')
  rm -rf "$WORK/$model-$sub"
  "$KILN" train "$so" --input "$input=$EX/$model/input.npy" --label "$FIX/$model/label.npy" \
    --steps 1 --save-params "$WORK/$model-$sub/params" --save-grads "$WORK/$model-$sub/grads"
  # Gradients do not depend on the optimizer: checked once, with SGD.
  if [ "$sub" = sgd ]; then
    "$KILN" compare "$WORK/$model-$sub/grads" "$FIX/$model/grads" --rtol $RTOL --atol $ATOL || fail=1
  fi
  "$KILN" compare "$WORK/$model-$sub/params" "$FIX/$model/$sub" --rtol $RTOL --atol "$patol" || fail=1
}
step mlp cross_entropy sgd $ATOL --optimizer=sgd --lr=0.1 --momentum=0.9 --weight-decay=1e-3
step mlp cross_entropy adam $ATOL --optimizer=adam --lr=1e-2
step cnn cross_entropy sgd $ATOL --optimizer=sgd --lr=0.05 --momentum=0.9 --nesterov
# The conv biases before a training-mode BatchNorm have a zero gradient
# (float noise on both sides, which Adam's first step turns into +-lr): frozen,
# as make_fixtures.py does; Adam moves tiny-gradient elements by up to lr, so
# atol is lr/1000 there.
step cnn cross_entropy adam 1e-5 --optimizer=adamw --lr=1e-2 --weight-decay=1e-2 \
  --freeze conv1.bias --freeze conv2.bias
step transformer mse sgd $ATOL --optimizer=sgd --lr=0.1
# The key projection's bias has a gradient that is exactly zero in exact
# arithmetic (softmax ignores a constant per row); both sides compute float
# noise there (~1e-9), and Adam's first step moves by lr * g / (|g| + eps), so
# those elements differ by up to lr/10 = 1e-4 -- the atol of that comparison.
step transformer mse adam 1e-4 --optimizer=adam --lr=1e-3
exit $fail
