// RUN: kiln-opt %s -split-input-file -kiln-sink-transposes | FileCheck %s

// Tests that a transpose moves below a requantization chain (cast, mul by
// a scalar, round) when the transpose back after it then composes away:
// the chain runs on the untransposed tensor and no transpose is left.
// CHECK-LABEL: func.func @chain_cancels
// CHECK-NOT: kiln.transpose
// CHECK: %[[C:.*]] = kiln.cast %arg0 : tensor<1x4x6x8xi32> -> tensor<1x4x6x8xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[C]], %{{.*}} : tensor<1x4x6x8xf32>, tensor<f32> -> tensor<1x4x6x8xf32>
// CHECK: %[[R:.*]] = kiln.round %[[M]] : tensor<1x4x6x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[R]]
func.func @chain_cancels(%x: tensor<1x4x6x8xi32>) -> tensor<1x4x6x8xf32> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xi32> -> tensor<1x8x4x6xi32>
  %c = kiln.cast %t : tensor<1x8x4x6xi32> -> tensor<1x8x4x6xf32>
  %m = kiln.mul %c, %s : tensor<1x8x4x6xf32>, tensor<f32> -> tensor<1x8x4x6xf32>
  %r = kiln.round %m : tensor<1x8x4x6xf32>
  %b = kiln.transpose %r {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x6xf32> -> tensor<1x4x6x8xf32>
  return %b : tensor<1x4x6x8xf32>
}

// -----

// Tests that two operands transposed alike become one transpose after the
// add (a residual add of two channels-last convolutions' outputs).
// CHECK-LABEL: func.func @two_become_one
// CHECK: %[[A:.*]] = kiln.add %arg0, %arg1 : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[A]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
// CHECK: return %[[T]]
func.func @two_become_one(%x: tensor<1x4x6x8xf32>, %y: tensor<1x4x6x8xf32>) -> tensor<1x8x4x6xf32> {
  %a = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %b = kiln.transpose %y {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %s = kiln.add %a, %b : tensor<1x8x4x6xf32>, tensor<1x8x4x6xf32> -> tensor<1x8x4x6xf32>
  return %s : tensor<1x8x4x6xf32>
}

// -----

// Tests that a batch known only at run time moves with its dimension: two
// NHWC images added after their NCHW transposes, then transposed back
// (a quantized residual add over a dynamic batch), add channels last and
// no transpose left.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-NOT: kiln.transpose
// CHECK: %[[A:.*]] = kiln.add %arg0, %arg1 : tensor<?x4x6x8xf32>, tensor<?x4x6x8xf32> -> tensor<?x4x6x8xf32>
// CHECK: return %[[A]]
func.func @dynamic_batch(%x: tensor<?x4x6x8xf32>, %y: tensor<?x4x6x8xf32>) -> tensor<?x4x6x8xf32> {
  %a = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<?x4x6x8xf32> -> tensor<?x8x4x6xf32>
  %b = kiln.transpose %y {perm = array<i64: 0, 3, 1, 2>} : tensor<?x4x6x8xf32> -> tensor<?x8x4x6xf32>
  %s = kiln.add %a, %b : tensor<?x8x4x6xf32>, tensor<?x8x4x6xf32> -> tensor<?x8x4x6xf32>
  %t = kiln.transpose %s {perm = array<i64: 0, 2, 3, 1>} : tensor<?x8x4x6xf32> -> tensor<?x4x6x8xf32>
  return %t : tensor<?x4x6x8xf32>
}

// -----

// Tests that a channels-last image's dequantization and mean over its
// pixels (global average pooling) run without the NCHW copy: the
// transpose sinks below the elementwise ops (the mean is where it ends),
// the mean reduces the NHWC pixel axes (1, 2) and a reshape gives the
// [1, C, 1, 1] result.
// CHECK-LABEL: func.func @into_mean
// CHECK-NOT: kiln.transpose
// CHECK: %[[C:.*]] = kiln.cast %arg0 : tensor<1x7x7x16xui8> -> tensor<1x7x7x16xf32>
// CHECK: %[[M:.*]] = kiln.reduce_mean %[[C]] {axes = array<i64: 2, 1>} : tensor<1x7x7x16xf32> -> tensor<1x1x1x16xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[M]] : tensor<1x1x1x16xf32> -> tensor<1x16x1x1xf32>
// CHECK: return %[[R]]
func.func @into_mean(%x: tensor<1x7x7x16xui8>) -> tensor<1x16x1x1xf32> {
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x16xui8> -> tensor<1x16x7x7xui8>
  %c = kiln.cast %t : tensor<1x16x7x7xui8> -> tensor<1x16x7x7xf32>
  %m = kiln.reduce_mean %c {axes = array<i64: -1, -2>} : tensor<1x16x7x7xf32> -> tensor<1x16x1x1xf32>
  return %m : tensor<1x16x1x1xf32>
}

// -----

// Tests that a transpose of f32 values moves below their requantization
// to uint8 (a QDQ model's convolution output before a max-pool): the
// copy then moves a quarter of the bytes.
// CHECK-LABEL: func.func @to_narrower
// CHECK: kiln.round %{{.*}} : tensor<1x4x6x8xf32>
// CHECK: %[[Q:.*]] = kiln.cast %{{.*}} : tensor<1x4x6x8xf32> -> tensor<1x4x6x8xui8>
// CHECK: %[[T:.*]] = kiln.transpose %[[Q]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xui8> -> tensor<1x8x4x6xui8>
// CHECK: return %[[T]]
func.func @to_narrower(%x: tensor<1x4x6x8xf32>) -> tensor<1x8x4x6xui8> {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %d = kiln.div %t, %s : tensor<1x8x4x6xf32>, tensor<f32> -> tensor<1x8x4x6xf32>
  %r = kiln.round %d : tensor<1x8x4x6xf32>
  %q = kiln.cast %r : tensor<1x8x4x6xf32> -> tensor<1x8x4x6xui8>
  return %q : tensor<1x8x4x6xui8>
}

// -----

// Tests that a max-pool of a dequantized channels-last uint8 image (cast,
// minus a zero point, times a positive scale: order kept) pools the
// integers channels last: the image padded with 0 (uint8's lowest), its
// 3x3 windows' 9 strided slices' elementwise maximum, then the transpose
// and the dequantization on the pooled tensor.
// CHECK-LABEL: func.func @into_max_pool
// CHECK: %[[P:.*]] = kiln.pad %arg0 {pads = array<i64: 0, 1, 1, 0, 0, 0, 0, 0>} : tensor<1x8x8x16xui8> -> tensor<1x9x9x16xui8>
// CHECK-COUNT-9: kiln.slice %[[P]] {{.*}}steps = array<i64: 2, 2>} : tensor<1x9x9x16xui8> -> tensor<1x4x4x16xui8>
// CHECK: %[[M:.*]] = kiln.max {{.*}} : tensor<1x4x4x16xui8>, tensor<1x4x4x16xui8> -> tensor<1x4x4x16xui8>
// CHECK: %[[T:.*]] = kiln.transpose %[[M]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x16xui8> -> tensor<1x16x4x4xui8>
// CHECK: %[[C:.*]] = kiln.cast %[[T]] : tensor<1x16x4x4xui8> -> tensor<1x16x4x4xf32>
// CHECK: %[[S:.*]] = kiln.sub %[[C]], %{{.*}} : tensor<1x16x4x4xf32>, tensor<f32> -> tensor<1x16x4x4xf32>
// CHECK: %[[D:.*]] = kiln.mul %[[S]], %{{.*}} : tensor<1x16x4x4xf32>, tensor<f32> -> tensor<1x16x4x4xf32>
// CHECK-NOT: kiln.max_pool
// CHECK: return %[[D]]
func.func @into_max_pool(%x: tensor<1x8x8x16xui8>) -> tensor<1x16x4x4xf32> {
  %z = kiln.constant dense<3.0> : tensor<f32>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x8x8x16xui8> -> tensor<1x16x8x8xui8>
  %c = kiln.cast %t : tensor<1x16x8x8xui8> -> tensor<1x16x8x8xf32>
  %d = kiln.sub %c, %z : tensor<1x16x8x8xf32>, tensor<f32> -> tensor<1x16x8x8xf32>
  %q = kiln.mul %d, %s : tensor<1x16x8x8xf32>, tensor<f32> -> tensor<1x16x8x8xf32>
  %p = kiln.max_pool %q {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  return %p : tensor<1x16x4x4xf32>
}

// -----

// Tests that a max-pool after a negative scale (order reversed) stays.
// CHECK-LABEL: func.func @max_pool_negative_scale
// CHECK: kiln.transpose
// CHECK: kiln.max_pool
func.func @max_pool_negative_scale(%x: tensor<1x8x8x16xui8>) -> tensor<1x16x4x4xf32> {
  %s = kiln.constant dense<-0.25> : tensor<f32>
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x8x8x16xui8> -> tensor<1x16x8x8xui8>
  %c = kiln.cast %t : tensor<1x16x8x8xui8> -> tensor<1x16x8x8xf32>
  %q = kiln.mul %c, %s : tensor<1x16x8x8xf32>, tensor<f32> -> tensor<1x16x8x8xf32>
  %p = kiln.max_pool %q {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  return %p : tensor<1x16x4x4xf32>
}

// -----

// Tests what stays: a transpose whose elementwise user leads to no other
// transpose (moving it would only move the copy), one with another user,
// one added to a tensor that is not transposed, and two by different
// permutations.
// CHECK-LABEL: func.func @stays
// CHECK: %[[T:.*]] = kiln.transpose %arg0
// CHECK: kiln.relu %[[T]]
// CHECK: %[[U:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 1>}
// CHECK: %[[N:.*]] = kiln.neg %[[U]]
// CHECK: kiln.transpose %[[N]]
// CHECK: %[[V:.*]] = kiln.transpose %arg0
// CHECK: kiln.add %[[V]], %arg1
// CHECK: %[[P:.*]] = kiln.transpose %arg0 {perm = array<i64: 1, 0, 2>}
// CHECK: %[[Q:.*]] = kiln.transpose %arg2 {perm = array<i64: 0, 2, 1>}
// CHECK: kiln.sub %[[P]], %[[Q]]
func.func @stays(%x: tensor<2x2x4xf32>, %z: tensor<2x2x4xf32>, %w: tensor<2x4x2xf32>)
    -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  %r = kiln.relu %t : tensor<2x2x4xf32>
  %u = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x2x4xf32> -> tensor<2x4x2xf32>
  %n = kiln.neg %u : tensor<2x4x2xf32>
  %nb = kiln.transpose %n {perm = array<i64: 0, 2, 1>} : tensor<2x4x2xf32> -> tensor<2x2x4xf32>
  %v = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  %a = kiln.add %v, %z : tensor<2x2x4xf32>, tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  %p = kiln.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  %q = kiln.transpose %w {perm = array<i64: 0, 2, 1>} : tensor<2x4x2xf32> -> tensor<2x2x4xf32>
  %d = kiln.sub %p, %q : tensor<2x2x4xf32>, tensor<2x2x4xf32> -> tensor<2x2x4xf32>
  return %r, %nb, %u, %a, %d : tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x4x2xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>
}

// -----

// Tests that an operand broadcast along the permuted dimensions moves as a
// reshape (ConvNeXt's layer scale, [C, 1, 1] against NCHW, is [1, 1, 1, C]
// channels last), so the transpose sinks past the mul and the add and
// cancels against the one after them.
// CHECK-LABEL: func.func @layer_scale
// CHECK-NOT: kiln.transpose
// CHECK: %[[S:.*]] = kiln.reshape %arg2 : tensor<8x1x1xf32> -> tensor<1x1x1x8xf32>
// CHECK: %[[M:.*]] = kiln.mul %arg0, %[[S]] : tensor<1x4x6x8xf32>, tensor<1x1x1x8xf32> -> tensor<1x4x6x8xf32>
// CHECK: %[[A:.*]] = kiln.add %[[M]], %arg1 : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[A]]
func.func @layer_scale(%x: tensor<1x4x6x8xf32>, %r: tensor<1x4x6x8xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x4x6x8xf32> {
  %a = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %b = kiln.transpose %r {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %m = kiln.mul %a, %s : tensor<1x8x4x6xf32>, tensor<8x1x1xf32> -> tensor<1x8x4x6xf32>
  %y = kiln.add %m, %b : tensor<1x8x4x6xf32>, tensor<1x8x4x6xf32> -> tensor<1x8x4x6xf32>
  %t = kiln.transpose %y {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x6xf32> -> tensor<1x4x6x8xf32>
  return %t : tensor<1x4x6x8xf32>
}

// -----

// Tests that a broadcast operand whose permutation is no reshape (a [4, 1,
// 6] against NCHW moves its 4 and 6 apart) keeps the transpose in place.
// CHECK-LABEL: func.func @broadcast_not_reshape
// CHECK: kiln.transpose %arg0
// CHECK: kiln.mul
// CHECK: kiln.transpose
func.func @broadcast_not_reshape(%x: tensor<1x4x6x8xf32>, %s: tensor<8x1x6xf32>) -> tensor<1x4x6x8xf32> {
  %a = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %m = kiln.mul %a, %s : tensor<1x8x4x6xf32>, tensor<8x1x6xf32> -> tensor<1x8x4x6xf32>
  %t = kiln.transpose %m {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x6xf32> -> tensor<1x4x6x8xf32>
  return %t : tensor<1x4x6x8xf32>
}

// -----

// Tests that an operand transposed back already for another op (the
// residual stream, NHWC for the next block's convolution) joins as that
// copy: add(T(a), r) with T'(r) read elsewhere becomes T(add(a, T'(r))),
// and the T after the add cancels; T'(r) is still the one copy of r.
// CHECK-LABEL: func.func @inverse_copy
// CHECK: %[[R:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[A:.*]] = kiln.add %arg0, %[[R]] : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32> -> tensor<1x4x6x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[A]], %[[R]]
func.func @inverse_copy(%x: tensor<1x4x6x8xf32>, %r: tensor<1x8x4x6xf32>) -> (tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>) {
  %a = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x6x8xf32> -> tensor<1x8x4x6xf32>
  %y = kiln.add %a, %r : tensor<1x8x4x6xf32>, tensor<1x8x4x6xf32> -> tensor<1x8x4x6xf32>
  %t = kiln.transpose %y {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x6xf32> -> tensor<1x4x6x8xf32>
  %rt = kiln.transpose %r {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x4x6xf32> -> tensor<1x4x6x8xf32>
  return %t, %rt : tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>
}

// -----

// Tests torch's MultiheadAttention split of its packed q, k, v: a
// transpose bringing the 3 forward, a reshape dropping a unit dimension,
// then a gather of each by a constant index. Each gather becomes a slice
// of the untransposed tensor (its transpose then moves only unit
// dimensions: a reshape), and the whole-tensor transpose is gone.
// CHECK-LABEL: func.func @qkv_split
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.gather
// CHECK: kiln.slice %arg0 {axes = array<i64: 3>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<1x5x1x3x8xf32> -> tensor<1x5x1x1x8xf32>
// CHECK: kiln.slice %arg0 {axes = array<i64: 3>, ends = array<i64: 3>, starts = array<i64: 2>, steps = array<i64: 1>} : tensor<1x5x1x3x8xf32> -> tensor<1x5x1x1x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return
func.func @qkv_split(%x: tensor<1x5x1x3x8xf32>) -> (tensor<5x1x8xf32>, tensor<5x1x8xf32>) {
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i2 = kiln.constant dense<-1> : tensor<i64>
  %t = kiln.transpose %x {perm = array<i64: 3, 1, 2, 0, 4>} : tensor<1x5x1x3x8xf32> -> tensor<3x5x1x1x8xf32>
  %r = kiln.reshape %t : tensor<3x5x1x1x8xf32> -> tensor<3x5x1x8xf32>
  %q = kiln.gather %r, %i0 : tensor<3x5x1x8xf32>, tensor<i64> -> tensor<5x1x8xf32>
  %v = kiln.gather %r, %i2 : tensor<3x5x1x8xf32>, tensor<i64> -> tensor<5x1x8xf32>
  return %q, %v : tensor<5x1x8xf32>, tensor<5x1x8xf32>
}

// -----

// Tests that a transpose something else reads too stays, and so do the
// gathers of it.
// CHECK-LABEL: func.func @gather_shared
// CHECK: kiln.transpose
// CHECK: kiln.gather
func.func @gather_shared(%x: tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %i = kiln.constant dense<1> : tensor<i64>
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
  %g = kiln.gather %t, %i : tensor<3x4xf32>, tensor<i64> -> tensor<4xf32>
  %e = kiln.exp %t : tensor<3x4xf32>
  return %g, %e : tensor<4xf32>, tensor<3x4xf32>
}
