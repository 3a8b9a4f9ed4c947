// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=512 | FileCheck %s

// Tests the 8-bit product's tile on B packed for VNNI ([N/16, K/4, 16, 4],
// kiln-pack-matmul-weights): 3 rows x 20 columns (a vector of 16 and a
// masked one of 4, whose panel is zero-padded) in i32 accumulators; per
// group of 4 k, each panel's 64 bytes (its [K/4, 64] view's row), A's 4
// bytes of each row as one 32-bit word broadcast to 16 lanes, and
// vpdpbusd per row and vector.
// CHECK-LABEL: func.func @integer_product
// CHECK-NOT: linalg.generic
// CHECK: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<2x8x16x4xi8> into memref<2x8x64xi8>
// CHECK: scf.for %[[G:.*]] = %c0 to %c8 step %c1 iter_args(
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4
// CHECK-COUNT-2: vector.load %[[B]][%{{.*}}, %[[G]], %c0] : memref<2x8x64xi8>, vector<64xi8>
// CHECK: %[[W:.*]] = vector.load %arg0[%c0, %[[K]]] : memref<3x32xi8>, vector<4xi8>
// CHECK: vector.bitcast %[[W]] : vector<4xi8> to vector<1xi32>
// CHECK: vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK: vector.bitcast {{.*}} : vector<16xi32> to vector<64xi8>
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK: scf.yield
// CHECK: vector.store {{.*}} : memref<3x20xi32>, vector<16xi32>
// CHECK: vector.maskedstore {{.*}} : memref<3x20xi32>, vector<16xi1>, vector<16xi32>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @integer_product(%x: memref<3x32xi8>, %w: memref<2x8x16x4xi8>, %y: memref<3x20xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x32xi8>, memref<2x8x16x4xi8>) outs(%y : memref<3x20xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests that an 8-bit product on B as it is ([K, N]) is not taken: the
// tile reads it only packed.
// CHECK-LABEL: func.func @unpacked
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (k, n)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @unpacked(%x: memref<3x32xi8>, %w: memref<32x16xi8>, %y: memref<3x16xi32>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x32xi8>, memref<32x16xi8>) outs(%y : memref<3x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests that A read with k other than last (its 4 bytes at k..k+3 would
// not be one word) is not taken.
// CHECK-LABEL: func.func @a_transposed
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
#a3 = affine_map<(m, n, k) -> (k, m)>
#b3 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c3 = affine_map<(m, n, k) -> (m, n)>
func.func @a_transposed(%x: memref<32x3xi8>, %w: memref<1x8x16x4xi8>, %y: memref<3x16xi32>) {
  linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<32x3xi8>, memref<1x8x16x4xi8>) outs(%y : memref<3x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
