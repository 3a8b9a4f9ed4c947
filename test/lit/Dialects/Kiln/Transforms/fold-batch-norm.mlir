// RUN: kiln-opt %s -split-input-file -kiln-fold-batch-norm | FileCheck %s

// Tests that an inference batch-norm after a convolution with constant
// weights folds into them: s = g / sqrt(v + eps) = [2, 0.5] (eps = 0 here),
// W' = W * s per output channel, b' = (b - m) * s + beta = [(1 - 1) * 2 + 3,
// (0 - 2) * 0.5 + 1] = [3, 0]. The batch-norm is gone.
// CHECK-LABEL: func.func @conv_bn
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<bn_folded_weight> : tensor<2x1x1x2xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<bn_folded_bias> : tensor<2xf32>
// CHECK: %[[Y:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_norm
// CHECK: return %[[Y]]
// CHECK: bn_folded_weight: "0x{{[0-9A-F]+}}000000400000804000000000000000BF"
// CHECK: bn_folded_bias: "0x{{[0-9A-F]+}}0000404000000000"
func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x3xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0]]], [[[0.0, -1.0]]]]> : tensor<2x1x1x2xf32>
  %b = kiln.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %g = kiln.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %beta = kiln.constant dense<[3.0, 1.0]> : tensor<2xf32>
  %m = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %v = kiln.constant dense<[4.0, 4.0]> : tensor<2xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32>, tensor<2xf32> -> tensor<1x2x4x3xf32>
  %y = kiln.batch_norm %c, %g, %beta, %m, %v {epsilon = 0.0 : f32}
      : tensor<1x2x4x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x3xf32>
  return %y : tensor<1x2x4x3xf32>
}

// -----

// Tests the refusals: weights that are arguments (training lifts them),
// and a convolution whose result is also used elsewhere.
// CHECK-LABEL: func.func @not_folded
// CHECK-COUNT-2: kiln.batch_norm
func.func @not_folded(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x1x2xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) {
  %wc = kiln.constant dense<1.0> : tensor<2x1x1x2xf32>
  %s = kiln.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32> -> tensor<1x2x4x3xf32>
  %y = kiln.batch_norm %c, %s, %s, %s, %s : tensor<1x2x4x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x3xf32>
  %c2 = kiln.conv %x, %wc {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32> -> tensor<1x2x4x3xf32>
  %y2 = kiln.batch_norm %c2, %s, %s, %s, %s : tensor<1x2x4x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x3xf32>
  return %y, %y2, %c2 : tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>
}

// -----

// Tests f16 (a half-precision model): the same fold, the products formed
// in double and rounded once to f16: W' = [2, 4, 0, -0.5] (0x4000 0x4400
// 0x0000 0xB800), b' = [3, 0] (0x4200 0x0000).
// CHECK-LABEL: func.func @conv_bn_f16
// CHECK-DAG: kiln.constant dense_resource<bn_folded_weight{{.*}}> : tensor<2x1x1x2xf16>
// CHECK-DAG: kiln.constant dense_resource<bn_folded_bias{{.*}}> : tensor<2xf16>
// CHECK-NOT: kiln.batch_norm
// CHECK: bn_folded_weight{{.*}}: "0x{{[0-9A-F]+}}00400044000000B8"
// CHECK: bn_folded_bias{{.*}}: "0x{{[0-9A-F]+}}00420000"
func.func @conv_bn_f16(%x: tensor<1x1x4x4xf16>) -> tensor<1x2x4x3xf16> {
  %w = kiln.constant dense<[[[[1.0, 2.0]]], [[[0.0, -1.0]]]]> : tensor<2x1x1x2xf16>
  %b = kiln.constant dense<[1.0, 0.0]> : tensor<2xf16>
  %g = kiln.constant dense<[4.0, 1.0]> : tensor<2xf16>
  %beta = kiln.constant dense<[3.0, 1.0]> : tensor<2xf16>
  %m = kiln.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %v = kiln.constant dense<[4.0, 4.0]> : tensor<2xf16>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : tensor<1x1x4x4xf16>, tensor<2x1x1x2xf16>, tensor<2xf16> -> tensor<1x2x4x3xf16>
  %y = kiln.batch_norm %c, %g, %beta, %m, %v {epsilon = 0.0 : f32}
      : tensor<1x2x4x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16> -> tensor<1x2x4x3xf16>
  return %y : tensor<1x2x4x3xf16>
}

// -----

// Tests that an f16 fold that would overflow (60000 * 2 > 65504) is left
// to run time.
// CHECK-LABEL: func.func @conv_bn_f16_overflow
// CHECK: kiln.batch_norm
func.func @conv_bn_f16_overflow(%x: tensor<1x1x4x4xf16>) -> tensor<1x2x4x3xf16> {
  %w = kiln.constant dense<60000.0> : tensor<2x1x1x2xf16>
  %s = kiln.constant dense<[4.0, 1.0]> : tensor<2xf16>
  %z = kiln.constant dense<0.0> : tensor<2xf16>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : tensor<1x1x4x4xf16>, tensor<2x1x1x2xf16> -> tensor<1x2x4x3xf16>
  %y = kiln.batch_norm %c, %s, %z, %z, %s {epsilon = 0.0 : f32}
      : tensor<1x2x4x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16> -> tensor<1x2x4x3xf16>
  return %y : tensor<1x2x4x3xf16>
}
