// RUN: kiln-opt %s -split-input-file -kiln-autograd -canonicalize -cse -verify-diagnostics | FileCheck %s

// The loss y = sum(relu(x * w)): dw = sum over the broadcast of dy * x where
// x * w > 0; one gradient result per parameter, named after it. Every op
// built is marked kiln.backward (kiln-partition reads it).
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {kiln.grad_of = 1 : i64, kiln.name = "grad:w"})
// CHECK: %[[P:.*]] = kiln.mul %arg0, %arg1
// CHECK: %[[POS:.*]] = kiln.greater %[[P]], %{{.*}} {kiln.backward}
// CHECK: %[[D:.*]] = kiln.where %[[POS]]
// CHECK: %[[DW:.*]] = kiln.mul %[[D]], %arg0
// CHECK: %[[S:.*]] = kiln.reduce_sum %[[DW]] {axes = array<i64: 0>, kiln.backward}
// CHECK: %[[G:.*]] = kiln.reshape %[[S]] {kiln.backward} : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3xf32> {kiln.name = "w", kiln.param}) -> tensor<f32> {
  %p = kiln.mul %x, %w : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %r = kiln.relu %p : tensor<2x3xf32>
  %l = kiln.reduce_sum %r {axes = array<i64>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both gradients; a parameter that does
// not reach the loss gets zeros.
// CHECK-LABEL: func.func @main
// CHECK: %[[ZERO:.*]] = kiln.constant {kiln.backward} dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[T:.*]] = kiln.tanh %arg0
// CHECK: kiln.add
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
func.func @main(%a: tensor<4xf32> {kiln.name = "a", kiln.param}, %unused: tensor<4xf32> {kiln.name = "u", kiln.param}) -> tensor<f32> {
  %t = kiln.tanh %a : tensor<4xf32>
  %m = kiln.mul %t, %t : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = kiln.reduce_sum %m {axes = array<i64>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op whose rule does not cover its attributes is an error at that op.
func.func @main(%a: tensor<2x3xf32> {kiln.name = "a", kiln.param}) -> tensor<f32> {
  %i = kiln.constant dense<[[1], [0]]> : tensor<2x1xi64>
  // expected-error @+1 {{has no gradient rule with batch_dims > 0}}
  %p = kiln.gather_nd %a, %i {batch_dims = 1 : i64} : tensor<2x3xf32>, tensor<2x1xi64> -> tensor<2xf32>
  %l = kiln.reduce_sum %p {axes = array<i64>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{the loss must be a one-element floating-point tensor}}
func.func @main(%a: tensor<4xf32> {kiln.param}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Weights shared by every batch of a matmul (a linear layer over
// [batch, seq, features]): dW is one Gemm with transA over all batch*seq
// rows, not a product per batch summed after.
// CHECK-LABEL: func.func @main
// CHECK-SAME: tensor<4x3xf32> {kiln.grad_of = 1 : i64, kiln.name = "grad:w"}
// CHECK: %[[XR:.*]] = kiln.reshape %arg0 {kiln.backward} : tensor<2x5x4xf32> -> tensor<10x4xf32>
// CHECK: %[[DYR:.*]] = kiln.reshape %{{.*}} {kiln.backward} : tensor<2x5x3xf32> -> tensor<10x3xf32>
// CHECK: %[[DW:.*]] = kiln.gemm %[[XR]], %[[DYR]] {{{.*}}kiln.backward{{.*}}trans_a = true{{.*}}} : tensor<10x4xf32>, tensor<10x3xf32> -> tensor<4x3xf32>
// CHECK-NOT: kiln.reduce_sum
// CHECK: return %{{.*}}, %[[DW]]
func.func @main(%x: tensor<2x5x4xf32>, %w: tensor<4x3xf32> {kiln.name = "w", kiln.param}) -> tensor<f32> {
  %y = kiln.matmul %x, %w : tensor<2x5x4xf32>, tensor<4x3xf32> -> tensor<2x5x3xf32>
  %l = kiln.reduce_sum %y {axes = array<i64>, keepdims = false} : tensor<2x5x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Under a dynamic batch a convolution's weight gradient can't make the
// batch a convolution's channels: the columns each kernel offset reads
// (strided slices of the padded input, the batch kept whole) are
// concatenated and contracted with dy over the run-time images x
// positions, one Gemm. Global average pooling's gradient is sized by the
// batch at run time.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = kiln.pad %arg0 {kiln.backward, pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>} : tensor<?x2x4x4xf32> -> tensor<?x2x5x5xf32>
// CHECK: kiln.slice %[[P]] {axes = array<i64: 2, 3>, ends = array<i64: 3, 3>, kiln.backward, starts = array<i64: 0, 0>, steps = array<i64: 2, 2>} : tensor<?x2x5x5xf32> -> tensor<?x2x2x2xf32>
// CHECK: %[[COLS:.*]] = kiln.concat {{.*}} {axis = 2 : i64, kiln.backward} {{.*}} -> tensor<?x2x9x2x2xf32>
// CHECK: %[[DW:.*]] = kiln.gemm %{{.*}}, %{{.*}} {kiln.backward, trans_b = true} : tensor<3x?xf32>, tensor<18x?xf32> -> tensor<3x18xf32>
// CHECK: %[[G:.*]] = kiln.reshape %[[DW]] {kiln.backward} : tensor<3x18xf32> -> tensor<3x2x3x3xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @main(%x: tensor<?x2x4x4xf32>, %w: tensor<3x2x3x3xf32> {kiln.name = "w", kiln.param}) -> tensor<f32> {
  %c = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : tensor<?x2x4x4xf32>, tensor<3x2x3x3xf32> -> tensor<?x3x2x2xf32>
  %g = kiln.global_avg_pool %c : tensor<?x3x2x2xf32> -> tensor<?x3x1x1xf32>
  %l = kiln.reduce_sum %g {axes = array<i64>, keepdims = false} : tensor<?x3x1x1xf32> -> tensor<f32>
  return %l : tensor<f32>
}
