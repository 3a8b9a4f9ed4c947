#!/bin/sh
# emulate.sh EMU DIR MODEL RTOL ATOL ARCH...: compiles MODEL for the CPU and
# for CUDA (each ARCH), runs the CPU artifact and, through the PTX emulator
# EMU, each CUDA one on the same seeded inputs, and compares their outputs.
# $CUDA_FLAGS go to the CUDA compiles (--gpu-loads=tma...), $KILN_FLAGS to
# both (--dim batch=1..8), $RUN_FLAGS to both runs (--shape x=3x4 --shape
# x=8x4: rounds at several shapes in one session, compared round by round).
set -e
emu=$1 dir=$2 model=$3 rtol=$4 atol=$5
shift 5
name=$(basename "$model" .onnxtxt)
kiln compile "$model" ${KILN_FLAGS:-} -o "$dir/$name-cpu.so"
mkdir -p "$dir/$name-cpu"
kiln-gpu-check run "$dir/$name-cpu.so" --random ${RUN_FLAGS:-} --out "$dir/$name-cpu"
for arch in "$@"; do
  kiln compile "$model" --target=cuda --gpu-arch="$arch" ${KILN_FLAGS:-} ${CUDA_FLAGS:-} \
    -o "$dir/$name-$arch.so"
  mkdir -p "$dir/$name-$arch"
  KILN_CUDA_DRIVER="$emu" kiln-gpu-check run "$dir/$name-$arch.so" --random ${RUN_FLAGS:-} \
    --out "$dir/$name-$arch"
  if [ -d "$dir/$name-cpu/r0" ]; then
    for round in "$dir/$name-cpu"/r*; do
      kiln compare "$dir/$name-$arch/$(basename "$round")" "$round" --rtol "$rtol" --atol "$atol"
    done
  else
    kiln compare "$dir/$name-$arch" "$dir/$name-cpu" --rtol "$rtol" --atol "$atol"
  fi
done
