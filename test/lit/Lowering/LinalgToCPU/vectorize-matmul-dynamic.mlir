// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=512 | FileCheck %s

// Tests a product whose rows are known only at run time (a dynamic batch):
// the register tile of many rows (4 x 4 vectors on AVX-512) over the full
// blocks in a 0-based parallel loop (the outliner can split it), then the
// remaining rows (0 to 3) as one block of exactly that many, a case of an
// index switch each, still four vectors wide.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT: linalg.generic
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[Q:.*]] = arith.divui %[[M]], %c4
// CHECK: %[[FULL:.*]] = arith.muli %[[Q]], %c4
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%[[FULL]]) step (%c4)
// CHECK-COUNT-16: vector.fma
// CHECK: %[[REST:.*]] = arith.subi %[[M]], %[[FULL]]
// CHECK: scf.index_switch %[[REST]]
// CHECK: case 1 {
// CHECK-COUNT-4: vector.fma
// CHECK: case 2 {
// CHECK-COUNT-8: vector.fma
// CHECK: case 3 {
// CHECK-COUNT-12: vector.fma
// CHECK: default {
// CHECK-NOT: vector.fma
// CHECK: return
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @dynamic_rows(%x: memref<?x32xf32>, %w: memref<32x64xf32>, %y: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<?x32xf32>, memref<32x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A dynamic k or n is not a register-tiled product (it stays a loop nest).
// CHECK-LABEL: func.func @dynamic_columns
// CHECK: linalg.generic
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @dynamic_columns(%x: memref<4x32xf32>, %w: memref<32x?xf32>, %y: memref<4x?xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<4x32xf32>, memref<32x?xf32>) outs(%y : memref<4x?xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
