// RUN: kiln-opt %s -split-input-file -kiln-split-shared-fills=empties=1 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-split-shared-fills | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that every op writing into a shared (CSE'd) empty gets a
// destination of its own, with or without `empties`: here bufferization
// would otherwise write the epilogue over the matmul's operand, and a
// kernel doing both could not; and one-shot bufferization's analysis of
// many writers of one empty grows with their square.
// CHECK-LABEL: func.func @epilogue_over_operand
// CHECK-COUNT-2: tensor.empty() : tensor<16x16xf32>
// CHECK: %[[X:.*]] = linalg.generic {{.*}} outs(%[[E1:.*]] : tensor<16x16xf32>)
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[X]], %{{.*}}) outs
// CHECK: linalg.generic {{.*}} ins(%[[M]] : tensor<16x16xf32>) outs(%[[E2:.*]] : tensor<16x16xf32>)
// OFF-LABEL: func.func @epilogue_over_operand
// OFF-COUNT-2: tensor.empty() : tensor<16x16xf32>
// OFF-NOT: tensor.empty() : tensor<16x16xf32>
func.func @epilogue_over_operand(%a: tensor<16x16xf32>, %w: tensor<16x16xf32>,
                                 %z: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %m = linalg.matmul ins(%x, %w : tensor<16x16xf32>, tensor<16x16xf32>)
      outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Tests that destinations sharing an empty with nothing the matmul reads
// are split too (the memory plan places the buffers by liveness, so the
// arena does not grow: GPT's shrank).
// CHECK-LABEL: func.func @unrelated
// OFF-LABEL: func.func @unrelated
// CHECK-COUNT-2: tensor.empty() : tensor<16x16xf32>
// CHECK-NOT: tensor.empty() : tensor<16x16xf32>
// OFF-COUNT-2: tensor.empty() : tensor<16x16xf32>
// OFF-NOT: tensor.empty() : tensor<16x16xf32>
func.func @unrelated(%a: tensor<16x16xf32>, %w: tensor<16x16xf32>,
                     %z: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %m = linalg.matmul ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>)
      outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  return %x, %y : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Tests a destination reached through a reshape of the shared empty (CSE
// merges the collapse_shapes too), as MobileNet's depthwise blocks have it:
// the ReLU6 after the depthwise convolution was written over the image the
// convolution reads through its padding, which kept it a kernel of its own.
// The split destination gets the empty and the reshape cloned before it.
// CHECK-LABEL: func.func @through_reshape
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x8x8xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[E]]
// CHECK: %[[X:.*]] = linalg.generic {{.*}} outs(%[[C]] : tensor<4x8x8xf32>)
// CHECK: %[[D:.*]] = linalg.depthwise_conv_2d_nchw_chw
// CHECK: %[[DC:.*]] = tensor.collapse_shape %[[D]]
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<1x4x8x8xf32>
// CHECK: %[[C2:.*]] = tensor.collapse_shape %[[E2]] {{\[}}[0, 1], [2], [3]]
// CHECK: linalg.generic {{.*}} ins(%[[DC]] : tensor<4x8x8xf32>) outs(%[[C2]] : tensor<4x8x8xf32>)
// Without `empties`, only direct destinations are split.
// OFF-LABEL: func.func @through_reshape
// OFF-COUNT-1: tensor.empty() : tensor<1x4x8x8xf32>
// OFF-NOT: tensor.empty() : tensor<1x4x8x8xf32>
func.func @through_reshape(%a: tensor<4x8x8xf32>, %w: tensor<4x3x3xf32>,
                           %z: tensor<1x4x8x8xf32>) -> tensor<4x8x8xf32> {
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %c = tensor.collapse_shape %e [[0, 1], [2], [3]] : tensor<1x4x8x8xf32> into tensor<4x8x8xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<4x8x8xf32>) outs(%c : tensor<4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1] high[0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x8x8xf32> to tensor<4x10x10xf32>
  %pe = tensor.expand_shape %p [[0, 1], [2], [3]] output_shape [1, 4, 10, 10]
      : tensor<4x10x10xf32> into tensor<1x4x10x10xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pe, %w : tensor<1x4x10x10xf32>, tensor<4x3x3xf32>) outs(%z : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %dc = tensor.collapse_shape %d [[0, 1], [2], [3]] : tensor<1x4x8x8xf32> into tensor<4x8x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dc : tensor<4x8x8xf32>) outs(%c : tensor<4x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  return %y : tensor<4x8x8xf32>
}
