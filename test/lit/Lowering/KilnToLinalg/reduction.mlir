// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-to-linalg))' | FileCheck %s

// Tests that reduce_mean is a sum reduction followed by a division.
// CHECK-LABEL: func @reduce_mean
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: tensor.collapse_shape {{.*}} into tensor<2xf32>
func.func @reduce_mean(%x: tensor<2x8xf32>) -> tensor<2xf32> {
  %0 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : tensor<2x8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Tests that softmax decomposes into max, exp(x - max), sum, divide.
// CHECK-LABEL: func @softmax
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.softmax %x {axis = -1 : i64} : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests that layer_norm computes mean and variance, then normalizes.
// CHECK-LABEL: func @layer_norm
// CHECK-COUNT-2: iterator_types = ["parallel", "reduction"]
// CHECK: math.sqrt
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests that batch_norm is a single per-channel generic.
// CHECK-LABEL: func @batch_norm
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
func.func @batch_norm(%x: tensor<1x4x8x8xf32>, %p: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = kiln.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// Tests that max pooling pads with -inf and uses the named pooling op.
// CHECK-LABEL: func @max_pool
// CHECK: tensor.pad
// CHECK: linalg.pooling_nchw_max
func.func @max_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Tests that average pooling without count_include_pad divides each window
// by its count of real elements (4 at the padded corner, 6 on edges).
// CHECK-LABEL: func @avg_pool
// CHECK: linalg.pooling_nchw_sum
// CHECK: arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00], [6.000000e+00, 9.000000e+00]]> : tensor<2x2xf32>
func.func @avg_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = kiln.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Tests that a bf16 softmax and layer norm compute in f32: the input
// widened first, the result narrowed last (a bf16 running sum keeps 8 bits).
// CHECK-LABEL: func @half_softmax
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: math.exp {{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: return {{.*}} : tensor<2x8xbf16>
func.func @half_softmax(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  %0 = kiln.softmax %x {axis = -1 : i64} : tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// -----

// CHECK-LABEL: func @half_layer_norm
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: math.sqrt {{.*}} : f32
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @half_layer_norm(%x: tensor<2x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> tensor<2x8xf16> {
  %0 = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16> -> tensor<2x8xf16>
  return %0 : tensor<2x8xf16>
}
