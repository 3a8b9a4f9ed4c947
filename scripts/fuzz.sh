#!/usr/bin/env bash
# Fuzzes Kiln for longer than CI does: builds build-asan/ with the libFuzzer
# targets (ASan + UBSan) and runs each for SECONDS (default 600) from the
# seed corpora, keeping what it learns in build-asan/test/fuzz/corpus/.
# Crashing inputs land in build-asan/test/fuzz/crashes/: fix the bug, then
# move the input to test/fuzz/regressions/<target>/.
#   scripts/fuzz.sh [SECONDS] [onnx-import|tensor-io|signature]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
only=${2:-}
KILN_BUILD_DIR=build-asan bash scripts/build.sh -DKILN_SANITIZE=ON -DKILN_FUZZ=ON \
  -DKILN_FUZZ_SECONDS="$seconds"
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
ctest --test-dir build-asan --output-on-failure -L fuzz ${only:+-R "fuzz-$only\$"}
