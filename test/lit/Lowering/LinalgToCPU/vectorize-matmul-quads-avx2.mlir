// RUN: kiln-opt %s -kiln-vectorize-matmul=vector-bits=256 | FileCheck %s --implicit-check-not=arith.extsi --implicit-check-not=arith.extui

// Tests the 8-bit tile on AVX2 with B packed in fours ([N/8, K/4, 8, 4]:
// kiln-pack-matmul-weights' for 7-bit weights, or with int8-saturate,
// --int8-arith=saturate): per group of 4 k, each panel's 32 bytes, A's 4
// bytes of each row broadcast as one 32-bit word, vpmaddubsw (u8 x s8,
// each lane's two products summed in i16, saturated), then vpmaddwd by
// ones into i32 and an add to the accumulator; neither operand widened
// (the exact tile's vpmaddwd takes B's pairs sign-extended). 3 rows x 20
// columns: 2 vectors a row (the tile's limit on AVX2), then the last 4
// columns masked.
// CHECK-LABEL: func.func @integer_product
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[ONES:.*]] = arith.constant dense<1> : vector<16xi16>
// CHECK: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<3x8x8x4xi8> into memref<3x8x32xi8>
// CHECK: scf.for %[[G:.*]] = %c0 to %c8 step %c1 iter_args({{.*}}) -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>)
// CHECK: %[[K:.*]] = arith.muli %[[G]], %c4
// CHECK: %[[B0:.*]] = vector.load %[[B]][%c0, %[[G]], %c0] : memref<3x8x32xi8>, vector<32xi8>
// CHECK: %[[B1:.*]] = vector.load %[[B]][%c1, %[[G]], %c0] : memref<3x8x32xi8>, vector<32xi8>
// CHECK: %[[W:.*]] = vector.load %arg0[%c0, %[[K]]] : memref<3x32xi8>, vector<4xi8>
// CHECK: vector.broadcast {{.*}} : i32 to vector<8xi32>
// CHECK: %[[A:.*]] = vector.bitcast {{.*}} : vector<8xi32> to vector<32xi8>
// CHECK: %[[P:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[A]], %[[B0]]) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// CHECK: %[[S:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[P]], %[[ONES]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// CHECK: arith.addi %{{.*}}, %[[S]] : vector<8xi32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[A]], %[[B1]])
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: scf.yield
// CHECK-COUNT-6: vector.store {{.*}} : memref<3x20xi32>, vector<8xi32>
// CHECK: scf.for
// CHECK-COUNT-3: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: scf.yield
// CHECK-COUNT-3: vector.maskedstore {{.*}} : memref<3x20xi32>, vector<8xi1>, vector<8xi32>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 8, k floordiv 4, n mod 8, k mod 4)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @integer_product(%x: memref<3x32xi8>, %w: memref<3x8x8x4xi8>, %y: memref<3x20xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x32xi8>, memref<3x8x8x4xi8>) outs(%y : memref<3x20xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
