// RUN: kiln-opt %s -split-input-file -kiln-collapse-reduction-loops | FileCheck %s

// Tests that a mean's sum over height and width (an SE block's, 16 x 16 per
// channel) becomes one reduction over the collapsed 256.
// CHECK-LABEL: func.func @spatial_sum
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<2x32x16x16xf32> into tensor<2x32x256xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<2x32x256xf32>)
#x = affine_map<(n, c, h, w) -> (n, c, h, w)>
#s = affine_map<(n, c, h, w) -> (n, c)>
func.func @spatial_sum(%x: tensor<2x32x16x16xf32>, %init: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %r = linalg.generic {indexing_maps = [#x, #s], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x32x16x16xf32>) outs(%init : tensor<2x32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

// Tests what stays: short rows (4 x 4), a batch norm's sums over (n, h, w)
// around the channels (not the input's last dimensions), and a whole
// tensor's sum.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK: iterator_types = ["reduction", "reduction", "reduction", "reduction"]
#x2 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#s2 = affine_map<(n, c, h, w) -> (n, c)>
#bn = affine_map<(n, c, h, w) -> (c)>
#all = affine_map<(n, c, h, w) -> ()>
func.func @left_alone(%small: tensor<2x32x4x4xf32>, %s0: tensor<2x32xf32>, %x: tensor<2x32x16x16xf32>,
                      %c0: tensor<32xf32>, %t0: tensor<f32>) -> (tensor<2x32xf32>, tensor<32xf32>, tensor<f32>) {
  %a = linalg.generic {indexing_maps = [#x2, #s2], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%small : tensor<2x32x4x4xf32>) outs(%s0 : tensor<2x32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.addf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<2x32xf32>
  %b = linalg.generic {indexing_maps = [#x2, #bn], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<2x32x16x16xf32>) outs(%c0 : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.addf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<32xf32>
  %c = linalg.generic {indexing_maps = [#x2, #all], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%x : tensor<2x32x16x16xf32>) outs(%t0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.addf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %a, %b, %c : tensor<2x32xf32>, tensor<32xf32>, tensor<f32>
}
