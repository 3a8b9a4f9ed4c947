// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Round trip of every kiln op through the printer and parser.

// CHECK-LABEL: func @elementwise
func.func @elementwise(%x: tensor<2x8xf32>, %b: tensor<8xf32>, %c: tensor<2x8xi1>) -> tensor<2x8xf32> {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %0 = kiln.add %x, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %1 = kiln.sub %0, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %2 = kiln.mul %1, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = kiln.div %2, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = kiln.pow %3, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %5 = kiln.max %4, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %6 = kiln.min %5, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %7 = kiln.neg %6 : tensor<2x8xf32>
  %8 = kiln.abs %7 : tensor<2x8xf32>
  %9 = kiln.exp %8 : tensor<2x8xf32>
  %10 = kiln.log %9 : tensor<2x8xf32>
  %11 = kiln.sqrt %10 : tensor<2x8xf32>
  %12 = kiln.erf %11 : tensor<2x8xf32>
  %13 = kiln.tanh %12 : tensor<2x8xf32>
  %14 = kiln.sigmoid %13 : tensor<2x8xf32>
  %15 = kiln.relu %14 : tensor<2x8xf32>
  // CHECK: kiln.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x8xf32>
  %16 = kiln.clip %15 {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x8xf32>
  // CHECK: kiln.less {{.*}} -> tensor<2x8xi1>
  %17 = kiln.less %16, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xi1>
  %18 = kiln.not %17 : tensor<2x8xi1>
  %19 = kiln.and %18, %c : tensor<2x8xi1>, tensor<2x8xi1> -> tensor<2x8xi1>
  // CHECK: kiln.where
  %20 = kiln.where %19, %16, %x : tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: kiln.cast %{{.*}} : tensor<2x8xf32> -> tensor<2x8xi64>
  %21 = kiln.cast %20 : tensor<2x8xf32> -> tensor<2x8xi64>
  %22 = kiln.cast %21 : tensor<2x8xi64> -> tensor<2x8xf32>
  return %22 : tensor<2x8xf32>
}

// CHECK-LABEL: func @contractions
func.func @contractions(%a: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %x: tensor<1x3x8x8xf32>,
                        %k: tensor<4x3x3x3xf32>, %bias: tensor<4xf32>) -> (tensor<2x4x16xf32>, tensor<4x16xf32>, tensor<1x4x8x8xf32>) {
  // CHECK: kiln.matmul {{.*}} -> tensor<2x4x16xf32>
  %0 = kiln.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %a2 = kiln.reshape %a : tensor<2x4x8xf32> -> tensor<8x8xf32>
  // CHECK: kiln.gemm {{.*}} {alpha = 5.000000e-01 : f32, trans_a = true}
  %1 = kiln.gemm %a2, %w {alpha = 0.5 : f32, trans_a = true} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %2 = kiln.slice %1 {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 0>, steps = array<i64: 1>} : tensor<8x16xf32> -> tensor<4x16xf32>
  // CHECK: kiln.conv
  %3 = kiln.conv %x, %k, %bias {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  return %0, %2, %3 : tensor<2x4x16xf32>, tensor<4x16xf32>, tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func @norms_pools_reductions
func.func @norms_pools_reductions(%x: tensor<1x4x8x8xf32>, %p: tensor<4xf32>, %t: tensor<2x8xf32>, %g: tensor<8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<1x8xf32>, tensor<2x1xf32>) {
  %0 = kiln.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  // CHECK: kiln.max_pool {{.*}} -> tensor<1x4x4x4xf32>
  %1 = kiln.max_pool %0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %2 = kiln.avg_pool %0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %3 = kiln.global_avg_pool %0 : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  // CHECK: kiln.softmax {{.*}}axis = 1
  %4 = kiln.softmax %t {axis = 1 : i64} : tensor<2x8xf32>
  // CHECK: kiln.layer_norm
  %5 = kiln.layer_norm %t, %g, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // CHECK: kiln.reduce_sum {{.*}} -> tensor<2xf32>
  %6 = kiln.reduce_sum %t {axes = array<i64: 1>, keepdims = false} : tensor<2x8xf32> -> tensor<2xf32>
  %7 = kiln.reduce_mean %t {axes = array<i64: 0>, keepdims = true} : tensor<2x8xf32> -> tensor<1x8xf32>
  %8 = kiln.reduce_max %t {axes = array<i64: -1>} : tensor<2x8xf32> -> tensor<2x1xf32>
  return %1, %2, %3, %4, %5, %6, %7, %8 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x1x1xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<1x8xf32>, tensor<2x1xf32>
}

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<1x2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = kiln.flatten %x {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: kiln.transpose {{.*}}perm = array<i64: 2, 1, 0>
  %1 = kiln.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  %2 = kiln.concat %x, %x {axis = 1 : i64} : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x6x4xf32>
  // CHECK: kiln.split {{.*}} -> tensor<2x1x4xf32>, tensor<2x2x4xf32>
  %3:2 = kiln.split %x {axis = 1 : i64, sizes = array<i64: 1, 2>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>, tensor<2x2x4xf32>
  // CHECK: kiln.gather {{.*}} -> tensor<2x3x5xf32>
  %4 = kiln.gather %x, %i {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<5xi64> -> tensor<2x3x5xf32>
  %5 = kiln.trilu %x {upper = false, k = 1 : i64} : tensor<2x3x4xf32>
  %c = kiln.constant dense<1.0> : tensor<f32>
  %6 = kiln.unsqueeze %x {axes = array<i64: 0>} : tensor<2x3x4xf32> -> tensor<1x2x3x4xf32>
  %7 = kiln.squeeze %6 {axes = array<i64: 0>} : tensor<1x2x3x4xf32> -> tensor<2x3x4xf32>
  %8 = kiln.identity %7 : tensor<2x3x4xf32>
  return %0, %1, %2, %3#0, %3#1, %4, %5, %c, %6, %8 : tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<1x2x3x4xf32>, tensor<2x3x4xf32>
}
