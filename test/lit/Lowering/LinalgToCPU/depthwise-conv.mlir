// RUN: kiln-opt %s -split-input-file -kiln-depthwise-conv | FileCheck %s

// Tests a grouped convolution of one channel per group (the form Kiln's
// lowering gives a depthwise Conv) becoming the depthwise op on the 4-D
// image and [C, KH, KW] weights; the image's reshape into the grouped
// form folds away, and the result is the 4-D product the collapse read.
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x10x10xf32>, %[[W:.*]]: tensor<8x1x3x3xf32>)
// CHECK: %[[W3:.*]] = tensor.collapse_shape %{{.*}} : tensor<8x1x1x3x3xf32> into tensor<8x3x3xf32>
// CHECK: %[[Y:.*]] = linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%[[X]], %[[W3]] : tensor<2x8x10x10xf32>, tensor<8x3x3xf32>) outs(%{{.*}} : tensor<2x8x8x8xf32>)
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: return %[[Y]]
func.func @depthwise(%x: tensor<2x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %gx = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [2, 8, 1, 10, 10] : tensor<2x8x10x10xf32> into tensor<2x8x1x10x10xf32>
  %gw = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [8, 1, 1, 3, 3] : tensor<8x1x3x3xf32> into tensor<8x1x1x3x3xf32>
  %e = tensor.empty() : tensor<2x8x1x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x1x8x8xf32>) -> tensor<2x8x1x8x8xf32>
  %g = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%gx, %gw : tensor<2x8x1x10x10xf32>, tensor<8x1x1x3x3xf32>) outs(%init : tensor<2x8x1x8x8xf32>) -> tensor<2x8x1x8x8xf32>
  %y = tensor.collapse_shape %g [[0], [1, 2], [3], [4]] : tensor<2x8x1x8x8xf32> into tensor<2x8x8x8xf32>
  return %y : tensor<2x8x8x8xf32>
}

// -----

// Tests that groups of two channels stay grouped.
// CHECK-LABEL: func.func @grouped
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
func.func @grouped(%x: tensor<1x4x2x6x6xf32>, %w: tensor<4x2x2x3x3xf32>, %init: tensor<1x4x2x4x4xf32>) -> tensor<1x4x2x4x4xf32> {
  %g = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x2x6x6xf32>, tensor<4x2x2x3x3xf32>) outs(%init : tensor<1x4x2x4x4xf32>) -> tensor<1x4x2x4x4xf32>
  return %g : tensor<1x4x2x4x4xf32>
}

// -----

// Tests a dynamic batch: the depthwise op on the 4-D image all the same
// (the batch a reshape group of its own), the result expanded with the
// run-time batch.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: %[[Y:.*]] = linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%arg0, %{{.*}} : tensor<?x8x10x10xf32>, tensor<8x3x3xf32>) outs(%{{.*}} : tensor<?x8x8x8xf32>)
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: return %[[Y]]
func.func @dynamic_batch(%x: tensor<?x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<?x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8x10x10xf32>
  %gx = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [%n, 8, 1, 10, 10] : tensor<?x8x10x10xf32> into tensor<?x8x1x10x10xf32>
  %gw = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [8, 1, 1, 3, 3] : tensor<8x1x3x3xf32> into tensor<8x1x1x3x3xf32>
  %e = tensor.empty(%n) : tensor<?x8x1x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8x1x8x8xf32>) -> tensor<?x8x1x8x8xf32>
  %g = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%gx, %gw : tensor<?x8x1x10x10xf32>, tensor<8x1x1x3x3xf32>) outs(%init : tensor<?x8x1x8x8xf32>) -> tensor<?x8x1x8x8xf32>
  %y = tensor.collapse_shape %g [[0], [1, 2], [3], [4]] : tensor<?x8x1x8x8xf32> into tensor<?x8x8x8xf32>
  return %y : tensor<?x8x8x8xf32>
}
