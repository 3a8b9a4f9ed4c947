// RUN: kiln-opt %s -kiln-vectorize-pool=vector-bits=512 -canonicalize -cse | FileCheck %s

// Tests that a 3x3 max pool of stride 2 over a batch known at run time
// becomes a parallel loop over (image, channel, output row) whose 5-wide
// rows are one vector of 8 (masked): each of the 9 taps the even lanes of
// two contiguous vectors from the tap's column (the second masked to the
// row's end: 9 elements from column kw), folded in by the pool's maximum.
// CHECK-LABEL: func.func @max_strided
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK: scf.parallel (%[[I:.*]], %[[C:.*]], %[[OH:.*]]) = (%c0, %c0, %c0) to (%[[N]], %c2, %c4)
// CHECK: %[[ROW:.*]] = vector.constant_mask [5] : vector<8xi1>
// CHECK: %[[ACC:.*]] = vector.maskedload %arg1[%[[I]], %[[C]], %[[OH]], %c0], %[[ROW]]
// CHECK: %[[IH:.*]] = arith.muli %[[OH]], %c2
// CHECK: %[[LO:.*]] = vector.load %arg0[%[[I]], %[[C]], %[[IH]], %c0] : memref<?x2x9x11xf32>, vector<8xf32>
// CHECK: %[[HI:.*]] = vector.maskedload %arg0[%[[I]], %[[C]], %[[IH]], %c8]
// CHECK: %[[TAP:.*]] = vector.shuffle %[[LO]], %[[HI]] [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK: arith.maximumf %[[ACC]], %[[TAP]] : vector<8xf32>
// CHECK-COUNT-8: arith.maximumf
// CHECK: vector.maskedstore %arg1[%[[I]], %[[C]], %[[OH]], %c0], %[[ROW]]
// CHECK-NOT: linalg.pooling
func.func @max_strided(%x: memref<?x2x9x11xf32>, %y: memref<?x2x4x5xf32>) {
  %w = memref.alloc() : memref<3x3xf32>
  linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<?x2x9x11xf32>, memref<3x3xf32>) outs(%y : memref<?x2x4x5xf32>)
  return
}

// Tests a sum pool (an average pool's sums) of stride 1 over one image: a
// single image is no loop, the taps are rows read in place.
// CHECK-LABEL: func.func @sum
// CHECK: scf.parallel (%[[C:.*]], %[[OH:.*]]) = (%c0, %c0) to (%c3, %c3)
// CHECK: %[[ACC:.*]] = vector.maskedload %arg1[%c0, %[[C]], %[[OH]], %c0]
// CHECK: %[[TAP:.*]] = vector.maskedload %arg0[%c0, %[[C]], %[[OH]], %c0]
// CHECK: arith.addf %[[ACC]], %[[TAP]] : vector<16xf32>
// CHECK: vector.maskedload %arg0[%c0, %[[C]], %[[OH]], %c1]
// CHECK-COUNT-3: arith.addf
// CHECK: vector.maskedstore %arg1[%c0, %[[C]], %[[OH]], %c0]
// CHECK-NOT: linalg.pooling
func.func @sum(%x: memref<1x3x4x10xf32>, %y: memref<1x3x3x9xf32>) {
  %w = memref.alloc() : memref<2x2xf32>
  linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x3x4x10xf32>, memref<2x2xf32>) outs(%y : memref<1x3x3x9xf32>)
  return
}

// Tests that a column stride of 3 is left to the loops.
// CHECK-LABEL: func.func @stride3
// CHECK: linalg.pooling_nchw_max
func.func @stride3(%x: memref<1x1x7x7xf32>, %y: memref<1x1x2x2xf32>) {
  %w = memref.alloc() : memref<3x3xf32>
  linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
    ins(%x, %w : memref<1x1x7x7xf32>, memref<3x3xf32>) outs(%y : memref<1x1x2x2xf32>)
  return
}
