#!/usr/bin/env bash
# The runtime under ThreadSanitizer: builds only the runtime and its unit
# tests (no MLIR) in build-tsan/, with the MLP artifact compiled by build/'s
# kiln, and runs them, including sessions running concurrently on threads.
set -euo pipefail
cd "$(dirname "$0")/.."
kiln=${KILN_BUILD_DIR:-build}/bin/kiln
[[ -x $kiln ]] || bash scripts/build.sh
mkdir -p build-tsan
"$kiln" compile examples/mlp/model.onnx -o build-tsan/mlp-artifact.so
KILN_BUILD_DIR=build-tsan bash scripts/build.sh -DKILN_BUILD_COMPILER=OFF \
  -DKILN_SANITIZE_THREAD=ON -DKILN_TEST_MLP_ARTIFACT="$PWD/build-tsan/mlp-artifact.so"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/bin/kiln-unittests
