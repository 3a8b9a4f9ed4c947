// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=256 | FileCheck %s

// Tests the 8-bit product's AVX2 tile on B packed in pairs of k ([N/8,
// K/2, 8, 2], kiln-pack-matmul-weights with 256-bit vectors): 5 rows x 20
// columns (two vectors of 8 and a masked one of 4, its panel
// zero-padded) in i32 accumulators, 2 vectors a block (4 x 3 spilled);
// per group of 4 k, each vector's two 16-byte pair rows (its [K/2, 16]
// view's rows 2g and 2g + 1) sign-extended to i16, A's 4 bytes of each row
// broadcast as one word and split by vpshufb into zero-extended i16
// pairs, vpmaddwd and an add per row, pair and vector.
// CHECK-LABEL: func.func @integer_product
// CHECK-NOT: linalg.generic
// CHECK: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<3x16x8x2xi8> into memref<3x16x16xi8>
// CHECK: scf.for %[[G:.*]] = %c0 to %c8 step %c1 iter_args(
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4
// CHECK-COUNT-4: vector.load %[[B]][%{{.*}}, %{{.*}}, %c0] : memref<3x16x16xi8>, vector<16xi8>
// CHECK: %[[W:.*]] = vector.load %arg0[%{{.*}}, %[[K]]] : memref<5x32xi8>, vector<4xi8>
// CHECK: vector.broadcast {{.*}} : i32 to vector<8xi32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pshuf.b"({{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// CHECK: vector.bitcast {{.*}} : vector<32xi8> to vector<16xi16>
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"({{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK: scf.yield
// CHECK: vector.store {{.*}} : memref<5x20xi32>, vector<8xi32>
// CHECK: vector.maskedstore {{.*}} : memref<5x20xi32>, vector<8xi1>, vector<8xi32>
// CHECK-NOT: vpdpbusd
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @integer_product(%x: memref<5x32xi8>, %w: memref<3x16x8x2xi8>, %y: memref<5x20xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<5x32xi8>, memref<3x16x8x2xi8>) outs(%y : memref<5x20xi32>) {
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

// Tests that a k group other than 2 or 4 is not an 8-bit tile's layout.
// CHECK-LABEL: func.func @group_of_three
// CHECK: linalg.generic
// CHECK-NOT: pmadd
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 3, n mod 8, k mod 3)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @group_of_three(%x: memref<4x24xi8>, %w: memref<1x8x8x3xi8>, %y: memref<4x8xi32>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x24xi8>, memref<1x8x8x3xi8>) outs(%y : memref<4x8xi32>) {
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

// Tests A held as i16 (kiln-widen-int8-rows): each row's pairs k, k+1 and
// k+2, k+3 loaded as two i16 and broadcast as one 32-bit word each,
// vpmaddwd's operand as it is: no vpshufb.
// CHECK-LABEL: func.func @widened_rows
// CHECK: scf.for %[[G:.*]] = %c0 to %c8 step %c1 iter_args(
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4
// CHECK: vector.load %arg0[%{{.*}}, %[[K]]] : memref<5x32xi16>, vector<2xi16>
// CHECK: vector.bitcast {{.*}} : vector<8xi32> to vector<16xi16>
// CHECK: %[[K2:.*]] = arith.addi %[[K]], %c2
// CHECK: vector.load %arg0[%{{.*}}, %[[K2]]] : memref<5x32xi16>, vector<2xi16>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK-NOT: pshuf
// CHECK: scf.yield
#a3 = affine_map<(m, n, k) -> (m, k)>
#b3 = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 2, n mod 8, k mod 2)>
#c3 = affine_map<(m, n, k) -> (m, n)>
func.func @widened_rows(%x: memref<5x32xi16>, %w: memref<3x16x8x2xi8>, %y: memref<5x20xi32>) {
  linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<5x32xi16>, memref<3x16x8x2xi8>) outs(%y : memref<5x20xi32>) {
  ^bb0(%p: i16, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i16 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// Tests that an i16 A is no vpdpbusd operand: B in groups of 4 stays loops.
// CHECK-LABEL: func.func @widened_rows_vnni_layout
// CHECK: linalg.generic
// CHECK-NOT: vpdpbusd
#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 4, n mod 8, k mod 4)>
#c4 = affine_map<(m, n, k) -> (m, n)>
func.func @widened_rows_vnni_layout(%x: memref<4x32xi16>, %w: memref<1x8x8x4xi8>, %y: memref<4x8xi32>) {
  linalg.generic {indexing_maps = [#a4, #b4, #c4], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x32xi16>, memref<1x8x8x4xi8>) outs(%y : memref<4x8xi32>) {
  ^bb0(%p: i16, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i16 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
