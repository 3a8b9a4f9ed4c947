#!/usr/bin/env bash
# Command two of the README (and CI): install what Kiln needs, build it, run
# every test (lit, Catch2 unit tests, end-to-end examples, the ONNX backend
# suite) through ctest, install Kiln into a temporary prefix and build
# examples/embed against it, then everything again under AddressSanitizer +
# UBSan with a 60 s run of each fuzzer, and the runtime under
# ThreadSanitizer (scripts/test-sanitizers.sh); lit runs only there.
# `--quick` runs lit here and stops before the sanitizers, for a fast
# local loop.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)
bash scripts/build.sh
echo "build: $(( $(date +%s) - start )) s"
start=$(date +%s)
# lit checks the compiler's IR and messages, which the sanitizer build
# prints the same: the full run leaves it to that build (one run, with
# ASan + UBSan watching), the quick one runs it here.
exclude=()
[[ "${1:-}" == "--quick" ]] || exclude=(-E '^lit$')
ctest --test-dir "${KILN_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "${exclude[@]}"
if (( ${#exclude[@]} )); then
  # ... but for the lit tests that can't run under ASan (they limit the
  # address space), which run here.
  unsanitized=$( (grep -rl 'UNSUPPORTED:.*asan' test/lit || true) | xargs -r -n1 basename | paste -sd'|')
  if [[ -n $unsanitized ]]; then
    LIT_FILTER="$unsanitized" ctest --test-dir "${KILN_BUILD_DIR:-build}" --output-on-failure -R '^lit$'
  fi
fi
echo "tests: $(( $(date +%s) - start )) s"
# An installed Kiln, used by a standalone application (examples/embed).
bash scripts/test-embed.sh
if [[ "${1:-}" != "--quick" ]]; then
  bash scripts/test-sanitizers.sh
fi
