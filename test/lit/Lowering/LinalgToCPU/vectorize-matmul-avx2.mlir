// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=256 | FileCheck %s

// Tests the register tile with AVX2's 16 registers: 4 rows x 3 vectors of
// 8 (12 accumulators), a power-of-two row block, so per k step each
// loaded vector of B feeds 4 FMAs. (3 rows x 4 vectors made kernel
// formation tile rows by 2: each vector of B fed 2.)
// CHECK-LABEL: func.func @linear
// CHECK: scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(
// CHECK-COUNT-3: vector.load %arg1[%[[K]], %{{.*}}] : memref<64x96xf32>, vector<8xf32>
// CHECK-NOT: vector.load %arg1
// CHECK: memref.load %arg0
// CHECK-COUNT-3: vector.fma
// CHECK: memref.load %arg0
// CHECK-COUNT-3: vector.fma
// CHECK: memref.load %arg0
// CHECK-COUNT-3: vector.fma
// CHECK: memref.load %arg0
// CHECK-COUNT-3: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
#a = affine_map<(m, k, n) -> (m, k)>
#b = affine_map<(m, k, n) -> (k, n)>
#c = affine_map<(m, k, n) -> (m, n)>
func.func @linear(%x: memref<16x64xf32>, %w: memref<64x96xf32>, %y: memref<16x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<16x64xf32>, memref<64x96xf32>) outs(%y : memref<16x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests B packed by kiln-pack-matmul-weights ([N/8, K, 8], read at
// (n floordiv 8, k, n mod 8)): each column vector loads row k of its
// panel, n / 8, from column 0; the rest as above.
// CHECK-LABEL: func.func @packed
// CHECK: scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(
// CHECK: %[[P:.*]] = arith.divui %{{.*}}, %c8
// CHECK: vector.load %arg1[%[[P]], %[[K]], %c0] : memref<12x64x8xf32>, vector<8xf32>
// CHECK-COUNT-2: vector.load %arg1[%{{.*}}, %[[K]], %c0] : memref<12x64x8xf32>, vector<8xf32>
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-12: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
func.func @packed(%x: memref<16x64xf32>, %w: memref<12x64x8xf32>, %y: memref<16x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m, k)>, affine_map<(m, k, n) -> (n floordiv 8, k, n mod 8)>, affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<16x64xf32>, memref<12x64x8xf32>) outs(%y : memref<16x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests A packed by rows too ([M/4, K, 4] read at (m floordiv 4, k, m mod
// 4), a 1x1 convolution's weights): each row's panel and lane are found
// once, before the k loop, and its element at k is A[panel, k, lane].
// CHECK-LABEL: func.func @packed_rows
// CHECK-DAG: %[[P0:.*]] = arith.divui %[[R0:.*]], %c4
// CHECK-DAG: %[[L0:.*]] = arith.remui %[[R0]], %c4
// CHECK: scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(
// CHECK-COUNT-3: vector.load %arg1[%{{.*}}, %[[K]], %c0] : memref<12x64x8xf32>, vector<8xf32>
// CHECK: memref.load %arg0[%[[P0]], %[[K]], %[[L0]]] : memref<4x64x4xf32>
// CHECK-COUNT-3: vector.fma
// CHECK-COUNT-3: memref.load %arg0[%{{.*}}, %[[K]], %{{.*}}] : memref<4x64x4xf32>
// CHECK: scf.yield
func.func @packed_rows(%x: memref<4x64x4xf32>, %w: memref<12x64x8xf32>, %y: memref<16x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k, n) -> (m floordiv 4, k, m mod 4)>, affine_map<(m, k, n) -> (n floordiv 8, k, n mod 8)>, affine_map<(m, k, n) -> (m, n)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<4x64x4xf32>, memref<12x64x8xf32>) outs(%y : memref<16x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a weight gradient X^T dY with dY packed: A read as (k, m) (X's
// column per row of C) still takes the register tile.
// CHECK-LABEL: func.func @packed_trans_a
// CHECK: scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(
// CHECK-COUNT-3: vector.load %arg1[%{{.*}}, %[[K]], %c0] : memref<12x64x8xf32>, vector<8xf32>
// CHECK: memref.load %arg0[%[[K]], %{{.*}}] : memref<64x16xf32>
// CHECK-COUNT-12: vector.fma
func.func @packed_trans_a(%x: memref<64x16xf32>, %w: memref<12x64x8xf32>, %y: memref<16x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n floordiv 8, k, n mod 8)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x16xf32>, memref<12x64x8xf32>) outs(%y : memref<16x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests a 32-column panel of a 1x1 convolution's product (64 rows of
// weights): its first 24 columns in 4-row blocks of 3 vectors, its last 8
// in 12-row blocks of one vector (12 accumulators, not 4), then the 4
// rows left.
// CHECK-LABEL: func.func @wide_tail
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c64) step (%c4)
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(
// CHECK-COUNT-12: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%c60) step (%c12)
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(
// CHECK: vector.load %arg1[%c3, %[[K]], %c0] : memref<4x16x8xf32>, vector<8xf32>
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-12: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
// CHECK: scf.for %[[K2:.*]] = %c0 to %c16 step %c1 iter_args(
// CHECK: memref.load %arg0[%c60, %[[K2]]]
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
func.func @wide_tail(%w: memref<64x16xf32>, %x: memref<4x16x8xf32>, %y: memref<64x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(f, p, c) -> (f, c)>, affine_map<(f, p, c) -> (p floordiv 8, c, p mod 8)>, affine_map<(f, p, c) -> (f, p)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<64x16xf32>, memref<4x16x8xf32>) outs(%y : memref<64x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
