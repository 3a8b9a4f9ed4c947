// RUN: kiln-opt %s -split-input-file -kiln-sink-transposes="channels-last-convs=true" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-sink-transposes | FileCheck %s --check-prefix=OFF

// Tests a ConvNeXt block: the depthwise 7x7 of the NHWC residual stream,
// permuted to NCHW for it and back after it, then the layer scale and the
// residual add on the block's NHWC result permuted to NCHW. Channels last,
// the convolution takes the stream as it is (its weight as HWIO, a
// constant's transpose, its bias unchanged); the transposes meet and
// cancel, and the scale is a reshape: no transpose is left.
// CHECK-LABEL: func.func @convnext_block
// CHECK-NOT: kiln.transpose %arg
// CHECK: %[[W:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 2, 3, 1, 0>} : tensor<8x1x7x7xf32> -> tensor<7x7x1x8xf32>
// CHECK: %[[C:.*]] = kiln.conv %arg0, %[[W]], %{{.*}} {channels_last, dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 1, 1>} : tensor<1x6x6x8xf32>, tensor<7x7x1x8xf32>, tensor<8xf32> -> tensor<1x6x6x8xf32>
// CHECK: %[[F:.*]] = kiln.relu %[[C]]
// CHECK: %[[M:.*]] = kiln.mul %[[F]], %{{.*}} : tensor<1x6x6x8xf32>, tensor<1x1x1x8xf32>
// CHECK: %[[A:.*]] = kiln.add %[[M]], %arg0
// CHECK-NOT: kiln.transpose %arg
// CHECK: return %[[A]]
// OFF-LABEL: func.func @convnext_block
// OFF: kiln.conv %{{.*}} {dilations
// OFF-COUNT-2: kiln.transpose
func.func @convnext_block(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  %w = kiln.constant dense<0.5> : tensor<8x1x7x7xf32>
  %b = kiln.constant dense<0.25> : tensor<8xf32>
  %s = kiln.constant dense<2.0> : tensor<8x1x1xf32>
  %xt = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x8xf32> -> tensor<1x8x6x6xf32>
  %c = kiln.conv %xt, %w, %b {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x1x7x7xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32>
  %ct = kiln.transpose %c {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32>
  %f = kiln.relu %ct : tensor<1x6x6x8xf32>
  %ft = kiln.transpose %f {perm = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x8xf32> -> tensor<1x8x6x6xf32>
  %m = kiln.mul %ft, %s : tensor<1x8x6x6xf32>, tensor<8x1x1xf32> -> tensor<1x8x6x6xf32>
  %y = kiln.add %m, %xt : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32>
  %yt = kiln.transpose %y {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32>
  return %yt : tensor<1x6x6x8xf32>
}

// -----

// Tests an NCHW image whose depthwise convolution's result is permuted to
// NHWC: the convolution runs channels last on the image's permute instead
// (as many bytes copied at unit strides), which then can cancel where the
// image was made.
// CHECK-LABEL: func.func @permuted_result
// CHECK: %[[X:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf32> -> tensor<2x5x5x8xf32>
// CHECK: %[[C:.*]] = kiln.conv %[[X]], %{{.*}} {channels_last
// CHECK-SAME: -> tensor<2x5x5x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[C]]
func.func @permuted_result(%x: tensor<2x8x5x5xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x5x5x8xf32> {
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<2x8x5x5xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x5x5xf32>
  %t = kiln.transpose %c {perm = array<i64: 0, 2, 3, 1>} : tensor<2x8x5x5xf32> -> tensor<2x5x5x8xf32>
  return %t : tensor<2x5x5x8xf32>
}

// -----

// Tests what stays NCHW: an ungrouped convolution, a stride-2 depthwise one
// whose permuted result would copy the 4x bigger input instead, and a
// depthwise one whose NCHW result something else reads too.
// CHECK-LABEL: func.func @stays_nchw
// CHECK-NOT: channels_last
// CHECK: return
func.func @stays_nchw(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>, %d: tensor<8x1x3x3xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x3x3x8xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>) {
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x6x6xf32>
  %ct = kiln.transpose %c {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32>
  %s = kiln.conv %x, %d {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x3x3xf32>
  %st = kiln.transpose %s {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x3x3xf32> -> tensor<1x3x3x8xf32>
  %u = kiln.conv %x, %d {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x6x6xf32>
  %ut = kiln.transpose %u {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32>
  return %ct, %st, %ut, %u : tensor<1x6x6x8xf32>, tensor<1x3x3x8xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>
}
