// RUN: kiln-opt %s -split-input-file -kiln-winograd-conv='min-channels=1 vector-bits=128' -canonicalize -one-shot-bufferize='bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map' -kiln-vectorize-winograd='vector-bits=128' -canonicalize -cse | FileCheck %s

// Tests that the transforms of a batch known at run time (4 x 4 tiles of
// 4 x 4 outputs per image, vectors of 4 tiles) become parallel loops over
// (image, tile row): each of the 4 input rows a tile row reads is two
// pairs of contiguous vectors, deinterleaved into the tiles' columns 0, 1
// (at 2 tx) and 2, 3 (at 2 tx + 2); the 16 transformed vectors stored to
// each image's panels, [16, N, 4, 1, 4] flat per plane (image n's tile row
// ty at n * 16 + ty * 4); the products' 16 vectors read back from [16, N,
// F, TY, TX] and the output's two rows of each tile row stored
// interleaved ([0, 4, 1, 5], [2, 6, 3, 7]).
// CHECK-DAG: #[[$AT:.*]] = affine_map<(d0, d1) -> (d0 * 16 + d1 * 4)>
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[PLANES:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<16x?xf32>
// CHECK: %[[FLAT:.*]] = memref.subview %[[PLANES]][0, 0] [16, %{{.*}}] [1, 1] : memref<16x?xf32> to memref<16x?xf32, strided<[?, 1]>>
// CHECK: %[[V:.*]] = memref.expand_shape %[[FLAT]] {{.*}} into memref<16x?x4x1x4xf32, strided<[?, 16, 4, 4, 1]>>
// CHECK: scf.parallel (%[[N:.*]], %[[TY:.*]]) =
// CHECK: %[[ROW:.*]] = arith.muli %[[TY]], %c2
// CHECK: %[[A:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c0]
// CHECK: %[[B:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c4]
// CHECK: vector.shuffle %[[A]], %[[B]] [0, 2, 4, 6]
// CHECK: vector.shuffle %[[A]], %[[B]] [1, 3, 5, 7]
// CHECK: vector.load %arg0[%[[N]], %c0, %[[ROW]], %c2]
// CHECK: vector.load %arg0[%[[N]], %c0, %[[ROW]], %c6]
// CHECK: %[[AT:.*]] = affine.apply #[[$AT]](%[[N]], %[[TY]])
// CHECK-COUNT-16: vector.store %{{.*}}, %[[FLAT]][%c{{[0-9]+}}, %[[AT]]] : memref<16x?xf32, strided<[?, 1]>>, vector<4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[V]] : memref<16x1x1xf32>, memref<16x?x4x1x4xf32, strided<[?, 16, 4, 4, 1]>>)
// CHECK: %[[Y:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x1x8x8xf32>
// CHECK: %[[M:.*]] = memref.expand_shape {{.*}} into memref<16x?x1x4x4xf32, strided<[?, 16, 16, 4, 1]>>
// CHECK: %[[ROWS:.*]] = memref.expand_shape %[[Y]] {{\[}}[0], [1], [2, 3], [4]] output_shape [%{{.*}}, 1, 4, 2, 8] : memref<?x1x8x8xf32> into memref<?x1x4x2x8xf32>
// CHECK: scf.parallel (%[[ON:.*]], %[[OTY:.*]]) =
// CHECK-COUNT-16: vector.load %[[M]][%c{{[0-9]+}}, %[[ON]], %c0, %[[OTY]], %c0] : memref<16x?x1x4x4xf32, strided<[?, 16, 16, 4, 1]>>, vector<4xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c0]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [2, 6, 3, 7]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c4]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c1, %c0]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c1, %c4]
// CHECK-NOT: kiln.winograd
func.func @dynamic(%x: tensor<?x1x10x10xf32>) -> tensor<?x1x8x8xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x1x10x10xf32>
  %e = tensor.empty(%n) : tensor<?x1x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x1x8x8xf32>) -> tensor<?x1x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x1x10x10xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<?x1x8x8xf32>) -> tensor<?x1x8x8xf32>
  return %y : tensor<?x1x8x8xf32>
}

// -----

// Tests a static batch: the tiles stored into panels of 4 through a view
// of each plane of [16, T/4, C, 4] as a row ([16, 8] of [16, 24]: planes
// a cache line more than their size apart), a case per lane a row of
// tiles can start at in its panel (0 or 2): one store where the vector's
// tiles fit their panel (masked by a constant: 2 tiles of 4 lanes), else
// two (the lanes left in the first panel, the rest into the next; AVX-512's
// 16-lane panels mask at run time instead); the output
// transform's epilogue (a channel's bias, broadcast, and a residual read
// along the output row) applied to the interleaved rows before the store.
// CHECK-LABEL: func.func @packed_epilogue
// CHECK: %[[PLANES:.*]] = memref.alloc() {{.*}} : memref<16x24xf32>
// CHECK: %[[FLAT:.*]] = memref.subview %[[PLANES]][0, 0] [16, 8] [1, 1] : memref<16x24xf32> to memref<16x8xf32, strided<[24, 1]>>
// CHECK: scf.parallel
// CHECK: scf.index_switch
// CHECK-NEXT: case 0 {
// CHECK-COUNT-16: vector.maskedstore %[[FLAT]][%c{{[0-9]+}}, %{{.*}}], %{{.*}}, %{{.*}} : memref<16x8xf32, strided<[24, 1]>>
// CHECK: case 2 {
// CHECK-COUNT-16: vector.maskedstore %[[FLAT]]
// CHECK: default {
// CHECK: scf.parallel (%[[ON:.*]], %[[OTY:.*]]) =
// CHECK: %[[ROW0:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5]
// CHECK: %[[BIAS:.*]] = memref.load %arg1[%c0] : memref<1xf32>
// CHECK: %[[BIASES:.*]] = vector.broadcast %[[BIAS]] : f32 to vector<4xf32>
// CHECK: %[[RES:.*]] = vector.load %arg2[%[[ON]], %c0, %{{.*}}, %c0] : memref<2x1x4x4xf32>, vector<4xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ROW0]], %[[BIASES]]
// CHECK: %[[OUT:.*]] = arith.addf %[[SUM]], %[[RES]]
// CHECK: vector.store %[[OUT]]
// CHECK-NOT: kiln.winograd
func.func @packed_epilogue(%x: tensor<2x1x6x6xf32>, %bias: tensor<1xf32>, %res: tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x1x6x6xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %e2 = tensor.empty() : tensor<2x1x4x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(n, f, h, w) -> (n, f, h, w)>, affine_map<(n, f, h, w) -> (f)>,
                                        affine_map<(n, f, h, w) -> (n, f, h, w)>, affine_map<(n, f, h, w) -> (n, f, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %bias, %res : tensor<2x1x4x4xf32>, tensor<1xf32>, tensor<2x1x4x4xf32>) outs(%e2 : tensor<2x1x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  } -> tensor<2x1x4x4xf32>
  return %z : tensor<2x1x4x4xf32>
}

// -----

// Tests F(4x4, 3x3)'s transforms (a dynamic batch, 4 x 4 tiles of 4 x 4
// outputs per image, vectors of 4 tiles): each of a tile row's 6 input
// rows is 4 contiguous vectors at 4 tx (and, for the tiles' columns 4 and
// 5, those at 4 tx + 4: the same but for a last one of 2 lanes), picked
// at a stride of 4 by two levels of even/odd shuffles; 36 vectors stored
// per tile row; the products' 36 vectors read back, and each of the 4
// output rows of a tile row stored as 4 vectors, 4 tiles' columns
// interleaved by two levels of shuffles.
// CHECK-LABEL: func.func @four
// CHECK: memref.alloc(%{{.*}}) {{.*}} : memref<36x?xf32>
// CHECK: scf.parallel (%[[N:.*]], %[[TY:.*]]) =
// CHECK: %[[ROW:.*]] = arith.muli %[[TY]], %c4
// CHECK: %[[A:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c0]
// CHECK: %[[B:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c4]
// CHECK: %[[C:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c8]
// CHECK: %[[D:.*]] = vector.load %arg0[%[[N]], %c0, %[[ROW]], %c12]
// CHECK: %[[AB:.*]] = vector.shuffle %[[A]], %[[B]] [0, 2, 4, 6]
// CHECK: %[[CD:.*]] = vector.shuffle %[[C]], %[[D]] [0, 2, 4, 6]
// CHECK: vector.shuffle %[[AB]], %[[CD]] [0, 2, 4, 6]
// CHECK: %[[E:.*]] = vector.maskedload %arg0[%[[N]], %c0, %[[ROW]], %c16]
// CHECK: vector.shuffle %[[B]], %[[C]] [0, 2, 4, 6]
// CHECK: vector.shuffle %[[D]], %[[E]] [0, 2, 4, 6]
// CHECK-COUNT-36: vector.store %{{.*}} : memref<36x?xf32, strided<[?, 1]>>, vector<4xf32>
// CHECK: %[[Y:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x1x16x16xf32>
// CHECK: %[[ROWS:.*]] = memref.expand_shape %[[Y]] {{\[}}[0], [1], [2, 3], [4]] output_shape [%{{.*}}, 1, 4, 4, 16]
// CHECK: scf.parallel (%[[ON:.*]], %[[OTY:.*]]) =
// CHECK-COUNT-36: vector.load
// CHECK: %[[P:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5]
// CHECK: %[[Q:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5]
// CHECK: %[[PQ:.*]] = vector.shuffle %[[P]], %[[Q]] [0, 4, 1, 5]
// CHECK: vector.store %[[PQ]], %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c0]
// CHECK: vector.shuffle %[[P]], %[[Q]] [2, 6, 3, 7]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c4]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c8]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c0, %c12]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%[[ON]], %c0, %[[OTY]], %c3, %c12]
// CHECK-NOT: kiln.winograd
func.func @four(%x: tensor<?x1x18x18xf32>) -> tensor<?x1x16x16xf32> {
  %w = arith.constant dense<1.0> : tensor<1x1x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x1x18x18xf32>
  %e = tensor.empty(%n) : tensor<?x1x16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x1x16x16xf32>) -> tensor<?x1x16x16xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x1x18x18xf32>, tensor<1x1x3x3xf32>) outs(%init : tensor<?x1x16x16xf32>) -> tensor<?x1x16x16xf32>
  return %y : tensor<?x1x16x16xf32>
}

// -----

// Tests that a dynamic batch's input transform whose tile rows are shorter
// than half a panel (1 tile a row, panels of 4) splits by blocks of
// channels, not by tile rows, which would share panels' lines between
// threads: a parallel loop over (image, block of 16 channels), in it the
// tile rows, then the block's channels.
// CHECK-LABEL: func.func @dynamic_channel_blocks
// CHECK: scf.parallel (%[[N:.*]], %[[BLOCK:.*]]) = (%c0, %c0) to (%{{.*}}, %c2) step (%c1, %c1)
// CHECK-NEXT: scf.for %[[TY:.*]] = %c0 to %c8 step %c1
// CHECK-NEXT: scf.for %[[C:.*]] = %c0 to %c16 step %c1
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[BLOCK]], %c16
// CHECK-NEXT: %[[CHANNEL:.*]] = arith.addi %[[FIRST]], %[[C]]
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[TY]], %c2
// CHECK: vector.maskedload %arg0[%[[N]], %[[CHANNEL]], %[[ROW]], %c0]
func.func @dynamic_channel_blocks(%x: tensor<?x32x18x4xf32>) -> tensor<?x1x16x2xf32> {
  %w = arith.constant dense<1.0> : tensor<1x32x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32x18x4xf32>
  %e = tensor.empty(%n) : tensor<?x1x16x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x1x16x2xf32>) -> tensor<?x1x16x2xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x32x18x4xf32>, tensor<1x32x3x3xf32>) outs(%init : tensor<?x1x16x2xf32>) -> tensor<?x1x16x2xf32>
  return %y : tensor<?x1x16x2xf32>
}
