// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-to-linalg))' | FileCheck %s

// Tests that reshape is a collapse then an expansion (views, no copy): here
// the shapes share no factor but the whole, so through 1-D.
// CHECK-LABEL: func @reshape
// CHECK: tensor.collapse_shape {{.*}} into tensor<24xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<4x6xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// A static reshape goes through the two shapes' common factorization
// ([197, 768] here), not 1-D: a strided slice stays a view (ViT's q, k, v
// slices of the packed projection, split into heads).
// CHECK-LABEL: func @reshape_common_factors
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2, 3], [4]] : tensor<1x197x1x1x768xf32> into tensor<197x768xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] {{.*}} : tensor<197x768xf32> into tensor<197x12x64xf32>
func.func @reshape_common_factors(%x: tensor<1x197x1x1x768xf32>) -> tensor<197x12x64xf32> {
  %0 = kiln.reshape %x : tensor<1x197x1x1x768xf32> -> tensor<197x12x64xf32>
  return %0 : tensor<197x12x64xf32>
}

// -----

// Only a split (no collapse first), only a merge (no expand after).
// CHECK-LABEL: func @reshape_split_or_merge
// CHECK-NOT: tensor.collapse_shape
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] {{.*}} : tensor<2x6xf32> into tensor<2x3x2xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<4x1x6xf32> into tensor<4x6xf32>
// CHECK-NOT: tensor.expand_shape
func.func @reshape_split_or_merge(%x: tensor<2x6xf32>, %y: tensor<4x1x6xf32>) -> (tensor<2x3x2xf32>, tensor<4x6xf32>) {
  %0 = kiln.reshape %x : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %1 = kiln.reshape %y : tensor<4x1x6xf32> -> tensor<4x6xf32>
  return %0, %1 : tensor<2x3x2xf32>, tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func @transpose
// CHECK: linalg.transpose ins({{.*}}) outs({{.*}}) permutation = [0, 2, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  %0 = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

// Tests that concat inserts each input at its offset and split extracts.
// CHECK-LABEL: func @concat_split
// CHECK: tensor.insert_slice {{.*}}[0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice {{.*}}[0, 3] [2, 3] [1, 1]
// CHECK: tensor.extract_slice {{.*}}[0, 0] [2, 2] [1, 1]
// CHECK: tensor.extract_slice {{.*}}[0, 2] [2, 4] [1, 1]
func.func @concat_split(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %0 = kiln.concat %x, %x {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %1:2 = kiln.split %0 {axis = -1 : i64, sizes = array<i64: 2, 4>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  return %1#0, %1#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// Tests that a split along a static axis keeps the input's dynamic sizes
// (attention's q, k, v under a dynamic batch and sequence).
// CHECK-LABEL: func @split_dynamic
// CHECK-DAG: %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[S:.*]] = tensor.dim %arg0, %c1
// CHECK: tensor.extract_slice %arg0[0, 0, 0] [%[[B]], %[[S]], 4] [1, 1, 1] : tensor<?x?x12xf32> to tensor<?x?x4xf32>
// CHECK: tensor.extract_slice %arg0[0, 0, 4] [%[[B]], %[[S]], 8] [1, 1, 1] : tensor<?x?x12xf32> to tensor<?x?x8xf32>
func.func @split_dynamic(%x: tensor<?x?x12xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x8xf32>) {
  %0:2 = kiln.split %x {axis = 2 : i64, sizes = array<i64: 4, 8>} : tensor<?x?x12xf32> -> tensor<?x?x4xf32>, tensor<?x?x8xf32>
  return %0#0, %0#1 : tensor<?x?x4xf32>, tensor<?x?x8xf32>
}

// -----

// Tests that a concat of more than 32 pieces (an unrolled recurrence's
// steps) is one tensor.concat: bufferization's analysis of a chain of
// insert_slices grows with its square.
// CHECK-LABEL: func @long_concat
// CHECK-NOT: tensor.insert_slice
// CHECK: tensor.concat dim(0) {{.*}} -> tensor<33x2xf32>
func.func @long_concat(%x: tensor<1x2xf32>) -> tensor<33x2xf32> {
  %0 = kiln.concat %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x {axis = 0 : i64} : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32> -> tensor<33x2xf32>
  return %0 : tensor<33x2xf32>
}

// -----

// Tests that positive-step slices are extract_slice and negative ones gather.
// CHECK-LABEL: func @slices
// CHECK: tensor.extract_slice {{.*}}[0, 1] [2, 3] [1, 2]
// CHECK: linalg.generic
// CHECK: tensor.extract
func.func @slices(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x8xf32>) {
  %0 = kiln.slice %x {starts = array<i64: 1>, ends = array<i64: 6>, axes = array<i64: 1>, steps = array<i64: 2>} : tensor<2x8xf32> -> tensor<2x3xf32>
  %1 = kiln.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775807>, axes = array<i64: 1>, steps = array<i64: -1>} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x8xf32>
}

// -----

// Tests that slices and pads of known axes keep a dynamic batch whole, its
// size read from the input (gradients of pooling and convolutions).
// CHECK-LABEL: func @dynamic_batch
// CHECK-DAG: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.extract_slice %arg0[0, 1] [%[[N]], 3] [1, 2] : tensor<?x8xf32> to tensor<?x3xf32>
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[M]]) : tensor<?x11xf32>
// CHECK: linalg.generic
// CHECK: arith.subi %[[M]], %c1
// CHECK: tensor.extract %arg0
func.func @dynamic_batch(%x: tensor<?x8xf32>) -> (tensor<?x3xf32>, tensor<?x11xf32>) {
  %0 = kiln.slice %x {starts = array<i64: 1>, ends = array<i64: 6>, axes = array<i64: 1>, steps = array<i64: 2>} : tensor<?x8xf32> -> tensor<?x3xf32>
  %1 = kiln.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "constant", value = 0.0 : f64} : tensor<?x8xf32> -> tensor<?x11xf32>
  return %0, %1 : tensor<?x3xf32>, tensor<?x11xf32>
}

// -----

// Tests that gather normalizes negative indices and clamps before extracting.
// CHECK-LABEL: func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.select
// CHECK: arith.minsi
// CHECK: tensor.extract
func.func @gather(%x: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = kiln.gather %x, %i {axis = 0 : i64} : tensor<5x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Tests a gather along an axis known only at run time (the dynamo
// exporter's as_strided over a flattened batch): its indices are clamped
// to the axis's size read by tensor.dim.
// CHECK-LABEL: func @gather_dynamic_axis
// CHECK: %[[N:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?xf32>
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.addi %{{.*}}, %[[N]]
// CHECK: arith.subi %[[N]], %c1
// CHECK: tensor.extract %arg0
func.func @gather_dynamic_axis(%x: tensor<?xf32>, %i: tensor<?x4xi64>) -> tensor<?x4xf32> {
  %0 = kiln.gather %x, %i {axis = 0 : i64} : tensor<?xf32>, tensor<?x4xi64> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Tests that trilu keeps elements by comparing column - row with k.
// CHECK-LABEL: func @trilu
// CHECK: linalg.index 1
// CHECK: arith.cmpi sge
// CHECK: arith.select
func.func @trilu(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kiln.trilu %x {upper = true, k = 1 : i64} : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Tests that constants keep their (resource) payload as arith.constant.
// CHECK-LABEL: func @constant
// CHECK: arith.constant dense_resource<w> : tensor<2xf32>
func.func @constant() -> tensor<2xf32> {
  %0 = kiln.constant dense_resource<w> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Tests that im2col is one copy generic over (n, oh, ow, kh, kw, c) reading
// the image at (n, oh*2 + kh*1, ow*2 + kw*1, c) (strides 2, dilations 1;
// a dynamic batch sized from the input), collapsed to the rows.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
// CHECK-LABEL: func @im2col
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x3x3x3x3x4xi8>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[IN]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<?x7x7x4xi8>) outs(%[[E]]
// CHECK: tensor.collapse_shape %[[G]] {{\[\[}}0], [1], [2], [3, 4, 5]] : tensor<?x3x3x3x3x4xi8> into tensor<?x3x3x36xi8>
func.func @im2col(%x: tensor<?x7x7x4xi8>) -> tensor<?x3x3x36xi8> {
  %0 = kiln.im2col %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : tensor<?x7x7x4xi8> -> tensor<?x3x3x36xi8>
  return %0 : tensor<?x3x3x36xi8>
}
