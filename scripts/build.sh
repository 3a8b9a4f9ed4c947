#!/usr/bin/env bash
# Configures and builds Kiln in build/ (clang-22 + lld + ccache + ninja,
# linked against Debian's libMLIR.so). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${KILN_BUILD_DIR:-build}
# ccache may reuse objects compiled against the precompiled header
# (lib/Precompiled) only with these sloppiness settings.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    "$@"
elif [[ $# -gt 0 ]]; then
  cmake -B "$BUILD_DIR" "$@" # options for an existing build directory
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
