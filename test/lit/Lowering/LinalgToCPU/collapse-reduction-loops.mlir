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

// Tests that a 7x7 image's mean (49 terms: a classifier's head, the SiLU
// before it fused in) and a mean over an image of run-time height and
// width collapse too: rows of a vector or more, and rows of a run-time
// length, are summed in vectors alike (a dynamic artifact equals the
// static ones bit for bit).
// CHECK-LABEL: func.func @head_and_dynamic
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<1x64x7x7xf32> into tensor<1x64x49xf32>
// CHECK: math.exp
// CHECK: tensor.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : tensor<1x8x?x?xf32> into tensor<1x8x?xf32>
#x = affine_map<(n, c, h, w) -> (n, c, h, w)>
#s = affine_map<(n, c, h, w) -> (n, c)>
func.func @head_and_dynamic(%x: tensor<1x64x7x7xf32>, %init: tensor<1x64xf32>, %d: tensor<1x8x?x?xf32>,
                            %dinit: tensor<1x8xf32>) -> (tensor<1x64xf32>, tensor<1x8xf32>) {
  %r = linalg.generic {indexing_maps = [#x, #s], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<1x64x7x7xf32>) outs(%init : tensor<1x64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d1 = arith.addf %e, %one : f32
    %sg = arith.divf %a, %d1 : f32
    %y = arith.addf %acc, %sg : f32
    linalg.yield %y : f32
  } -> tensor<1x64xf32>
  %q = linalg.generic {indexing_maps = [#x, #s], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%d : tensor<1x8x?x?xf32>) outs(%dinit : tensor<1x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<1x8xf32>
  return %r, %q : tensor<1x64xf32>, tensor<1x8xf32>
}

// -----

// Tests what stays: short rows (3 x 3, under a vector), a batch norm's sums over (n, h, w)
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
func.func @left_alone(%small: tensor<2x32x3x3xf32>, %s0: tensor<2x32xf32>, %x: tensor<2x32x16x16xf32>,
                      %c0: tensor<32xf32>, %t0: tensor<f32>) -> (tensor<2x32xf32>, tensor<32xf32>, tensor<f32>) {
  %a = linalg.generic {indexing_maps = [#x2, #s2], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%small : tensor<2x32x3x3xf32>) outs(%s0 : tensor<2x32xf32>) {
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

// -----

// Tests one image's pixel sum (an SE block's mean at batch 1, 96 channels
// at 56x56): split by groups of rows, 2 rows of 56 (112 pixels, at least
// 64) in each of 28 groups. The first stage is marked for the threads to
// split by its groups (as the convolution that wrote the image split its
// rows); the second sums the 28 partials into the original init.
// CHECK-LABEL: func.func @one_image
// CHECK: %[[E:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3]] output_shape [96, 28, 2, 56] : tensor<96x56x56xf32> into tensor<96x28x2x56xf32>
// CHECK: %[[G:.*]] = tensor.collapse_shape %[[E]] {{\[}}[0], [1], [2, 3]] : tensor<96x28x2x56xf32> into tensor<96x28x112xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<28x96xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[$GROUPS:.*]], #[[$PARTIAL:.*]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[G]] : tensor<96x28x112xf32>) outs(%[[Z]] : tensor<28x96xf32>) attrs = {{.*}}kiln.spread
// CHECK: arith.addf
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<28x96xf32>) outs(%arg1 : tensor<96xf32>)
// CHECK: return %[[S]]
#x3 = affine_map<(c, h, w) -> (c, h, w)>
#s3 = affine_map<(c, h, w) -> (c)>
func.func @one_image(%x: tensor<96x56x56xf32>, %init: tensor<96xf32>) -> tensor<96xf32> {
  %r = linalg.generic {indexing_maps = [#x3, #s3], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<96x56x56xf32>) outs(%init : tensor<96xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<96xf32>
  return %r : tensor<96xf32>
}

// -----

// Tests one image's sums left whole: a small image (32 x 16 x 16), rows
// that would make fewer than 4 groups (14 rows of 14: 7 rows a group), and
// a maximum (no partial sums). The first two are collapsed as above.
// CHECK-LABEL: func.func @one_image_whole
// CHECK-NOT: kiln.spread
// CHECK: ins(%{{.*}} : tensor<32x256xf32>)
// CHECK: ins(%{{.*}} : tensor<480x196xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: kiln.spread
#x4 = affine_map<(c, h, w) -> (c, h, w)>
#s4 = affine_map<(c, h, w) -> (c)>
func.func @one_image_whole(%small: tensor<32x16x16xf32>, %s0: tensor<32xf32>, %x: tensor<480x14x14xf32>,
                           %s1: tensor<480xf32>, %big: tensor<96x56x56xf32>, %s2: tensor<96xf32>)
    -> (tensor<32xf32>, tensor<480xf32>, tensor<96xf32>) {
  %a = linalg.generic {indexing_maps = [#x4, #s4], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%small : tensor<32x16x16xf32>) outs(%s0 : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.addf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<32xf32>
  %b = linalg.generic {indexing_maps = [#x4, #s4], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<480x14x14xf32>) outs(%s1 : tensor<480xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.addf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<480xf32>
  %c = linalg.generic {indexing_maps = [#x4, #s4], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%big : tensor<96x56x56xf32>) outs(%s2 : tensor<96xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %y = arith.maximumf %acc, %v : f32
    linalg.yield %y : f32
  } -> tensor<96xf32>
  return %a, %b, %c : tensor<32xf32>, tensor<480xf32>, tensor<96xf32>
}
