// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights="vector-bits=512 int8=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights="vector-bits=256 int8=true" | FileCheck %s --check-prefix=PAIRS
// RUN: kiln-opt %s -split-input-file -kiln-pack-matmul-weights=vector-bits=512 | FileCheck %s --check-prefix=PLAIN

// Tests that an 8-bit product's constant weights [K, N] = [8, 20] become
// vpdpbusd's layout [ceil(N/16), K/4, 16, 4] = [2, 2, 16, 4]: column n's
// rows k..k+3 in one 32-bit lane, at [n / 16, k / 4, n % 16, k % 4],
// columns past 20 zero; the product reads them through (n floordiv 16,
// k floordiv 4, n mod 16, k mod 4). Without int8 it stays as it was.
// With 256-bit vectors (AVX2's vpmaddwd), pairs of k: [ceil(N/8), K/2,
// 8, 2] = [3, 4, 8, 2], lane 0 of the first pair W[0..1][0] = 0, 20
// (bytes 00 14), lane 1 W[0..1][1] = 1, 21 (01 15).
// W[k][n] = k * 20 + n (as int8): lane 0 of the first group holds
// W[0..3][0] = 0, 20, 40, 60 (bytes 00 14 28 3C), lane 1 W[0..3][1] = 1,
// 21, 41, 61 (01 15 29 3D).
// CHECK-LABEL: func.func @integer_product
// CHECK: %[[W:.*]] = arith.constant dense_resource<packed> : tensor<2x2x16x4xi8>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[PACKED:.*]], #{{.*}}]{{.*}} ins(%arg0, %[[W]] : tensor<3x8xi8>, tensor<2x2x16x4xi8>)
// CHECK: arith.extui
// CHECK: packed: "0x10000000
// CHECK-SAME: 0014283C0115293D
// PAIRS-LABEL: func.func @integer_product
// PAIRS: %[[W:.*]] = arith.constant dense_resource<packed> : tensor<3x4x8x2xi8>
// PAIRS: ins(%arg0, %[[W]] : tensor<3x8xi8>, tensor<3x4x8x2xi8>)
// PAIRS: packed: "0x10000000
// PAIRS-SAME: 0014011502160317
// PLAIN-LABEL: func.func @integer_product
// PLAIN: ins(%arg0, %{{.*}} : tensor<3x8xi8>, tensor<8x20xi8>)
func.func @integer_product(%x: tensor<3x8xi8>) -> tensor<3x20xi32> {
  %w = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
                             [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39],
                             [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59],
                             [60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79],
                             [80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99],
                             [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119],
                             [120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117],
                             [-116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97]]> : tensor<8x20xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x20xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<3x20xi32>) -> tensor<3x20xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x8xi8>, tensor<8x20xi8>) outs(%c : tensor<3x20xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<3x20xi32>
  return %y : tensor<3x20xi32>
}

// -----

// Tests that K not a multiple of 4 (A's 4-byte word would cross its row's
// end) is left unpacked.
// CHECK-LABEL: func.func @odd_depth
// CHECK: ins(%arg0, %{{.*}} : tensor<3x6xi8>, tensor<6x16xi8>)
func.func @odd_depth(%x: tensor<3x6xi8>) -> tensor<3x16xi32> {
  %w = arith.constant dense<3> : tensor<6x16xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x16xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<3x16xi32>) -> tensor<3x16xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x6xi8>, tensor<6x16xi8>) outs(%c : tensor<3x16xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<3x16xi32>
  return %y : tensor<3x16xi32>
}

// -----

// Tests that on AVX2 weights no pair of which can pass i16 against A's
// bytes (here -16..15; 7 bits in general, onnxruntime's reduce_range) are
// packed in fours as for vpdpbusd, [ceil(N/8), K/4, 8, 4] = [1, 1, 8, 4],
// for vpmaddubsw's tile (exact on them): lane 0 W[0..3][0] = -16, -8, 0,
// 8 (bytes F0 F8 00 08), lane 1 -15, -7, 1, 9 (F1 F9 01 09).
// PAIRS-LABEL: func.func @narrow_weights
// PAIRS: %[[W:.*]] = arith.constant dense_resource<packed> : tensor<1x1x8x4xi8>
// PAIRS: ins(%arg0, %[[W]] : tensor<3x4xi8>, tensor<1x1x8x4xi8>)
// PAIRS: packed: "0x10000000
// PAIRS-SAME: F0F80008F1F90109
func.func @narrow_weights(%x: tensor<3x4xi8>) -> tensor<3x8xi32> {
  %w = arith.constant dense<[[-16, -15, -14, -13, -12, -11, -10, -9],
                             [-8, -7, -6, -5, -4, -3, -2, -1],
                             [0, 1, 2, 3, 4, 5, 6, 7],
                             [8, 9, 10, 11, 12, 13, 14, 15]]> : tensor<4x8xi8>
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x8xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<3x8xi32>) -> tensor<3x8xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x4xi8>, tensor<4x8xi8>) outs(%c : tensor<3x8xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<3x8xi32>
  return %y : tensor<3x8xi32>
}
