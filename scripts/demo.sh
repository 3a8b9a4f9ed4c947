#!/usr/bin/env bash
# Command one of the README: install what Kiln needs, build it, then compile
# the MLP example to a native artifact, run it on the CPU and check it
# against PyTorch's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
K=build/bin/kiln
mkdir -p build/demo
set -x
$K inspect examples/mlp/model.onnx
$K compile examples/mlp/model.onnx -o build/demo/mlp.so
$K inspect build/demo/mlp.so
$K run build/demo/mlp.so --input input=examples/mlp/input.npy --output-dir build/demo/out
$K verify build/demo/mlp.so --input input=examples/mlp/input.npy \
  --expected output=examples/mlp/expected_output.npy
