#!/usr/bin/env bash
# Installs every Debian package Kiln needs to build and test (idempotent).
# Python packages (onnx, torch) are only needed to regenerate the examples;
# pass --python to install them too.
set -euo pipefail
PKGS=(
  cmake ninja-build ccache git python3 time
  clang-22 lld-22 libclang-rt-22-dev
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libcli11-dev catch2
  openmpi-bin libopenmpi-dev
  zlib1g-dev libzstd-dev libedit-dev libcurl4-openssl-dev libxml2-dev
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [[ "${1:-}" == "--python" ]]; then
  # Only for regenerating examples/*/ from their export.py scripts.
  python3 -m pip install -q onnx onnxruntime numpy torch torchvision transformers onnxscript
fi
