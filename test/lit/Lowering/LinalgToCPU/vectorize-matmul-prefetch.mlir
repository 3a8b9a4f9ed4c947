// RUN: kiln-opt %s -split-input-file -kiln-vectorize-matmul=vector-bits=512 | FileCheck %s

// Tests a column tile of a linear layer whose weights were packed at
// compile time ([N/16, K, 16], the tile a [2, K, 16] slice of them): its
// blocks request the next tile's two panels while they compute, a line
// every 2 k steps (4 row blocks of 8 rows share 2 panels), the panel
// index clamped to the weights' last. Blocks past the panels (none here)
// would take the loop without prefetches.
// CHECK-LABEL: func.func @next_panel
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : index
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK: %[[P0:.*]] = affine.apply
// CHECK: %[[AFTER:.*]] = arith.addi %[[P0]], %[[C2]]
// CHECK: scf.parallel
// CHECK: %[[NEXT:.*]] = arith.addi %[[AFTER]], %{{.*}}
// CHECK: %[[ROW:.*]] = arith.minui %[[NEXT]], %[[C7]]
// CHECK: scf.if %{{.*}} -> (vector<16xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[LINE:.*]] = arith.addi %{{.*}}, %{{.*}}
// CHECK: memref.prefetch %{{.*}}[%[[ROW]], %[[LINE]], %{{.*}}], read, locality<2>, data : memref<8x64x16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK: else
// CHECK: scf.for
// CHECK-NOT: memref.prefetch
// CHECK-COUNT-16: vector.fma
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#c = affine_map<(m, n, k) -> (m, n)>
#panel = affine_map<(n) -> (n floordiv 16)>
func.func @next_panel(%x: memref<32x64xf32>, %weights: memref<32768xi8>, %y: memref<32x128xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %w = memref.view %weights[%c0][] : memref<32768xi8> to memref<8x64x16xf32>
  scf.parallel (%n) = (%c0) to (%c128) step (%c32) {
    %p = affine.apply #panel(%n)
    %wt = memref.subview %w[%p, 0, 0] [2, 64, 16] [1, 1, 1] : memref<8x64x16xf32> to memref<2x64x16xf32, strided<[1024, 16, 1], offset: ?>>
    %yt = memref.subview %y[0, %n] [32, 32] [1, 1] : memref<32x128xf32> to memref<32x32xf32, strided<[128, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%yt : memref<32x32xf32, strided<[128, 1], offset: ?>>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %wt : memref<32x64xf32>, memref<2x64x16xf32, strided<[1024, 16, 1], offset: ?>>)
        outs(%yt : memref<32x32xf32, strided<[128, 1], offset: ?>>) {
    ^bb0(%in: f32, %in_w: f32, %out: f32):
      %m = arith.mulf %in, %in_w : f32
      %s = arith.addf %out, %m : f32
      linalg.yield %s : f32
    }
    scf.reduce
  }
  return
}

// -----

// Tests that a B packed at run time (a stack temporary: a 1x1
// convolution's image) is not prefetched.
// CHECK-LABEL: func.func @run_time_panel
// CHECK-NOT: memref.prefetch
// CHECK: vector.fma
#a2 = affine_map<(m, n, k) -> (m, k)>
#b2 = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#c2 = affine_map<(m, n, k) -> (m, n)>
func.func @run_time_panel(%x: memref<32x64xf32>, %img: memref<8x64x16xf32>, %y: memref<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %t = memref.alloca() : memref<8x64x16xf32>
  memref.copy %img, %t : memref<8x64x16xf32> to memref<8x64x16xf32>
  %wt = memref.subview %t[0, 0, 0] [2, 64, 16] [1, 1, 1] : memref<8x64x16xf32> to memref<2x64x16xf32, strided<[1024, 16, 1]>>
  linalg.generic {indexing_maps = [#a2, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wt : memref<32x64xf32>, memref<2x64x16xf32, strided<[1024, 16, 1]>>)
      outs(%y : memref<32x32xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  }
  return
}
