// RUN: kiln-opt %s -kiln-cpu-form-kernels="vector-bits=256 int8=true" | FileCheck %s --check-prefix=PAIRS
// RUN: kiln-opt %s -kiln-cpu-form-kernels="vector-bits=256 int8=true int8-saturate=true" | FileCheck %s --check-prefix=QUADS
// RUN: kiln-opt %s -kiln-cpu-form-kernels="vector-bits=512 int8=true" | FileCheck %s --check-prefix=NOVNNI
// RUN: kiln-opt %s -kiln-cpu-form-kernels="vector-bits=512 vnni=true" | FileCheck %s --check-prefix=VNNI

// Tests the CPU pipelines' `int8` option: with 256-bit vectors (AVX2) an
// 8-bit product's constant weights [32, 16] (100: a pair of them passes
// i16 against A's bytes) are packed in pairs of k for vpmaddwd ([2, 16,
// 8, 2]); with 512-bit vectors only `vnni` packs them
// (for vpdpbusd, [1, 8, 16, 4]), `int8` alone leaves them as they are
// (a 512-bit CPU without VNNI has no 8-bit tile). With `int8-saturate`
// (--int8-arith=saturate) AVX2 packs them in fours for vpmaddubsw ([2, 8,
// 8, 4]) and A stays bytes (no kiln-widen-int8-rows).
// PAIRS-LABEL: func.func @integer_product
// PAIRS: tensor<2x16x8x2xi8>
// QUADS-LABEL: func.func @integer_product
// QUADS: tensor<2x8x8x4xi8>
// QUADS-NOT: xi16>
// NOVNNI-NOT: x4xi8>
// NOVNNI-NOT: x2xi8>
// VNNI: tensor<1x8x16x4xi8>
func.func @integer_product(%x: tensor<4x32xi8>) -> tensor<4x16xi32> {
  %w = arith.constant dense<100> : tensor<32x16xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x16xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x32xi8>, tensor<32x16xi8>) outs(%c : tensor<4x16xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<4x16xi32>
  return %y : tensor<4x16xi32>
}

// Weights of 7 bits or fewer (3 here) keep every pair within i16: packed
// in fours on AVX2 whatever `int8-saturate`, for vpmaddubsw (exact then).
// PAIRS-LABEL: func.func @narrow_weights
// PAIRS: tensor<2x8x8x4xi8>
// QUADS-LABEL: func.func @narrow_weights
// QUADS: tensor<2x8x8x4xi8>
func.func @narrow_weights(%x: tensor<4x32xi8>) -> tensor<4x16xi32> {
  %w = arith.constant dense<3> : tensor<32x16xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x16xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<4x16xi32>) -> tensor<4x16xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x32xi8>, tensor<32x16xi8>) outs(%c : tensor<4x16xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<4x16xi32>
  return %y : tensor<4x16xi32>
}
