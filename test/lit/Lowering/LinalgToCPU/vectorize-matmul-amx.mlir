// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul="vector-bits=512 amx=1" | FileCheck %s

// Tests the 8-bit product on AMX tiles: 20 rows x 40 columns, K = 136.
// Per 16 rows (then the 4 left, in a 4-row tile) and two column tiles:
// zeroed 16 x 16 i32 accumulators carried over k in steps of 64 (A's 16
// rows x 64 bytes at A's row stride, 136; B's panel rows [16 groups of
// 4 k, 64 bytes] as packed), then the 8 k left as a 16 x 8 tile of A and
// 2 x 64 of B; tdpbusd (A zero-extended, B signed); the tiles stored to a
// stack buffer (allocated at the function's start) whose rows feed the
// stores as vectors. The last 8 columns (a zero-padded panel) go in a
// block of their own, stored masked.
// CHECK-LABEL: func.func @amx_product
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<16x32xi32>
// CHECK: %[[B:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : memref<3x34x16x4xi8> into memref<3x34x64xi8>
// CHECK-COUNT-2: amx.tile_zero : !amx.tile<16x16xi32>
// CHECK: scf.for %[[K:.*]] = %c0 to %c128 step %c64 iter_args({{.*}}) -> (!amx.tile<16x16xi32>, !amx.tile<16x16xi32>)
// CHECK: %[[G:.*]] = arith.divui %[[K]], %c4
// CHECK: %[[A:.*]] = amx.tile_load %arg0[%c0, %[[K]]], %c136 : memref<20x136xi8> into !amx.tile<16x64xi8>
// CHECK: %[[B0:.*]] = amx.tile_load %[[B]][%c0, %[[G]], %c0] : memref<3x34x64xi8> into !amx.tile<16x64xi8>
// CHECK: amx.tile_muli %[[A]] zext, %[[B0]], {{.*}} : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
// CHECK: amx.tile_load %[[B]][%c1, %[[G]], %c0]
// CHECK: scf.yield
// CHECK: amx.tile_load %arg0[%c0, %c128], %c136 : memref<20x136xi8> into !amx.tile<16x8xi8>
// CHECK: amx.tile_load %[[B]][%c0, %c32, %c0] : memref<3x34x64xi8> into !amx.tile<2x64xi8>
// CHECK: amx.tile_muli {{.*}} : !amx.tile<16x8xi8>, !amx.tile<2x64xi8>, !amx.tile<16x16xi32>
// CHECK: amx.tile_store %[[BUF:alloca[_0-9]*]][%c0, %c0], {{.*}} : memref<16x32xi32>, !amx.tile<16x16xi32>
// CHECK: amx.tile_store %[[BUF]][%c0, %c16], {{.*}} : memref<16x32xi32>, !amx.tile<16x16xi32>
// CHECK: vector.load %[[BUF]][%c0, %c0] : memref<16x32xi32>, vector<16xi32>
// CHECK: vector.store {{.*}} : memref<20x40xi32>, vector<16xi32>
// CHECK: amx.tile_zero : !amx.tile<4x16xi32>
// CHECK: amx.tile_load %arg0[%c16, {{.*}}], %c136 : memref<20x136xi8> into !amx.tile<4x64xi8>
// CHECK: vector.maskedstore {{.*}} : memref<20x40xi32>, vector<16xi1>, vector<16xi32>
// CHECK-NOT: vpdpbusd
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @amx_product(%x: memref<20x136xi8>, %w: memref<3x34x16x4xi8>, %y: memref<20x40xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<20x136xi8>, memref<3x34x16x4xi8>) outs(%y : memref<20x40xi32>) {
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

// Tests that a product of rows known at run time stays on VNNI (its
// blocks of every row count below the tile's ran LLVM's tile register
// allocation out of registers), as does one of fewer than 7 rows.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT: amx.
// CHECK: vpdpbusd
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT: amx.
// CHECK: vpdpbusd
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 4, n mod 16, k mod 4)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @dynamic_rows(%x: memref<?x64xi8>, %w: memref<1x16x16x4xi8>, %y: memref<?x16xi32>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xi8>, memref<1x16x16x4xi8>) outs(%y : memref<?x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
func.func @few_rows(%x: memref<6x64xi8>, %w: memref<1x16x16x4xi8>, %y: memref<6x16xi32>) {
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<6x64xi8>, memref<1x16x16x4xi8>) outs(%y : memref<6x16xi32>) {
  ^bb0(%p: i8, %q: i8, %acc: i32):
    %p32 = arith.extui %p : i8 to i32
    %q32 = arith.extsi %q : i8 to i32
    %m = arith.muli %p32, %q32 : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
