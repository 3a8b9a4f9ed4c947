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
// CHECK: %[[REST:.*]] = arith.subi %[[M]], %[[FULL]]
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%[[FULL]]) step (%c4)
// CHECK-COUNT-16: vector.fma
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

// Columns known at run time (attention's keys as n): whole chunks of four
// vectors in a loop, then, if any are left, one chunk whose loads and
// stores are masked to them (vector.create_mask of the count left less
// each vector's first column).
// CHECK-LABEL: func.func @dynamic_columns
// CHECK: %[[N:.*]] = memref.dim %arg1, %c1 : memref<32x?xf32>
// CHECK: %[[Q:.*]] = arith.divui %[[N]], %c64 : index
// CHECK: %[[WHOLE:.*]] = arith.muli %[[Q]], %c64 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[WHOLE]] step %c64
// CHECK: vector.fma
// CHECK: %[[REST:.*]] = arith.subi %[[N]], %[[WHOLE]] : index
// CHECK: %[[ANY:.*]] = arith.cmpi sgt, %[[REST]], %c0 : index
// CHECK: scf.if %[[ANY]]
// CHECK: vector.create_mask %[[REST]] : vector<16xi1>
// CHECK: %[[R16:.*]] = arith.subi %[[REST]], %c16 : index
// CHECK: vector.create_mask %[[R16]] : vector<16xi1>
// CHECK: vector.maskedload %arg2
// CHECK: vector.maskedload %arg1
// CHECK: vector.fma
// CHECK: vector.maskedstore %arg2
// CHECK-NOT: linalg.generic
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

// -----

// A k known at run time (attention's probabilities times values): the
// accumulating loop runs to it.
// CHECK-LABEL: func.func @dynamic_depth
// CHECK: %[[K:.*]] = memref.dim %arg0, %c1 : memref<4x?xf32>
// CHECK: scf.for %{{.*}} = %c0 to %[[K]] step %c1 iter_args(
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @dynamic_depth(%x: memref<4x?xf32>, %w: memref<?x64xf32>, %y: memref<4x64xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<4x?xf32>, memref<?x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a linear layer alone with rows known at run time and four column
// chunks or more (a classifier after pooling, K = 256: 8 x 2 tiles of 32
// columns): under 8 row blocks (64 rows) its column chunks are the
// parallel loop, each chunk's full row blocks and rest serial inside; from
// 8 blocks on, the row blocks as above.
// CHECK-LABEL: func.func @few_rows
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[M]], %c64
// CHECK: scf.if %[[FEW]] {
// CHECK: scf.parallel (%[[N0:.*]]) = (%c0) to (%c96) step (%c32)
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK-COUNT-16: vector.fma
// CHECK: scf.index_switch
// CHECK: } else {
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%{{.*}}) step (%c8)
// CHECK: return
#fa = affine_map<(m, k, n) -> (m, k)>
#fb = affine_map<(m, k, n) -> (k, n)>
#fc = affine_map<(m, k, n) -> (m, n)>
func.func @few_rows(%x: memref<?x256xf32>, %w: memref<256x128xf32>, %y: memref<?x128xf32>) {
  linalg.generic {indexing_maps = [#fa, #fb, #fc], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<?x256xf32>, memref<256x128xf32>) outs(%y : memref<?x128xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
