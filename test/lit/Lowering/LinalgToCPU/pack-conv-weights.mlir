// RUN: kiln-opt %s -split-input-file -kiln-pack-conv-weights=vector-bits=128 | FileCheck %s

// Tests that a convolution's constant weights [F, C, KH, KW] = [8, 1, 1, 2]
// become two panels of 4 output channels, [2, 1, 1, 2, 4] (channel f of
// tap (c, kh, kw) at [f / 4, c, kh, kw, f % 4]), read through
// (f floordiv 4, c, kh, kw, f mod 4), with the input read at the
// convolution's strides (2 x 2 here) and the same body.
// CHECK-DAG: #[[$IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-DAG: #[[$W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1 floordiv 4, d4, d5, d6, d1 mod 4)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv
// CHECK: %[[W:.*]] = arith.constant dense_resource<packed_conv> : tensor<2x1x1x2x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$W]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%arg0, %[[W]] : tensor<1x1x5x6xf32>, tensor<2x1x1x2x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.conv_2d
// W[f, 0, 0, kw] = 2f + kw: panel 0 holds taps kw=0 (0, 2, 4, 6) and kw=1
// (1, 3, 5, 7), panel 1 (8, 10, 12, 14) and (9, 11, 13, 15).
// CHECK: packed_conv: "0x10000000
// CHECK-SAME: 0000000000000040000080400000C0400000803F000040400000A0400000E040
// CHECK-SAME: 0000004100002041000040410000604100001041000030410000504100007041"
func.func @conv(%x: tensor<1x1x5x6xf32>) -> tensor<1x8x3x3xf32> {
  %w = arith.constant dense<[[[[0.0, 1.0]]], [[[2.0, 3.0]]], [[[4.0, 5.0]]], [[[6.0, 7.0]]],
                             [[[8.0, 9.0]]], [[[10.0, 11.0]]], [[[12.0, 13.0]]], [[[14.0, 15.0]]]]> : tensor<8x1x1x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x1x5x6xf32>, tensor<8x1x1x2xf32>) outs(%init : tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
  return %y : tensor<1x8x3x3xf32>
}

// -----

// Tests what stays a convolution: weights known only at run time (a
// training step's), 6 output channels (not whole vectors of 4), and a
// dilation (kiln-vectorize-conv takes none).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: linalg.conv_2d_nchw_fchw
// CHECK-NOT: linalg.generic
func.func @kept(%x: tensor<1x2x6x6xf32>, %w: tensor<8x2x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x8x2x2xf32>) {
  %w6 = arith.constant dense<1.0> : tensor<6x2x3x3xf32>
  %w8 = arith.constant dense<1.0> : tensor<8x2x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<1x8x4x4xf32>
  %i8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %a = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x6x6xf32>, tensor<8x2x3x3xf32>) outs(%i8 : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %e6 = tensor.empty() : tensor<1x6x4x4xf32>
  %i6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %b = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w6 : tensor<1x2x6x6xf32>, tensor<6x2x3x3xf32>) outs(%i6 : tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %e2 = tensor.empty() : tensor<1x8x2x2xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w8 : tensor<1x2x6x6xf32>, tensor<8x2x3x3xf32>) outs(%i2 : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  return %a, %b, %c : tensor<1x8x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x8x2x2xf32>
}

// -----

// Tests a splat constant (every weight the same): packed as a splat of the
// packed shape, no bytes moved.
// CHECK-LABEL: func.func @splat
// CHECK: %[[W:.*]] = arith.constant dense<5.000000e-01> : tensor<1x2x3x3x4xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[W]] : tensor<1x2x6x6xf32>, tensor<1x2x3x3x4xf32>)
func.func @splat(%x: tensor<1x2x6x6xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<0.5> : tensor<4x2x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%i : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// Tests a stride of 3 (the packed tile reads any stride; before packing
// existed such a convolution went through im2col): packed, the input read
// at 3 oh + kh, 3 ow + kw.
// CHECK: #[[$IN3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 3 + d5, d3 * 3 + d6)>
// CHECK-LABEL: func.func @stride3
// CHECK: linalg.generic {indexing_maps = [#[[$IN3]], #{{.*}}, #{{.*}}]
// CHECK-NOT: linalg.conv_2d
func.func @stride3(%x: tensor<1x2x7x7xf32>) -> tensor<1x4x2x2xf32> {
  %w = arith.constant dense<0.5> : tensor<4x2x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x2x2xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x7x7xf32>, tensor<4x2x3x3xf32>) outs(%i : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %y : tensor<1x4x2x2xf32>
}
