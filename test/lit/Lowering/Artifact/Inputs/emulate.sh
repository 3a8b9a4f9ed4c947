#!/bin/sh
# emulate.sh EMU DIR MODEL RTOL ATOL ARCH...: compiles MODEL for the CPU and
# for CUDA (each ARCH), runs the CPU artifact and, through the PTX emulator
# EMU, each CUDA one on the same seeded inputs, and compares their outputs.
# $CUDA_FLAGS go to the CUDA compiles (--gpu-loads=tma...).
set -e
emu=$1 dir=$2 model=$3 rtol=$4 atol=$5
shift 5
name=$(basename "$model" .onnxtxt)
kiln compile "$model" -o "$dir/$name-cpu.so"
mkdir -p "$dir/$name-cpu"
kiln-gpu-check run "$dir/$name-cpu.so" --random --out "$dir/$name-cpu"
for arch in "$@"; do
  kiln compile "$model" --target=cuda --gpu-arch="$arch" ${CUDA_FLAGS:-} -o "$dir/$name-$arch.so"
  mkdir -p "$dir/$name-$arch"
  KILN_CUDA_DRIVER="$emu" kiln-gpu-check run "$dir/$name-$arch.so" --random --out "$dir/$name-$arch"
  kiln compare "$dir/$name-$arch" "$dir/$name-cpu" --rtol "$rtol" --atol "$atol"
done
