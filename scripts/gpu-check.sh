#!/usr/bin/env bash
# Kiln on a real GPU, in two halves, because the machine with the GPU has
# CUDA, PyTorch and onnxruntime but no MLIR, and the build machine the
# opposite.
#
# 1. On the build machine (MLIR, no GPU):
#      scripts/gpu-check.sh pack
#    builds Kiln, then writes .gpu-pack/ (ignored by git, at most 64 MB):
#      bin/kiln-gpu-check     the runtime-only driver (test/gpu)
#      conformance.tar.gz     <suite>__<test>/: every CPU-passing ONNX
#                             backend test compiled with --target=cuda
#                             (sm_80), with its data sets, after ptxas
#                             accepted its PTX for sm_80 and sm_90a
#                             (52 MB unpacked, 11 MB packed)
#      models/                the example models at batch 1 and 32 and two
#                             kernel-level models, as ONNX and CUDA artifacts
#                             (test/gpu/pack_models.py)
# 2. On the GPU machine, from the repository root, with .gpu-pack carried:
#      scripts/gpu-check.sh run
#    in one call, well under 8 minutes: runs the conformance artifacts on the
#    GPU against the reference outputs, then each model against onnxruntime
#    (correctness) and PyTorch eager / torch.compile (CUDA events, warm-up,
#    median), printing a table, then per-kernel times (CUDA events) of a few
#    models. With $OUT set, logs go there too.
#    From a session with the device tool:
#      run(command="bash scripts/gpu-check.sh run", carry=[".gpu-pack"], timeout_s=540)
set -euo pipefail
cd "$(dirname "$0")/.."
PACK=${KILN_GPU_PACK:-.gpu-pack}

pack() {
  bash scripts/build.sh
  rm -rf "$PACK" && mkdir -p "$PACK/bin"
  cp build/bin/kiln-gpu-check "$PACK/bin/"
  ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  [[ -x $ptxas ]] || { echo "gpu-check pack: ptxas not found (CUDA toolkit)" >&2; exit 1; }
  build/bin/kiln-conformance --target cuda --compile-only --ptxas "$ptxas" \
    --ratchet test/conformance/passing.txt --keep "$PACK/conformance" | tail -3
  data=/usr/share/libonnx-testdata/data
  for dir in "$PACK"/conformance/*__*/; do
    test=$(basename "$dir")
    cp -r "$data/${test%%__*}/${test#*__}"/test_data_set_* "$dir"
  done
  cp test/conformance/tolerances.txt "$PACK/conformance/"
  strip --strip-unneeded "$PACK"/conformance/*/model.so "$PACK/bin/kiln-gpu-check"
  tar -C "$PACK" -czf "$PACK/conformance.tar.gz" conformance && rm -rf "$PACK/conformance"
  python3 test/gpu/pack_models.py --kiln build/bin/kiln --pack "$PACK"
  strip --strip-unneeded "$PACK"/models/*.so
  du -sh "$PACK"
  size=$(du -sm "$PACK" | cut -f1)
  if (( size > 60 )); then
    echo "gpu-check pack: $PACK is $size MB; the device tool carries at most 64 MB" >&2
    exit 1
  fi
}

run() {
  [[ -d $PACK ]] || { echo "gpu-check run: no $PACK (run 'scripts/gpu-check.sh pack' on the build machine)" >&2; exit 1; }
  out=${OUT:-/tmp/kiln-gpu-check}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  start=$(date +%s)
  echo "== conformance on the GPU"
  rm -rf /tmp/kiln-conformance && mkdir -p /tmp/kiln-conformance
  tar -C /tmp/kiln-conformance -xzf "$PACK/conformance.tar.gz"
  set +e
  timeout 150 "$PACK/bin/kiln-gpu-check" conformance /tmp/kiln-conformance/conformance --jobs 8 \
    > "$out/conformance.log" 2>&1
  rc=$?
  set -e
  grep -c '^FAIL' "$out/conformance.log" || true
  grep '^FAIL' "$out/conformance.log" | head -20 || true
  tail -1 "$out/conformance.log"
  echo "conformance: exit $rc, $(( $(date +%s) - start )) s"
  echo "== models"
  PYTHONUNBUFFERED=1 timeout 300 python3 test/gpu/bench_gpu.py --pack "$PACK" \
    --tool "$PACK/bin/kiln-gpu-check" 2>&1 | tee "$out/models.log"
  echo "== per-kernel times (CUDA events), in $out/kernels.log"
  for m in transformer_b32 gpt_b32 resnet_b32 matmul4096; do
    echo "-- $m" >> "$out/kernels.log"
    timeout 30 "$PACK/bin/kiln-gpu-check" bench "$PACK/models/$m.so" --per-kernel --runs 20 \
      >> "$out/kernels.log" 2>&1 || true
  done
  grep -E "^--|^kernels:" "$out/kernels.log" || true
  echo "total: $(( $(date +%s) - start )) s"
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh pack|run" >&2; exit 2 ;;
esac
