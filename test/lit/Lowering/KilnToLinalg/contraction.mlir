// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-to-linalg))' | FileCheck %s

// Tests that a batched matmul with a broadcast 2-D right operand is one
// contraction generic over (b, m, n, k).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @batched_matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batched_matmul(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// Tests that a bf16 matmul accumulates in f32 (products of widened
// operands into an f32 zero fill) and is narrowed to bf16 once, after.
// CHECK-LABEL: func @matmul_bf16
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: linalg.generic
// CHECK: arith.truncf {{.*}} : f32 to bf16
func.func @matmul_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xbf16> {
  %0 = kiln.matmul %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// -----

// Tests that a vector operand is promoted to a matrix and the result reshaped back.
// CHECK-LABEL: func @matvec
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK: tensor.collapse_shape {{.*}} into tensor<4xf32>
func.func @matvec(%a: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4xf32> {
  %0 = kiln.matmul %a, %v : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests gemm with trans_b reads B as (n, k) and adds the bias in an epilogue.
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func @gemm_trans_b
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[BT]], {{.*}}]
// CHECK: linalg.generic
// CHECK: arith.addf
func.func @gemm_trans_b(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.gemm %x, %w, %b {trans_b = true} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that conv2d pads explicitly and uses the NCHW/FCHW named op.
// CHECK-LABEL: func @conv
// CHECK: tensor.pad {{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: linalg.generic
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = kiln.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Tests that a channels-last depthwise conv pads its rows and columns
// (dimensions 1 and 2), collapses its HWIO weight to [KH, KW, C] for the
// NHWC named op, and adds its bias along the last dimension.
// CHECK-LABEL: func @depthwise_channels_last
// CHECK: tensor.pad {{.*}} low[0, 1, 2, 0] high[0, 3, 0, 0]
// CHECK: tensor.collapse_shape %arg1 {{\[\[}}0], [1], [2, 3]] : tensor<3x3x1x4xf32> into tensor<3x3x4xf32>
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>} {{.*}} -> tensor<2x9x3x4xf32>
// CHECK: tensor.expand_shape %arg2 {{.*}} into tensor<1x1x1x4xf32>
// CHECK: linalg.generic
func.func @depthwise_channels_last(%x: tensor<2x7x6x4xf32>, %w: tensor<3x3x1x4xf32>, %b: tensor<4xf32>) -> tensor<2x9x3x4xf32> {
  %0 = kiln.conv %x, %w, %b {channels_last, strides = array<i64: 1, 2>, pads = array<i64: 1, 2, 3, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : tensor<2x7x6x4xf32>, tensor<3x3x1x4xf32>, tensor<4xf32> -> tensor<2x9x3x4xf32>
  return %0 : tensor<2x9x3x4xf32>
}

// -----

// Tests that an ungrouped channels-last conv is the NHWC/HWCF named op.
// CHECK-LABEL: func @conv_channels_last
// CHECK: linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<1x6x6x5xf32>
func.func @conv_channels_last(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x5xf32>) -> tensor<1x6x6x5xf32> {
  %0 = kiln.conv %x, %w {channels_last, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x8x8x3xf32>, tensor<3x3x3x5xf32> -> tensor<1x6x6x5xf32>
  return %0 : tensor<1x6x6x5xf32>
}

// -----

// Tests that a grouped (depthwise) conv splits channels into groups.
// CHECK-LABEL: func @depthwise
// CHECK: tensor.expand_shape {{.*}} into tensor<1x4x1x8x8xf32>
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x4x6x6xf32>
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Tests that an 8-bit product is one contraction generic over (b, m, n, k)
// into an i32 zero fill: A's bytes zero-extended, B's sign-extended
// (vpdpbusd's operand types), whatever A's type says (ui8 before
// kiln-signless, i8 after).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @integer_matmul
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: linalg.fill ins(%[[ZERO]] : i32)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<2x4x8xi8>, tensor<8x16xi8>)
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: -> tensor<2x4x16xi32>
func.func @integer_matmul(%a: tensor<2x4x8xi8>, %b: tensor<8x16xi8>) -> tensor<2x4x16xi32> {
  %0 = kiln.matmul_integer %a, %b : tensor<2x4x8xi8>, tensor<8x16xi8> -> tensor<2x4x16xi32>
  return %0 : tensor<2x4x16xi32>
}
