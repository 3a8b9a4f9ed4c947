#!/usr/bin/env bash
# Builds Kiln with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-asan/ and runs every test there (lit, unit, end-to-end, and the
# conformance suite, whose forked children report sanitizer findings as
# failures), then the libFuzzer targets for a short run each. Leak checking
# is off: MLIR and LLVM keep global state alive. Allocations that can't be
# had return NULL, as without ASan, so the runtime's clean errors are tested.
# Last, the runtime and its unit tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)
KILN_BUILD_DIR=build-asan bash scripts/build.sh -DKILN_SANITIZE=ON -DKILN_FUZZ=ON
echo "sanitizer build: $(( $(date +%s) - start )) s"
start=$(date +%s)
ASAN_OPTIONS=detect_leaks=0:exitcode=77:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
echo "sanitizer tests: $(( $(date +%s) - start )) s"
# The runtime's threads (concurrent sessions, the pool) under ThreadSanitizer.
start=$(date +%s)
bash scripts/test-tsan.sh
echo "thread sanitizer tests: $(( $(date +%s) - start )) s"
