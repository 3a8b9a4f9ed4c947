#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs
# examples/embed against it with nothing but find_package(Kiln): the check
# that an application can use an installed Kiln. Prints the sizes users ask
# about (stripped runtime, the example model in each artifact form).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${KILN_BUILD_DIR:-build}
work=$(mktemp -d /tmp/kiln-embed.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$BUILD_DIR" --prefix "$work/prefix" > /dev/null
cmake -G Ninja -S examples/embed -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 > /dev/null
cmake --build "$work/build"
ctest --test-dir "$work/build" --output-on-failure
# Training through the C++ API (examples/train): the loss must fall.
cmake -G Ninja -S examples/train -B "$work/build-train" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 > /dev/null
cmake --build "$work/build-train"
ctest --test-dir "$work/build-train" --output-on-failure

strip -o "$work/runtime.so" "$work/prefix/lib/libkiln_runtime.so"
echo "stripped libkiln_runtime.so: $(stat -c %s "$work/runtime.so") bytes"
kiln="$work/prefix/bin/kiln"
for example in mlp cnn transformer; do
  model=examples/$example/model.onnx
  "$kiln" compile "$model" -o "$work/$example.so"
  "$kiln" compile "$model" --emit=obj -o "$work/$example.o"
  "$kiln" compile "$model" --emit=static -o "$work/lib$example.a"
  echo "$example: .so $(stat -c %s "$work/$example.so") B, .o $(stat -c %s "$work/$example.o") B," \
       ".a $(stat -c %s "$work/lib$example.a") B"
done
