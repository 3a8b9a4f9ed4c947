#!/usr/bin/env bash
# Kiln on a real GPU, in two halves, because the machine with the GPU has
# CUDA, PyTorch and onnxruntime but no MLIR, and the build machine the
# opposite.
#
# 1. On the build machine (MLIR, no GPU):
#      scripts/gpu-check.sh pack
#    builds Kiln, then writes .gpu-pack/ (ignored by git; with the working
#    tree at most 63 MiB, the transformer's cuts left out when it would not
#    fit):
#      bin/kiln-gpu-check     the runtime-only driver (test/gpu)
#      conformance.tar.gz     <suite>__<test>/: every CPU-passing ONNX
#                             backend test compiled with --target=cuda
#                             (sm_80, with sm_80 and sm_90 cubins), with its
#                             data sets, after ptxas accepted its PTX for
#                             sm_80 and sm_90a (14 MB packed)
#      models/                the example models at batch 1 and 32 and the
#                             kernel-level models (4096^3 matmuls in f32,
#                             f16, bf16; smaller matmuls, one of 2464
#                             rows overhanging its tiles; an elementwise
#                             chain; a transpose and add; column sums),
#                             as ONNX and CUDA artifacts, every
#                             matmul also for sm_90a (wgmma: <name>_sm90a,
#                             warp-specialized; <name>_sm90a_tma: its tiles
#                             loaded by TMA; _sm90a_tma_c2: by TMA in
#                             clusters of two, B multicast), the 4096^3 ones also with
#                             other mma.sync k steps and ring depths
#                             (<name>__k32s4, __k64s3), 128-wide wgmma tiles
#                             (_sm90a_n128) and the shared ring instead of
#                             the specialized kernel (_sm90a_ring), f32's
#                             also with no wgmma group in flight
#                             (_sm90a_drain); the
#                             attention models at batch 32 also for sm_90a;
#                             the attention models and CNNs in f16 at
#                             batch 32 (test/gpu/pack_models.py)
#      cuts/                  the transformer cut after each node
#                             (test/gpu/cuts.py)
#      train/                 two training steps for the CPU and for CUDA
#      dynamic/               ONE CUDA artifact of a transformer encoder
#                             (dynamic batch 1..8, sequence 2..256) and
#                             static ones for the measured shapes
#                             (test/gpu/dynamic_gpu.py, 5 MB; left out
#                             after the cuts when the pack would not fit)
#    About 61 MB with the cuts, 48 MB without. Before it is packed, all of it runs once on the PTX
#    emulator (test/emu: the same runtime and kernels, interpreted on the
#    CPU): the conformance tests against their references, every model but
#    the 4096^3 matmuls and the 64 Mi elementwise chain and transpose once, so device time
#    is not spent finding a kernel that faults or races.
# 2. On the GPU machine, from the repository root, with .gpu-pack carried:
#      scripts/gpu-check.sh run
#    in one call, well under 8 minutes: runs the conformance artifacts on the
#    GPU against the reference outputs, the transformer node by node, then
#    each model against onnxruntime (correctness) and PyTorch eager /
#    torch.compile (CUDA events, warm-up, median), printing a table, then
#    per-kernel times (CUDA events) of a few models. With $OUT set, logs go
#    there too. KILN_GPU_PARTS="conformance cuts models kernels dynamic" (the
#    default) picks parts; "models-quick" runs the models without PyTorch.
#    On an H200 (2026-11-30) the whole run took about 4 minutes.
#    From a session with the device tool:
#      run(command="bash scripts/gpu-check.sh run", carry=[".gpu-pack"], timeout_s=540)
#    Without a GPU, the halves that need no PyTorch CUDA can be tried on the
#    PTX emulator (14 s: the conformance artifacts, the transformer's cuts):
#      KILN_CUDA_DRIVER=build/lib/libkiln_ptx_emu.so KILN_GPU_PARTS="conformance cuts" \
#        bash scripts/gpu-check.sh run
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
  emu=build/lib/libkiln_ptx_emu.so
  KILN_CUDA_DRIVER=$emu build/bin/kiln-gpu-check conformance "$PACK/conformance" --jobs 2 | tail -1
  strip --strip-unneeded "$PACK"/conformance/*/model.so "$PACK/bin/kiln-gpu-check"
  tar -C "$PACK" -czf "$PACK/conformance.tar.gz" conformance && rm -rf "$PACK/conformance"
  python3 test/gpu/pack_models.py --kiln build/bin/kiln --pack "$PACK"
  python3 test/gpu/cuts.py pack --kiln build/bin/kiln --pack "$PACK" "$PACK/models/transformer_b1.onnx"
  for so in "$PACK"/models/*.so; do
    case $so in *4096*|*tokens*|*elementwise64M*|*transpose64M*|*colsum64M*|*encoder_b32*) continue ;; esac # hours on the emulator
    mkdir -p /tmp/kiln-gpu-preflight
    KILN_CUDA_DRIVER=$emu build/bin/kiln-gpu-check run "$so" --random --out /tmp/kiln-gpu-preflight \
      > /dev/null || { echo "gpu-check pack: $so fails on the PTX emulator" >&2; exit 1; }
  done
  python3 test/gpu/dynamic_gpu.py pack --kiln build/bin/kiln --pack "$PACK"
  mkdir -p /tmp/kiln-gpu-preflight
  KILN_CUDA_DRIVER=$emu build/bin/kiln-gpu-check run "$PACK/dynamic/dyn.so" --random \
    --shape "$(python3 -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)' \
      "$PACK/dynamic/encoder.onnx")=2x64x64" --out /tmp/kiln-gpu-preflight > /dev/null \
    || { echo "gpu-check pack: the dynamic encoder fails on the PTX emulator" >&2; exit 1; }
  echo "gpu-check pack: the models ran on the PTX emulator"
  strip --strip-unneeded "$PACK"/models/*.so "$PACK"/dynamic/*.so
  # The device tool carries 64 MiB in all: the pack plus the working tree
  # (tracked and untracked-not-ignored files). The transformer's cuts (a
  # debugging aid) go first when both do not fit.
  local tree budget size
  tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  budget=$(( (63 << 20) - tree ))
  size=$(du -sb "$PACK" | cut -f1)
  if (( size > budget )) && [[ -d $PACK/cuts ]]; then
    echo "gpu-check pack: $((size >> 20)) MiB with the working tree's $((tree >> 20)) MiB passes 63 MiB; leaving out the transformer's cuts" >&2
    rm -rf "$PACK/cuts"
    size=$(du -sb "$PACK" | cut -f1)
  fi
  if (( size > budget )) && [[ -d $PACK/dynamic ]]; then
    echo "gpu-check pack: still past 63 MiB; leaving out the dynamic encoder" >&2
    rm -rf "$PACK/dynamic"
    size=$(du -sb "$PACK" | cut -f1)
  fi
  du -sh "$PACK"
  if (( size > budget )); then
    echo "gpu-check pack: $PACK is $((size >> 20)) MiB and the working tree $((tree >> 20)) MiB; the device tool carries at most 64 MiB in all" >&2
    exit 1
  fi
}

run() {
  [[ -d $PACK ]] || { echo "gpu-check run: no $PACK (run 'scripts/gpu-check.sh pack' on the build machine)" >&2; exit 1; }
  out=${OUT:-/tmp/kiln-gpu-check}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  start=$(date +%s)
  # KILN_GPU_PARTS picks parts (all by default); "models-quick" is the
  # models' correctness and Kiln's times without PyTorch.
  parts=" ${KILN_GPU_PARTS:-conformance cuts models kernels dynamic} "
  [[ $parts == *" conformance "* ]] && conformance_part "$out"
  [[ $parts == *" cuts "* ]] && cuts_part "$out"
  [[ $parts == *" models "* ]] && models_part "$out"
  [[ $parts == *" models-quick "* ]] && models_part "$out" --no-torch
  [[ $parts == *" kernels "* ]] && kernels_part "$out"
  [[ $parts == *" dynamic "* ]] && dynamic_part "$out"
  echo "total: $(( $(date +%s) - start )) s"
}

conformance_part() {
  local out=$1 start
  start=$(date +%s)
  echo "== conformance on the GPU"
  rm -rf /tmp/kiln-conformance && mkdir -p /tmp/kiln-conformance
  tar -C /tmp/kiln-conformance -xzf "$PACK/conformance.tar.gz"
  set +e
  timeout ${KILN_GPU_CONFORMANCE_S:-120} "$PACK/bin/kiln-gpu-check" conformance /tmp/kiln-conformance/conformance \
    --jobs 16 --test-seconds 20 > "$out/conformance.log" 2>&1
  rc=$?
  set -e
  echo "passed: $(grep -c '^PASS' "$out/conformance.log"), failed: $(grep -c '^FAIL' "$out/conformance.log")"
  grep '^FAIL' "$out/conformance.log" | head -40 || true
  tail -1 "$out/conformance.log"
  echo "conformance: exit $rc, $(( $(date +%s) - start )) s"
}

cuts_part() {
  if [[ -f $PACK/cuts/manifest.txt ]]; then
    echo "== the transformer, node by node (test/gpu/cuts.py)"
    PYTHONUNBUFFERED=1 timeout 60 python3 test/gpu/cuts.py run --pack "$PACK" \
      --tool "$PACK/bin/kiln-gpu-check" 2>&1 | tee "$1/cuts.log" || true
  fi
}

models_part() {
  local out=$1
  shift
  echo "== models"
  PYTHONUNBUFFERED=1 timeout 330 python3 test/gpu/bench_gpu.py --pack "$PACK" \
    --tool "$PACK/bin/kiln-gpu-check" "$@" 2>&1 | tee "$out/models.log" || true
}

kernels_part() {
  local out=$1
  echo "== per-kernel times (CUDA events), in $out/kernels.log"
  for m in transformer_b32 transformer_b32_sm90a gpt_b32 gpt_b32_sm90a encoder_b32 encoder_b32_sm90a \
      resnet_b32 resnet_f16_b32 \
      mobilenetv2_b32 matmul4096 matmul4096_sm90a matmul4096_sm90a_drain matmul4096_sm90a_ring \
      matmul4096_sm90a_tma \
      matmul4096_sm90a_tma_c2 matmul4096_bf16 matmul4096_bf16_sm90a matmul4096_bf16_sm90a_ring \
      matmul4096_bf16_sm90a_tma matmul4096_bf16_sm90a_tma_c2 \
      elementwise64M transpose64M colsum64M; do
    echo "-- $m" >> "$out/kernels.log"
    timeout 30 "$PACK/bin/kiln-gpu-check" bench "$PACK/models/$m.so" --per-kernel --runs 20 \
      >> "$out/kernels.log" 2>&1 || true
  done
  grep -E "^--|^kernels:|^error" "$out/kernels.log" || true
}

dynamic_part() {
  if [[ -d $PACK/dynamic ]]; then
    echo "== one artifact for many shapes (test/gpu/dynamic_gpu.py)"
    PYTHONUNBUFFERED=1 timeout 90 python3 test/gpu/dynamic_gpu.py run --pack "$PACK" \
      --tool "$PACK/bin/kiln-gpu-check" 2>&1 | tee "$1/dynamic.log" || true
  fi
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh pack|run" >&2; exit 2 ;;
esac
